// Command metricnames prints the name of every metric the manager's
// registry holds at start, one a line, sorted: the operator's own
// (internal/metrics) and those controller-runtime and client-go register
// (controller_runtime_*, workqueue_*, rest_client_*, leader_election_*,
// certwatcher_*, process_*, go_*). It imports the packages that register
// metrics when loaded: internal/metrics, where every metric of the
// operator's own is declared, and the controller-runtime and webhook
// packages the manager serves with (not the manager's wiring,
// cmd/manager/app, which is a layer above hack/ and registers none). The
// monitoring checks (test/monitoring) compare the alert rules' and the
// dashboard's queries with this list.
package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	_ "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	_ "sigs.k8s.io/controller-runtime/pkg/webhook"

	_ "github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	_ "github.com/sidecarset-operator/sidecarset-operator/webhooks"
)

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func main() {
	registry, ok := crmetrics.Registry.(prometheus.Collector)
	if !ok {
		fmt.Fprintln(os.Stderr, "controller-runtime's registry cannot describe its metrics")
		os.Exit(1)
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		registry.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		fmt.Println(n)
	}
}
