package layers

import (
	"os/exec"
	"strings"
	"testing"
)

// serverOnly are the packages only the manager may link: the webhook
// server and the manager of controller-runtime, the operator's wiring, its
// metrics (linking them registers them), its reconciler, and the webhooks'
// handlers and runnables. A path ending in "/" names every package under
// it.
var serverOnly = []string{
	"sigs.k8s.io/controller-runtime",
	"sigs.k8s.io/controller-runtime/pkg/builder",
	"sigs.k8s.io/controller-runtime/pkg/manager",
	"sigs.k8s.io/controller-runtime/pkg/webhook",
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission",
	module + "/internal/metrics",
	module + "/internal/cachetransform",
	module + "/cmd/manager/",
	module + "/controllers",
	module + "/controllers/detect",
	module + "/webhooks",
	module + "/webhooks/accessreview",
	module + "/webhooks/authoringpolicy",
	module + "/webhooks/certs",
	module + "/webhooks/crdconversion",
	module + "/webhooks/crdwatch",
	module + "/webhooks/failureevents",
	module + "/webhooks/podscope",
	module + "/webhooks/webhookserver",
	module + "/webhooks/whitelistwatch",
}

// TestToolsLinkNoServer: the kubectl plugin and the bundle's checks link
// the pod webhook's decision, the pure cores and the names the webhooks
// are known by, and none of the manager's server: not its webhook server,
// its runnables, or its metrics.
func TestToolsLinkNoServer(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"cmd/kubectl-sidecarset", "hack/bundle/validate"} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", module+"/"+tool).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tool, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 30 {
			t.Fatalf("%s: only %d dependencies listed: the listing is not the tool's", tool, len(deps))
		}
		for _, dep := range deps {
			for _, banned := range serverOnly {
				if dep == banned || (strings.HasSuffix(banned, "/") && strings.HasPrefix(dep, banned)) {
					t.Errorf("%s links %s", tool, dep)
				}
			}
		}
	}
}
