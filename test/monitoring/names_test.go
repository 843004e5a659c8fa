package monitoring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// registeredNames are the metric names of the manager's registry, as
// hack/metricnames prints them (run in the main module, which this module
// does not import: it would bring the manager's dependencies here).
var registeredNames = sync.OnceValues(func() (map[string]bool, error) {
	cmd := exec.Command("go", "run", "./hack/metricnames")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go run ./hack/metricnames: %w", err)
	}
	names := map[string]bool{}
	for n := range strings.FieldsSeq(string(out)) {
		names[n] = true
	}
	return names, nil
})

// promQL is Prometheus' PromQL parser with its default options.
var promQL = parser.NewParser(parser.Options{})

// generated are the series Prometheus writes itself for every target.
var generated = map[string]bool{"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true}

// exists reports whether a query may name the metric: the manager's registry
// holds it, or a histogram or summary of it (name_bucket, _sum, _count), or
// Prometheus generates it.
func exists(registered map[string]bool, name string) bool {
	if registered[name] || generated[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered[base] {
			return true
		}
	}
	return false
}

// selectedNames parses a PromQL expression and returns the metric names its
// selectors name. A selector without a name is an error: every query of
// ours names its metric.
func selectedNames(expr string) ([]string, error) {
	e, err := promQL.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var missing error
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				missing = fmt.Errorf("the selector %s names no metric", vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	if missing != nil {
		return nil, missing
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// checkQuery parses expr and fails t for each metric it names that the
// manager does not register.
func checkQuery(t *testing.T, where, expr string) {
	t.Helper()
	registered, err := registeredNames()
	if err != nil {
		t.Fatal(err)
	}
	names, err := selectedNames(expr)
	if err != nil {
		t.Errorf("%s: %q: %v", where, expr, err)
		return
	}
	if len(names) == 0 {
		t.Errorf("%s: %q names no metric", where, expr)
	}
	for _, n := range names {
		if !exists(registered, n) {
			t.Errorf("%s: %q names %s, which the manager does not register", where, expr, n)
		}
	}
}

// grafanaVariable matches a Grafana variable: $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// withoutGrafanaVariables replaces the dashboard's variables with values
// PromQL parses: a duration for Grafana's interval and range variables, a
// name for the others (they stand in label values).
func withoutGrafanaVariables(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		name := grafanaVariable.FindStringSubmatch(v)[1]
		if strings.HasPrefix(name, "__") {
			return "5m"
		}
		return "value"
	})
}

// TestHelpers_RejectUnknownMetric: the check catches a misspelt metric and
// a query that does not parse.
func TestHelpers_RejectUnknownMetric(t *testing.T) {
	t.Parallel()
	registered, err := registeredNames()
	if err != nil {
		t.Fatal(err)
	}
	names, err := selectedNames(`sum(rate(sidecarset_pod_denial_total[5m])) / sum(up{job="x"})`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"sidecarset_pod_denial_total", "up"}) {
		t.Errorf("names = %v", names)
	}
	if exists(registered, "sidecarset_pod_denial_total") {
		t.Error("a misspelt metric is taken as registered")
	}
	for _, n := range []string{"sidecarset_pod_denials_total", "sidecarset_pod_admission_duration_seconds_bucket",
		"process_cpu_seconds_total", "controller_runtime_webhook_latency_seconds_bucket", "leader_election_master_status"} {
		if !exists(registered, n) {
			t.Errorf("%s is not taken as registered", n)
		}
	}
	if _, err := selectedNames(`sum(rate(x[5m])`); err == nil {
		t.Error("an unbalanced parenthesis parses")
	}
	if got := withoutGrafanaVariables(`rate(x{a=~"$sidecarset", job="${job}"}[$__rate_interval])`); got != `rate(x{a=~"value", job="value"}[5m])` {
		t.Errorf("variables replaced: %s", got)
	}
	if _, err := filepath.Abs(root); err != nil {
		t.Fatal(err)
	}
}
