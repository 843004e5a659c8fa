package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/kubectl-sidecarset/explain"
)

// TestInject_Output: inject takes kubectl's -o (it took none: "unknown
// shorthand flag: 'o'"): json prints the injected objects, a List for
// several; name their names; yaml is the default manifest.
func TestInject_Output(t *testing.T) {
	t.Parallel()
	manifest, _, err := run(t, "", "inject", "-f", "testdata/inject/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "", "inject", "-f", "testdata/inject/pod.yaml", "-o", "json")
	if err != nil {
		t.Fatalf("inject -o json: %v\n%s", err, stderr)
	}
	var fromJSON, fromYAML unstructured.Unstructured
	if err := json.Unmarshal([]byte(out), &fromJSON.Object); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := yaml.Unmarshal([]byte(manifest), &fromYAML.Object); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromYAML.Object, fromJSON.Object); diff != "" {
		t.Errorf("-o json differs from the manifest (-yaml +json):\n%s", diff)
	}

	if out, _, err = run(t, "", "inject", "-f", "testdata/inject/pod.yaml", "-o", "yaml"); err != nil || out != manifest {
		t.Errorf("-o yaml: %v, want the default manifest:\n%s", err, cmp.Diff(manifest, out))
	}
	if out, _, err = run(t, "", "inject", "-f", "testdata/inject/pod.yaml", "-f", "testdata/inject/job.yaml", "-o", "name"); err != nil ||
		out != "pod/web\njob.batch/migrate\n" {
		t.Errorf("-o name: %q, %v", out, err)
	}
	out, _, err = run(t, "", "inject", "-f", "testdata/inject/pod.yaml", "-f", "testdata/inject/job.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Errorf("-o json of two objects: want a List of 2, got %v\n%s", err, out)
	}
}

// TestExplain_Output: explain takes yaml, jsonpath and go-template, as
// kubectl (it took text and json).
func TestExplain_Output(t *testing.T) {
	t.Parallel()
	out, _, err := run(t, "", "explain", "-f", "testdata/inject/pod.yaml", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var r explain.Report
	if err := yaml.Unmarshal([]byte(out), &r); err != nil || r.Result != "admitted with the sidecars of logging, proxy" {
		t.Errorf("-o yaml: result %q, %v\n%s", r.Result, err, out)
	}
	for _, args := range [][]string{{"-o", "jsonpath={.result}"}, {"-o", "go-template={{.result}}"}, {"--template", "{{.result}}"}} {
		out, _, err := run(t, "", append([]string{"explain", "-f", "testdata/inject/pod.yaml"}, args...)...)
		if err != nil || out != "admitted with the sidecars of logging, proxy" {
			t.Errorf("%v: %q, %v", args, out, err)
		}
	}
	// Several pods: a list, which templates read as .items.
	out, _, err = run(t, "", "explain", "-f", "testdata/inject/pod.yaml", "-f", "testdata/inject/job.yaml", "-o", "jsonpath={.items[*].result}")
	if err != nil || !strings.HasPrefix(out, "admitted with the sidecars of logging, proxy admitted") {
		t.Errorf("jsonpath over two reports: %q, %v", out, err)
	}
}

// TestRollout_Output: status prints one document with --watch=false (it
// printed one JSON line per change), history lists with -o name and
// jsonpath, plan has a wide table.
func TestRollout_Output(t *testing.T) {
	t.Parallel()
	s := rolledOut("Paused")
	o := clusterOptions(s)
	out, _, err := runWith(t, o, "rollout", "status", "agent", "--watch=false", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var st RolloutStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.State != StateProgressing || !strings.Contains(out, "\n    \"state\"") {
		t.Errorf("status -o json: %+v, %v, want one indented document\n%s", st, err, out)
	}
	if out, _, err = runWith(t, o, "rollout", "status", "agent", "--watch=false", "-o", "jsonpath={.state}/{.reason}"); err != nil ||
		out != "Progressing/Paused" {
		t.Errorf("status -o jsonpath: %q, %v", out, err)
	}

	p, live := planCluster(t)
	revs, err := p.revisionsOf(t.Context(), p.cl, live)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runWith(t, p, "rollout", "history", "log-agent", "-o", "name")
	if want := "controllerrevision.apps/" + revs[0].Name + "\ncontrollerrevision.apps/" + revs[1].Name + "\n"; err != nil || out != want {
		t.Errorf("history -o name: %q, %v, want %q", out, err, want)
	}
	out, _, err = runWith(t, p, "rollout", "history", "log-agent", "-o", "jsonpath={.items[*].revision}")
	if err != nil || out != "1 2" {
		t.Errorf("history -o jsonpath: %q, %v", out, err)
	}
	out, _, err = runWith(t, p, "plan", "log-agent", "-o", "wide")
	if err != nil || !strings.Contains(out, "DETAIL") || !strings.Contains(out, "BLOCKER\n") {
		t.Errorf("plan -o wide: want a BLOCKER column, %v\n%s", err, out)
	}
	text, _, err := runWith(t, p, "plan", "log-agent")
	if err != nil || strings.Contains(text, "BLOCKER") {
		t.Errorf("plan: want no BLOCKER column, %v\n%s", err, text)
	}
	if out, code, err := runWith(t, p, "plan", "log-agent", "-f", "a.yaml", "-f", "b.yaml"); err == nil || code != ExitUsage {
		t.Errorf("plan with two -f: %q, %v, want a usage error", out, err)
	}
}
