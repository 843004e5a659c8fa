package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/explain"
	"github.com/sidecarset-operator/sidecarset-operator/test/golden"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// goldenDir holds the offline injection cases: <case>.yaml is a manifest
// and <case>.yaml.injected what inject prints for it, with the SidecarSets
// of testdata/sidecarsets.yaml. REFRESH_GOLDEN=true rewrites the expected
// files.
const goldenDir = "testdata/inject"

// offline are the flags of every test: SidecarSets from the test file, a
// fixed time, no kubeconfig.
var offline = []string{"--sidecarsets-from", "testdata/sidecarsets.yaml", "--timestamp", "2026-01-02T03:04:05Z",
	"--kubeconfig", "testdata/no-kubeconfig", "-n", "default"}

// run runs the plugin and returns its standard output and error.
func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	// The command, then the common flags, then the test's (which win).
	all := append(append(slices.Clone(args[:1]), offline...), args[1:]...)
	cmd.SetArgs(all)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func TestInject_Golden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no cases in %s: %v", goldenDir, err)
	}
	expected, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml.injected"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range expected {
		if _, err := os.Stat(strings.TrimSuffix(e, ".injected")); err != nil {
			t.Errorf("stale golden file %s: its input is gone", e)
		}
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			t.Parallel()
			got, stderr, err := run(t, "", "inject", "-f", in)
			if err != nil {
				t.Fatalf("inject: %v\n%s", err, stderr)
			}
			golden.Compare(t, in+".injected", []byte(got))
			again, _, err := run(t, got, "inject", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			if again != got {
				t.Errorf("injecting the output again changes it:\n%s", cmp.Diff(got, again))
			}
		})
	}
}

func TestExplain_Offline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		manifest string
		want     map[string]string // SidecarSet -> outcome
		result   string
	}{
		{"a pod of a selected namespace gets the proxy and the log shipper", "testdata/inject/pod.yaml",
			map[string]string{"proxy": explain.OutcomeInjected, "logging": explain.OutcomeInjected, "helper": inject.ReasonPodNotSelected},
			"admitted with the sidecars of logging, proxy"},
		{"the proxy's namespaceSelector leaves out the default namespace", "testdata/inject/statefulset.yaml",
			map[string]string{"proxy": inject.ReasonNamespaceNotSelected, "logging": explain.OutcomeInjected, "helper": inject.ReasonPodNotSelected},
			"admitted with the sidecars of logging"},
		{"a pinned customVersion is resolved from the file's ControllerRevision", "testdata/inject/job.yaml",
			map[string]string{"proxy": inject.ReasonNamespaceNotSelected, "logging": inject.ReasonPodNotSelected, "helper": explain.OutcomeInjected},
			"admitted with the sidecars of helper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, err := run(t, "", "explain", "-f", tc.manifest, "-o", "json")
			if err != nil {
				t.Fatalf("explain: %v\n%s", err, stderr)
			}
			var r explain.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := map[string]string{}
			for _, v := range r.SidecarSets {
				got[v.Name] = v.Outcome
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if r.Result != tc.result {
				t.Errorf("result %q, want %q", r.Result, tc.result)
			}
		})
	}
}

func TestExplain_Text(t *testing.T) {
	t.Parallel()
	out, stderr, err := run(t, "", "explain", "-f", "testdata/inject/job.yaml")
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, stderr)
	}
	golden.Compare(t, "testdata/explain-job.txt", []byte(out))
}

func TestCommands_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"explain needs a pod or a manifest", []string{"explain"}, "give a pod (pod/NAME) or a manifest (-f FILE)"},
		{"explain takes pods only", []string{"explain", "deployment/web"}, `"deployment/web": explain takes a pod, as pod/NAME or pod NAME`},
		{"explain has no wide table", []string{"explain", "-f", "testdata/inject/pod.yaml", "-o", "wide"}, `--output "wide": want one of json, yaml, `},
		{"inject needs a manifest", []string{"inject"}, "give the manifests to inject with -f"},
		{"a bad timestamp is refused", []string{"inject", "-f", "testdata/inject/pod.yaml", "--timestamp", "yesterday"}, `--timestamp: parsing time "yesterday"`},
		{"reading a pod needs a cluster", []string{"explain", "pod/web"}, "reading the kubeconfig: "},
		{"SidecarSets are not read from standard input", []string{"inject", "-f", "testdata/inject/pod.yaml", "--sidecarsets-from", "-"},
			"--sidecarsets-from: standard input cannot be read here"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := run(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
