package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// agent is a SidecarSet whose sidecar runs the image, as stored (defaulted).
func agent(image string) *builder.SidecarSetWrapper {
	return builder.MakeSidecarSet("agent", "app", "web").Containers(builder.MakeContainer("agent", image).Command("sleep", "999d"))
}

// recorded returns the ControllerRevision number n recording the spec, as
// the controller records it (from the defaulted spec).
func recorded(t *testing.T, s *appsv1beta1.SidecarSet, n int64, customVersion string) appsv1.ControllerRevision {
	t.Helper()
	d := s.DeepCopy()
	d.Spec.CustomVersion = customVersion
	appsv1beta1.SetDefaults(d)
	r, err := revision.New(d, "kruise-system", n, new(int32(0)))
	if err != nil {
		t.Fatal(err)
	}
	r.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, int(n), 0, time.UTC))
	return *r
}

func TestPlanUndo_Restores(t *testing.T) {
	t.Parallel()
	v1, v2, v3 := agent("agent:1").Obj(), agent("agent:2").Obj(), agent("agent:invalid").Obj()
	v1.Spec.Volumes = []corev1.Volume{{Name: "logs"}}
	history := []appsv1.ControllerRevision{recorded(t, v1, 1, "one"), recorded(t, v2, 2, ""), recorded(t, v3, 3, "three")}
	// live is the SidecarSet on v3, paused by the controller, with a partition.
	live := func() *appsv1beta1.SidecarSet {
		s := agent("agent:invalid").Partition(intstr.FromInt32(90)).Paused(true).
			Annotation(appsv1beta1.FailureBudgetAnnotation, "3").Obj()
		s.Spec.CustomVersion = "three"
		s.Status.LatestRevision = history[2].Name
		appsv1beta1.SetDefaults(s)
		return s
	}
	type want struct {
		Target        string
		Restored      bool
		Image         string
		CustomVersion string
		Paused        bool
		Partition     *intstr.IntOrString
		Notes         []string
	}
	tests := []struct {
		name   string
		live   *appsv1beta1.SidecarSet
		number int64
		keep   bool
		want   want
	}{
		{
			name: "the previous revision is restored, and what would hold the rollback back is cleared and said",
			live: live(),
			want: want{Target: history[1].Name, Restored: true, Image: "agent:2", Notes: []string{
				`spec.customVersion: "three" -> "", the revision's`,
				"updateStrategy.paused: true -> false, or the rollback would not start",
				"updateStrategy.partition: 90 -> 0, or it would keep pods on the undone revision",
			}},
		},
		{
			name: "a revision given by number is restored, with its custom version and volumes",
			live: live(), number: 1,
			want: want{Target: history[0].Name, Restored: true, Image: "agent:1", CustomVersion: "one", Notes: []string{
				`spec.customVersion: "three" -> "one", the revision's`,
				"updateStrategy.paused: true -> false, or the rollback would not start",
				"updateStrategy.partition: 90 -> 0, or it would keep pods on the undone revision",
			}},
		},
		{
			name: "--keep-strategy leaves the pause and the partition",
			live: live(), keep: true,
			want: want{Target: history[1].Name, Restored: true, Image: "agent:2", Paused: true, Partition: new(intstr.FromInt32(90)),
				Notes: []string{`spec.customVersion: "three" -> "", the revision's`}},
		},
		{
			name: "the revision the SidecarSet runs is skipped",
			live: live(), number: 3,
			want: want{Target: history[2].Name},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := planUndo(tc.live, history, tc.number, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			got := want{Target: plan.target.Name, Restored: plan.restored != nil, Notes: plan.notes}
			if r := plan.restored; r != nil {
				got.Image, got.CustomVersion = r.Spec.Containers[0].Image, r.Spec.CustomVersion
				got.Paused, got.Partition = r.Spec.UpdateStrategy.Paused, r.Spec.UpdateStrategy.Partition
				if diff := cmp.Diff(tc.live.Annotations, r.Annotations); diff != "" {
					t.Errorf("annotations changed (-live +restored):\n%s", diff)
				}
				// What the controller will record is the target, byte for
				// byte: it reuses the revision instead of creating one.
				appsv1beta1.SetDefaults(r)
				data, err := revision.Encode(&r.Spec)
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != string(plan.target.Data.Raw) {
					t.Errorf("the restored spec records as\n%s\nnot as the revision\n%s", data, plan.target.Data.Raw)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("undo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanUndo_Errors(t *testing.T) {
	t.Parallel()
	v1 := agent("agent:1").Obj()
	appsv1beta1.SetDefaults(v1)
	only := []appsv1.ControllerRevision{recorded(t, v1, 1, "")}
	tests := []struct {
		name   string
		revs   []appsv1.ControllerRevision
		number int64
		want   string
	}{
		{"a history of the current spec only has nothing to roll back to", only, 0,
			`sidecarset "agent" has no revision to roll back to: its history holds only its current spec`},
		{"a revision number not in the history is named with those that are", only, 7, `sidecarset "agent" has no revision 7 (it has 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := planUndo(v1, tc.revs, tc.number, false)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHistoryOf_CountsPodsPerRevision(t *testing.T) {
	t.Parallel()
	v1, v2 := agent("agent:1").Obj(), agent("agent:2").Obj()
	revs := []appsv1.ControllerRevision{recorded(t, v1, 1, "one"), recorded(t, v2, 2, "")}
	s := v2.DeepCopy()
	s.Status.LatestRevision = revs[1].Name
	pod := func(name string, e podstate.HashEntry) *corev1.Pod {
		e.SidecarSetName = "agent"
		return builder.MakePod("web", "default").Name(name).
			Annotation(appsv1beta1.SidecarSetHashAnnotation, podstate.Hashes{"agent": e}.Encode()).Obj()
	}
	hashOf := func(r appsv1.ControllerRevision) string {
		d, err := revision.Decode(r.Data.Raw)
		if err != nil {
			t.Fatal(err)
		}
		h, err := appsv1beta1.ComputeHashes(&appsv1beta1.SidecarSetSpec{Containers: d.Containers})
		if err != nil {
			t.Fatal(err)
		}
		return h.Hash
	}
	pods := []*corev1.Pod{
		pod("a", podstate.HashEntry{ControllerRevision: revs[1].Name, Hash: "x"}),
		pod("b", podstate.HashEntry{ControllerRevision: revs[1].Name, Hash: "x"}),
		pod("c", podstate.HashEntry{ControllerRevision: revs[0].Name, Hash: "y"}),
		// Injected by an OpenKruise that did not record the revision.
		pod("d", podstate.HashEntry{Hash: hashOf(revs[0])}),
		pod("e", podstate.HashEntry{ControllerRevision: "gone-1", Hash: "z"}),
	}
	got, err := historyOf(s, revs, pods)
	if err != nil {
		t.Fatal(err)
	}
	want := []HistoryEntry{
		{Revision: 1, Name: revs[0].Name, CustomVersion: "one", Images: []string{"agent=agent:1"}, Hash: hashOf(revs[0]),
			Created: revs[0].CreationTimestamp, Pods: 2},
		{Revision: 2, Name: revs[1].Name, Images: []string{"agent=agent:2"}, Hash: hashOf(revs[1]),
			Created: revs[1].CreationTimestamp, Current: true, Pods: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	var out strings.Builder
	if err := writeHistory(&out, got, false); err != nil {
		t.Fatal(err)
	}
	table := "REVISION  NAME              CUSTOM-VERSION  IMAGES         CREATED               PODS  CURRENT\n" +
		"1         " + revs[0].Name + "  one             agent=agent:1  2026-11-01T10:00:01Z  2     \n" +
		"2         " + revs[1].Name + "  <none>          agent=agent:2  2026-11-01T10:00:02Z  2     *\n"
	if diff := cmp.Diff(table, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	out.Reset()
	if err := writeHistory(&out, got, true); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(out.String(), "\n"); !strings.HasSuffix(lines[0], "CURRENT  HASH") || !strings.HasSuffix(lines[1], "  "+hashOf(revs[0])) {
		t.Errorf("wide table: want a HASH column, got\n%s", out.String())
	}
}

func TestJudgeRollout_States(t *testing.T) {
	t.Parallel()
	cond := func(typ string, status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message", ObservedGeneration: generation}
	}
	updatedTrue := cond(appsv1beta1.SidecarSetConditionUpdated, metav1.ConditionTrue, appsv1beta1.ReasonRolloutComplete, 2)
	progressing := func(reason string) []metav1.Condition {
		status := metav1.ConditionFalse
		if reason == appsv1beta1.ReasonUpdating || reason == appsv1beta1.ReasonWaitingForUnavailablePods {
			status = metav1.ConditionTrue
		}
		return []metav1.Condition{
			cond(appsv1beta1.SidecarSetConditionUpdated, metav1.ConditionFalse, reason, 2),
			cond(appsv1beta1.SidecarSetConditionProgressing, status, reason, 2),
		}
	}
	tests := []struct {
		name          string
		observed      int64
		conditions    []metav1.Condition
		updated, both int32
		want          string
	}{
		{"a status of an older generation is not judged", 1, []metav1.Condition{updatedTrue}, 10, 10, StateObserving},
		{"every pod on the latest sidecars is complete", 2, []metav1.Condition{updatedTrue}, 10, 10, StateComplete},
		{"pods being upgraded are progressing", 2, progressing(appsv1beta1.ReasonUpdating), 4, 3, StateProgressing},
		{"a paused rollout is waited for", 2, progressing(appsv1beta1.ReasonPaused), 4, 4, StateProgressing},
		{"a partition holding the rest with the canary ready is complete", 2, progressing(appsv1beta1.ReasonPartitionHeld), 10, 10, StateComplete},
		{"a partition holding the rest while the canary is not ready is progressing", 2, progressing(appsv1beta1.ReasonPartitionHeld), 10, 8, StateProgressing},
		{"pods outside updateStrategy.selector leave the rollout complete", 2, progressing(appsv1beta1.ReasonNotSelected), 3, 3, StateComplete},
		{"a rollout past its progress deadline failed", 2, progressing(appsv1beta1.ReasonProgressDeadlineExceeded), 1, 0, StateFailed},
		{"a rollout over its failure budget failed", 2, progressing(appsv1beta1.ReasonFailureBudgetExceeded), 5, 0, StateFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := agent("agent:2").Obj()
			s.Generation = 2
			s.Status = appsv1beta1.SidecarSetStatus{ObservedGeneration: tc.observed, MatchedPods: 10, UpdatedPods: tc.updated,
				UpdatedReadyPods: tc.both, Conditions: tc.conditions}
			if got := judgeRollout(s).State; got != tc.want {
				t.Errorf("state %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatusText_Lines(t *testing.T) {
	t.Parallel()
	progress := func(n int) []PodProgress {
		var out []PodProgress
		for i := range n {
			out = append(out, PodProgress{Pod: "shop/web-" + string(rune('a'+i)), Reason: "sidecar agent not ready yet"})
		}
		return out
	}
	tests := []struct {
		name string
		st   RolloutStatus
		want string
	}{
		{"a status not yet observed", RolloutStatus{SidecarSet: "agent", State: StateObserving},
			"Waiting for sidecarset \"agent\" spec update to be observed...\n"},
		{"a complete rollout names its revision",
			RolloutStatus{SidecarSet: "agent", State: StateComplete, Reason: appsv1beta1.ReasonRolloutComplete, MatchedPods: 3, UpdatedPods: 3,
				Message: "all 3 matched pods run the latest sidecars", Revision: "agent-1"},
			"sidecarset \"agent\" successfully rolled out: all 3 matched pods run the latest sidecars (revision agent-1)\n"},
		{"a partitioned rollout complete says what holds the rest",
			RolloutStatus{SidecarSet: "agent", State: StateComplete, Reason: appsv1beta1.ReasonPartitionHeld, MatchedPods: 10, UpdatedPods: 1,
				Message: "9 of 10 pods are held on the old sidecars by partition 9"},
			"sidecarset \"agent\" rollout complete as far as its strategy goes: PartitionHeld: 9 of 10 pods are held on the old sidecars by partition 9\n"},
		{"a rollout in progress names the first pods of its batch and says why the rest waits",
			RolloutStatus{SidecarSet: "agent", State: StateProgressing, MatchedPods: 10, UpdatedPods: 7, UpdatedReadyPods: 1,
				Reason: appsv1beta1.ReasonWaitingForUnavailablePods, Message: "3 of 10 pods wait", Upgrading: progress(6)},
			"Waiting for sidecarset \"agent\" rollout to finish: 7 of 10 pods updated, 1 of them ready\n" +
				"  upgrading: sidecar agent not ready yet on shop/web-a, shop/web-b, shop/web-c, shop/web-d, shop/web-e, and 1 more\n" +
				"  WaitingForUnavailablePods: 3 of 10 pods wait\n"},
		{"a failed rollout names the failed pods",
			RolloutStatus{SidecarSet: "agent", State: StateFailed, MatchedPods: 10, UpdatedPods: 4,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded, Message: "4 pods fail", Failed: progress(1)},
			"sidecarset \"agent\" rollout failed: 4 of 10 pods updated, 0 of them ready\n" +
				"  failed: sidecar agent not ready yet on shop/web-a\n" +
				"  FailureBudgetExceeded: 4 pods fail\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, statusText(&tc.st)); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResumeWarning_OverTheFailureBudget(t *testing.T) {
	t.Parallel()
	s := agent("agent:invalid").Paused(true).Obj()
	if w := resumeWarning(s, false); w != "" {
		t.Errorf("a rollout paused by hand: warning %q, want none", w)
	}
	s.Status.Conditions = []metav1.Condition{{Type: appsv1beta1.SidecarSetConditionProgressing, Status: metav1.ConditionFalse,
		Reason: appsv1beta1.ReasonFailureBudgetExceeded, Message: "4 pods upgraded to revision agent-2 fail"}}
	want := "the rollout exceeds its failure budget (4 pods upgraded to revision agent-2 fail): the controller pauses it again " +
		"while as many upgraded pods fail; roll back with kubectl sidecarset rollout undo agent, fix the sidecar, " +
		"or raise the annotation sidecarset-operator.dev/failure-budget"
	if w := resumeWarning(s, false); w != want {
		t.Errorf("warning %q, want %q", w, want)
	}
	if w := resumeWarning(s, true); w != "" {
		t.Errorf("pausing: warning %q, want none", w)
	}
}

func TestRollout_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rollout works on the cluster only", []string{"rollout", "status", "agent", "--sidecarsets-from", "testdata/sidecarsets.yaml"},
			"unknown flag: --sidecarsets-from"},
		{"a SidecarSet is named, not another kind", []string{"rollout", "history", "deployment/web"},
			`"deployment/web": want a SidecarSet, as NAME or sidecarset/NAME`},
		{"one SidecarSet at a time", []string{"rollout", "pause", "a", "b"}, "accepts at most 1 arg(s), received 2"},
		{"status has no wide table", []string{"rollout", "status", "agent", "-o", "wide"}, `--output "wide": want one of json, yaml, `},
		{"undo's dry run is one of kubectl's", []string{"rollout", "undo", "agent", "--dry-run=yes"}, `--dry-run "yes": want none, client or server`},
		{"pause's dry run is one of kubectl's", []string{"rollout", "pause", "agent", "--dry-run=yes"}, `--dry-run "yes": want none, client or server`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Without the offline flags of run: the rollout commands refuse them.
			_, _, err := runCommand(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// runCommand runs the plugin with only a kubeconfig that does not exist.
func runCommand(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut strings.Builder
	cmd := NewCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(args, "--kubeconfig", "testdata/no-kubeconfig"))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// TestRevisionsOf_OnlyTheSidecarSetsOwn: rollout history and undo list only
// the revisions the SidecarSet controls, by UID. A revision planted in the
// operator's namespace with the SidecarSet's name label, no owner and a high
// number is neither listed nor restored by undo, which writes with the
// caller's credentials (review N8); nor is one left by an earlier
// SidecarSet of the same name.
func TestRevisionsOf_OnlyTheSidecarSetsOwn(t *testing.T) {
	t.Parallel()
	v1, v2 := agent("agent:1").Obj(), agent("agent:2").Obj()
	v1.UID, v2.UID = "uid-now", "uid-now"
	mine1, mine2 := recorded(t, v1, 1, ""), recorded(t, v2, 2, "")
	planted := recorded(t, agent("attacker/exfil:1").Obj(), 999999, "")
	planted.OwnerReferences = nil
	earlier := recorded(t, agent("agent:0").Obj(), 7, "")
	earlier.OwnerReferences[0].UID = "uid-before"
	live := v2.DeepCopy()
	live.Status.LatestRevision = mine2.Name
	o := &options{sidecarSetsFrom: fromCluster, operatorNamespace: "kruise-system", kubeconfig: "testdata/no-kubeconfig"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live, &mine1, &mine2, &planted, &earlier).Build()

	revs, err := o.revisionsOf(t.Context(), c, live)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range revs {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{mine1.Name, mine2.Name}, names); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	plan, err := planUndo(live, revs, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if plan.target.Name != mine1.Name || plan.restored.Spec.Containers[0].Image != "agent:1" {
		t.Errorf("undo restores %s (image %s), want %s (agent:1)", plan.target.Name, plan.restored.Spec.Containers[0].Image, mine1.Name)
	}
	if _, err := planUndo(live, revs, 999999, false); err == nil {
		t.Errorf("undo --to-revision 999999 restores the planted revision, want an error")
	}
}
