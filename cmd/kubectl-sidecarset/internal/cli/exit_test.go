package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// runWith runs the plugin's root command over o (its client, if set) and
// returns the standard output, the error and its exit code.
func runWith(t *testing.T, o *options, args ...string) (string, int, error) {
	t.Helper()
	var out, errOut strings.Builder
	cmd := newRootCommand(o, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), ExitCode(err), err
}

// clusterOptions are the options of a cluster of the SidecarSets given
// (a fake client).
func clusterOptions(sets ...*appsv1beta1.SidecarSet) *options {
	o := &options{sidecarSetsFrom: fromCluster, operatorNamespace: "kruise-system", kubeconfig: "testdata/no-kubeconfig", timestamp: "now", coin: 0.5}
	b := fakeCluster()
	for _, s := range sets {
		b = b.WithObjects(s)
	}
	o.cl = b.Build()
	return o
}

// fakeCluster builds a fake client that selects SidecarSets by
// metadata.name, as the API server does (rollout status watches one).
func fakeCluster() *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&appsv1beta1.SidecarSet{}, "metadata.name",
		func(o client.Object) []string { return []string{o.GetName()} })
}

// rolledOut is the SidecarSet agent whose controller reports the
// Progressing reason.
func rolledOut(reason string) *appsv1beta1.SidecarSet {
	s := agent("agent:2").Obj()
	s.Generation = 2
	s.Status = appsv1beta1.SidecarSetStatus{ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 1, UpdatedReadyPods: 1, Conditions: []metav1.Condition{
		{Type: appsv1beta1.SidecarSetConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: "m", ObservedGeneration: 2},
	}}
	return s
}

// notUpdate is the SidecarSet agent with updateStrategy.type NotUpdate.
func notUpdate() *appsv1beta1.SidecarSet {
	s := agent("agent:1").Obj()
	s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	return s
}

// kubeconfigOf writes a kubeconfig of an API server at url.
func kubeconfigOf(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"+
		"contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\ncurrent-context: c\n", url)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// statusServer is an API server that answers every request with code.
func statusServer(t *testing.T, code int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, http.StatusText(code), code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestExitCode: 1 for the operation's own failure, 2 for the command line,
// 3 for the API server out of reach or refusing the user. An unreachable
// API server, a typo and a failed rollout all exited 1.
func TestExitCode(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name string
		o    *options
		args []string
		want int
		msg  string
	}{
		{"success", clusterOptions(rolledOut(appsv1beta1.ReasonRolloutComplete)), []string{"rollout", "status", "agent"}, ExitOK, ""},

		{"a rollout past its progress deadline failed", clusterOptions(rolledOut(appsv1beta1.ReasonProgressDeadlineExceeded)),
			[]string{"rollout", "status", "agent"}, ExitFailed, `sidecarset "agent" exceeded its progress deadline`},
		{"a rollout over its failure budget failed", clusterOptions(rolledOut(appsv1beta1.ReasonFailureBudgetExceeded)),
			[]string{"rollout", "status", "agent"}, ExitFailed, `sidecarset "agent" paused itself`},
		{"a rollout not complete within --timeout", clusterOptions(rolledOut(appsv1beta1.ReasonPaused)),
			[]string{"rollout", "status", "agent", "--timeout", "50ms"}, ExitFailed, `timed out waiting for the rollout of sidecarset "agent"`},
		{"a SidecarSet without rollout (NotUpdate)", clusterOptions(notUpdate()),
			[]string{"rollout", "status", "agent"}, ExitFailed, "updateStrategy.type NotUpdate"},
		{"a SidecarSet that does not exist", clusterOptions(), []string{"rollout", "history", "agent"}, ExitFailed, "not found"},
		{"pausing a paused rollout", clusterOptions(agent("agent:1").Paused(true).Obj()), []string{"rollout", "pause", "agent"}, ExitFailed, "is already paused"},

		{"an unknown flag", clusterOptions(), []string{"rollout", "status", "agent", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{"an unknown shorthand", clusterOptions(), []string{"inject", "-x"}, ExitUsage, "unknown shorthand flag: 'x'"},
		{"an unknown command", clusterOptions(), []string{"explian"}, ExitUsage, `unknown command "explian"`},
		{"an unknown rollout command", clusterOptions(), []string{"rollout", "statsu", "agent"}, ExitUsage, `did you mean "status"?`},
		{"a missing argument", clusterOptions(), []string{"rollout", "undo"}, ExitUsage, "accepts 1 arg(s), received 0"},
		{"a wrong argument", clusterOptions(), []string{"rollout", "pause", "deployment/web"}, ExitUsage, "want a SidecarSet"},
		{"a wrong -o", clusterOptions(), []string{"plan", "agent", "-o", "table"}, ExitUsage, `--output "table": want one of wide, json, yaml`},
		{"a wrong --dry-run", clusterOptions(), []string{"rollout", "resume", "agent", "--dry-run=always"}, ExitUsage, `--dry-run "always"`},
		{"a flag another command takes", clusterOptions(), []string{"plan", "agent", "--timestamp", "now"}, ExitUsage, "unknown flag: --timestamp"},
		{"a wrong --timestamp", clusterOptions(), []string{"inject", "-f", "testdata/inject/pod.yaml", "--sidecarsets-from", "testdata/sidecarsets.yaml",
			"--timestamp", "yesterday"}, ExitUsage, "--timestamp"},

		{"no kubeconfig", &options{kubeconfig: "testdata/no-kubeconfig"}, []string{"rollout", "status", "agent", "--kubeconfig", "testdata/no-kubeconfig"},
			ExitCluster, "reading the kubeconfig"},
		{"an API server out of reach", &options{}, []string{"rollout", "status", "agent", "--kubeconfig", kubeconfigOf(t, closed.URL)},
			ExitCluster, "connection refused"},
		{"401 Unauthorized", &options{}, []string{"rollout", "history", "agent", "--kubeconfig", kubeconfigOf(t, statusServer(t, http.StatusUnauthorized))},
			ExitCluster, "the server has asked for the client to provide credentials"},
		{"403 Forbidden", &options{}, []string{"plan", "agent", "--kubeconfig", kubeconfigOf(t, statusServer(t, http.StatusForbidden))},
			ExitCluster, "failed to get server groups"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, code, err := runWith(t, tc.o, tc.args...)
			if code != tc.want {
				t.Errorf("exit code %d, want %d (error: %v)", code, tc.want, err)
			}
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Errorf("error %v, want it to contain %q", err, tc.msg)
			}
		})
	}
}
