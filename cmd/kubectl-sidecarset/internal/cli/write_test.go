package cli

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// patches records the options of the patches a fake cluster receives.
type patches struct {
	mu   sync.Mutex
	opts []client.PatchOptions
}

// writeCluster is a cluster of the SidecarSet agent (paused as given, with
// two revisions) whose patches are recorded.
func writeCluster(t *testing.T, paused bool) (*options, *patches) {
	t.Helper()
	v1, v2 := agent("agent:1").Obj(), agent("agent:2").Paused(paused).Obj()
	v1.UID, v2.UID = "uid", "uid"
	r1, r2 := recorded(t, v1, 1, ""), recorded(t, v2, 2, "")
	v2.Status.LatestRevision = r2.Name
	rec := &patches{}
	o := clusterOptions()
	o.cl = fake.NewClientBuilder().WithScheme(scheme).WithObjects(v2, &r1, &r2).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			po := client.PatchOptions{}
			po.ApplyOptions(opts)
			rec.mu.Lock()
			rec.opts = append(rec.opts, po)
			rec.mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	return o, rec
}

// TestWrites_DryRunAndFieldManager: pause, resume and undo take kubectl's
// --dry-run (pause and resume took none) and --field-manager: client sends
// nothing, server sends the patch with dryRun=All, and every patch records
// the field manager, kubectl-sidecarset unless given.
func TestWrites_DryRunAndFieldManager(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		paused    bool
		args      []string
		out       string
		sent      []client.PatchOptions
		nowPaused bool
	}{
		{"pause", false, []string{"rollout", "pause", "agent"}, "sidecarset.apps.kruise.io/agent paused\n",
			[]client.PatchOptions{{FieldManager: "kubectl-sidecarset"}}, true},
		{"pause, client dry run", false, []string{"rollout", "pause", "agent", "--dry-run=client"},
			"sidecarset.apps.kruise.io/agent paused (dry run: client)\n", nil, false},
		{"pause, --dry-run alone is client", false, []string{"rollout", "pause", "agent", "--dry-run"},
			"sidecarset.apps.kruise.io/agent paused (dry run: client)\n", nil, false},
		{"resume, server dry run", true, []string{"rollout", "resume", "agent", "--dry-run=server", "--field-manager", "oncall"},
			"sidecarset.apps.kruise.io/agent resumed (dry run: server)\n",
			[]client.PatchOptions{{FieldManager: "oncall", DryRun: []string{"All"}}}, true},
		{"undo, server dry run", false, []string{"rollout", "undo", "agent", "--dry-run=server", "-o", "name"},
			"sidecarset.apps.kruise.io/agent\n", []client.PatchOptions{{FieldManager: "kubectl-sidecarset", DryRun: []string{"All"}}}, false},
		{"undo", false, []string{"rollout", "undo", "agent", "--field-manager=argo"},
			"sidecarset.apps.kruise.io/agent rolled back to revision 1 (",
			[]client.PatchOptions{{FieldManager: "argo"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, rec := writeCluster(t, tc.paused)
			out, code, err := runWith(t, o, tc.args...)
			if err != nil || code != ExitOK {
				t.Fatalf("%v (exit %d)", err, code)
			}
			// The line of undo goes on with the revision's name.
			if !strings.HasPrefix(out, tc.out) || strings.Count(out, "\n") != 1 {
				t.Errorf("output %q, want one line starting %q", out, tc.out)
			}
			if diff := cmp.Diff(tc.sent, rec.opts); diff != "" {
				t.Errorf("patches sent (-want +got):\n%s", diff)
			}
			s := &appsv1beta1.SidecarSet{}
			if err := o.cl.Get(t.Context(), types.NamespacedName{Name: "agent"}, s); err != nil {
				t.Fatal(err)
			}
			if s.Spec.UpdateStrategy.Paused != tc.nowPaused {
				t.Errorf("stored paused %v, want %v", s.Spec.UpdateStrategy.Paused, tc.nowPaused)
			}
		})
	}
}

// TestPause_Selector: pause -l pauses every SidecarSet the selector
// selects (the rollout commands took one NAME); one already paused is an
// error (exit 1) that does not stop the others.
func TestPause_Selector(t *testing.T) {
	t.Parallel()
	team := func(name, team string, paused bool) *appsv1beta1.SidecarSet {
		s := agent("agent:1").Paused(paused).Obj()
		s.Name, s.Labels = name, map[string]string{"team": team}
		return s
	}
	o := clusterOptions(team("a", "payments", false), team("b", "payments", true), team("c", "payments", false), team("d", "search", false))
	out, code, err := runWith(t, o, "rollout", "pause", "-l", "team=payments")
	if code != ExitFailed || err == nil || !strings.Contains(err.Error(), `"b" is already paused`) {
		t.Errorf("exit %d, error %v: want 1, b already paused", code, err)
	}
	if want := "sidecarset.apps.kruise.io/a paused\nsidecarset.apps.kruise.io/c paused\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	for name, want := range map[string]bool{"a": true, "b": true, "c": true, "d": false} {
		s := &appsv1beta1.SidecarSet{}
		if err := o.cl.Get(t.Context(), types.NamespacedName{Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if s.Spec.UpdateStrategy.Paused != want {
			t.Errorf("%s paused %v, want %v", name, s.Spec.UpdateStrategy.Paused, want)
		}
	}

	out, code, err = runWith(t, o, "rollout", "resume", "-l", "team=payments", "--dry-run=client", "-o", "yaml")
	if code != ExitOK || strings.Count(out, "\n---\n") != 2 || strings.Count(out, "kind: SidecarSet\n") != 3 || strings.Contains(out, "paused: true") {
		t.Errorf("resume -l -o yaml: exit %d, %v, want three documents\n%s", code, err, out)
	}
	for _, args := range [][]string{{"rollout", "pause", "a", "-l", "team=payments"}, {"rollout", "pause", "-l", "team in (payments"}} {
		if _, code, err := runWith(t, o, args...); code != ExitUsage {
			t.Errorf("%v: exit %d (%v), want 2", args, code, err)
		}
	}
	if _, code, err := runWith(t, o, "rollout", "pause", "-l", "team=none"); code != ExitFailed || err == nil {
		t.Errorf("a selector that selects nothing: exit %d (%v), want 1", code, err)
	}
}
