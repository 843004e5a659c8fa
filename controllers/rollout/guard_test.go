package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// upgradedAt sets when the pod's hash entry for the SidecarSet was written
// (its in-place upgrade).
func (p *podWrapper) upgradedAt(set string, at time.Time) *podWrapper {
	hashes, _ := podstate.DecodeHashes(p.Annotations[appsv1beta1.SidecarSetHashAnnotation])
	e := hashes[set]
	e.UpdateTimestamp = metav1.NewTime(at)
	hashes[set] = e
	p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = hashes.Encode()
	return p
}

// crashLooping makes a container restart repeatedly: it runs its spec image
// and waits in CrashLoopBackOff, and the pod is not ready.
func (p *podWrapper) crashLooping(container string) *podWrapper {
	st := p.status(container)
	*st = runningStatus(container, p.spec(container).Image)
	st.Ready = false
	st.RestartCount = 4
	st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	p.notReady()
	return p
}

// crashedAfterUpgrade makes a container upgraded in place at a time crash
// since: an instance of its new image started a second after the upgrade
// and exited with code 1, and the container waits to start again (not
// running, not ready), as a real kubelet reports a sidecar that crashes at
// once between two of its starts.
func (p *podWrapper) crashedAfterUpgrade(set, container string, upgraded time.Time) *podWrapper {
	p.upgradedAt(set, upgraded)
	state, _ := podstate.DecodeInPlaceState(p.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation])
	state[set].UpdateTimestamp = metav1.NewTime(upgraded)
	p.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation] = podstate.EncodeInPlaceState(state)
	p.completed()
	st := p.status(container)
	st.RestartCount, st.Ready = 2, false
	st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", StartedAt: metav1.NewTime(upgraded.Add(time.Second)), FinishedAt: metav1.NewTime(upgraded.Add(2 * time.Second))}}
	p.notReady()
	return p
}

// stuckAt makes the pod upgraded to v2 at a time, its sidecar stuck on an
// image that cannot be pulled.
func stuckAt(tb testing.TB, p *podWrapper, v2 *appsv1beta1.SidecarSet, at time.Time) *podWrapper {
	tb.Helper()
	p.upgradedTo(tb, v2).upgradedAt(v2.Name, at)
	p.stuck("agent")
	return p
}

func failureBudget(n int32, window time.Duration) appsv1beta1.RolloutGuards {
	return appsv1beta1.RolloutGuards{FailureBudget: &n, FailureWindow: window}
}

func TestPlan_FailureBudget(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(4))
	late, early := t0.Add(-10*time.Minute), t0.Add(-time.Minute)
	// fleetStuck is 6 pods on v1 of which the first n are upgraded to v2
	// at a time and stuck.
	fleetStuck := func(n int, at time.Time) []*podWrapper {
		ps := fleet(t, v1.obj(), v2.obj(), 6, 0, 0)
		for i := range n {
			stuckAt(t, ps[i], v2.obj(), at)
		}
		return ps
	}
	failed := func(names ...string) []UpgradedPod {
		out := []UpgradedPod{}
		for _, n := range names {
			out = append(out, UpgradedPod{Pod: types.NamespacedName{Namespace: "default", Name: n}, Since: late, Failed: true,
				Reason: "sidecar agent (ImagePullBackOff) not ready within 5m0s of the upgrade"})
		}
		return out
	}
	type want struct {
		Upgraded []UpgradedPod
		Updates  []string
		Pause    bool
		Reason   string
	}
	tests := []struct {
		name   string
		set    *setWrapper
		guards appsv1beta1.RolloutGuards
		pods   []*podWrapper
		want   want
	}{
		{
			name: "more failed pods than the budget pause the rollout and upgrade nothing",
			set:  v2, guards: failureBudget(2, 5*time.Minute), pods: fleetStuck(3, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2"), Updates: []string{}, Pause: true,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "as many failed pods as the budget let the rollout go on",
			set:  v2, guards: failureBudget(3, 5*time.Minute), pods: fleetStuck(3, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2"), Updates: []string{"pod-5"},
				Reason: appsv1beta1.ReasonUpdating},
		},
		{
			name: "pods within the failure window are upgrading, not failed",
			set:  v2, guards: failureBudget(0, 5*time.Minute), pods: fleetStuck(4, early),
			want: want{Upgraded: func() []UpgradedPod {
				out := []UpgradedPod{}
				for i := range 4 {
					out = append(out, UpgradedPod{Pod: types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("pod-%d", i)},
						Since: early, Reason: "sidecar agent (ImagePullBackOff) not ready yet"})
				}
				return out
			}(), Updates: []string{}, Reason: appsv1beta1.ReasonWaitingForUnavailablePods},
		},
		{
			name: "a sidecar restarting repeatedly fails within the window",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).upgradedAt("s", early).crashLooping("agent")
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{{Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: early, Failed: true,
				Reason: "sidecar agent restarts repeatedly (CrashLoopBackOff)"}}, Updates: []string{}, Pause: true,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			// A real node shows it: the first crash of the new image, before
			// any CrashLoopBackOff.
			name: "a sidecar whose new image exited since the upgrade, and does not run, fails at once",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).crashedAfterUpgrade("s", "agent", early)
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{{Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: early, Failed: true,
				Reason: "sidecar agent exited with code 1 (Error) since the upgrade"}}, Updates: []string{}, Pause: true,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "waiting to start again, its last instance is the one that exited",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).crashedAfterUpgrade("s", "agent", early)
				st := ps[0].status("agent")
				st.LastTerminationState, st.State = st.State, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{{Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: early, Failed: true,
				Reason: "sidecar agent exited with code 1 (Error) since the upgrade"}}, Updates: []string{}, Pause: true,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "the instance the upgrade replaced, started in the second of the upgrade, is not a crash",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).crashedAfterUpgrade("s", "agent", early)
				ps[0].status("agent").State.Terminated.StartedAt = metav1.NewTime(early)
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{{Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: early,
				Reason: "sidecar agent not ready yet"}}, Updates: []string{"pod-1"}, Reason: appsv1beta1.ReasonUpdating},
		},
		{
			// A rollback from a crashing image: the kubelet has not applied
			// it yet, and reports the crashes of the image rolled back from.
			name: "the crashes of the image an update replaces do not count until the status reports the new image",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).crashedAfterUpgrade("s", "agent", early)
				st := ps[0].status("agent")
				st.Image, st.ImageID = "agent:1", imageID("agent:1")
				st.LastTerminationState = st.State
				st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{{Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: early,
				Reason: "sidecar agent (CrashLoopBackOff) not ready yet"}}, Updates: []string{"pod-1"}, Reason: appsv1beta1.ReasonUpdating},
		},
		{
			// After a rollback from a crashing image, the last instance may
			// be of the image rolled back from.
			name: "a sidecar that runs again is not failed for a crash",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
				ps[0].upgradedTo(t, v2.obj()).crashedAfterUpgrade("s", "agent", early)
				st := ps[0].status("agent")
				st.LastTerminationState, st.Ready = st.State, true
				st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Second))}}
				ps[0].Status.Conditions[0].Status = corev1.ConditionTrue
				return ps
			}(),
			want: want{Upgraded: []UpgradedPod{}, Updates: []string{"pod-1"}, Reason: appsv1beta1.ReasonUpdating},
		},
		{
			name: "a rollout already paused is not paused again, and still reports the failures",
			set:  v2.clone().paused(), guards: failureBudget(2, 5*time.Minute), pods: fleetStuck(3, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2"), Updates: []string{}, Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "with every pod upgraded there is nothing left to pause, but the failures are reported",
			set:  v2.clone().maxUnavailable(intstr.FromInt32(6)), guards: failureBudget(2, 5*time.Minute), pods: fleetStuck(6, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2", "pod-3", "pod-4", "pod-5"), Updates: []string{},
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "pods held by the partition are left to upgrade: the canary's failures pause the rollout",
			set:  v2.clone().partition(intstr.FromInt32(3)), guards: failureBudget(2, 5*time.Minute), pods: fleetStuck(3, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2"), Updates: []string{}, Pause: true,
				Reason: appsv1beta1.ReasonFailureBudgetExceeded},
		},
		{
			name: "upgraded pods whose sidecars run ready do not count",
			set:  v2, guards: failureBudget(0, 5*time.Minute), pods: fleet(t, v1.obj(), v2.obj(), 3, 2, 2),
			want: want{Upgraded: []UpgradedPod{}, Updates: []string{"pod-2"}, Reason: appsv1beta1.ReasonUpdating},
		},
		{
			name: "pods created with the current revision were not upgraded and do not count",
			set:  v2, guards: failureBudget(0, 5*time.Minute),
			pods: func() []*podWrapper {
				p := makePod("new").injected(t, v2.obj())
				p.stuck("agent")
				return []*podWrapper{p}
			}(),
			// Complete as far as the rollout goes: no Progressing condition.
			want: want{Upgraded: []UpgradedPod{}, Updates: []string{}},
		},
		{
			name: "a NotUpdate SidecarSet is never paused",
			set:  v2.clone().notUpdate(), guards: failureBudget(0, 5*time.Minute), pods: fleetStuck(2, late),
			want: want{Upgraded: failed("pod-0", "pod-1"), Updates: []string{}, Reason: appsv1beta1.ReasonNotUpdate},
		},
		{
			name: "without a budget failed pods are listed and nothing stops",
			set:  v2, pods: fleetStuck(3, late),
			want: want{Upgraded: failed("pod-0", "pod-1", "pod-2"), Updates: []string{"pod-5"}, Reason: appsv1beta1.ReasonUpdating},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, tc.set.obj(), pods(tc.pods...)...)
			// Without a window (the test without a budget), the default.
			in.Guards = tc.guards
			plan := compute(t, in)
			got := want{Upgraded: plan.Upgraded, Updates: updatedNames(plan.Updates), Pause: plan.Pause,
				Reason: conditionReason(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)}
			if got.Upgraded == nil {
				got.Upgraded = []UpgradedPod{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// An upgraded sidecar counts as available once it has run ready for the
// min-ready time: a sidecar that crashes at once is Running and Ready for a
// moment first, on a real kubelet, and the rollout must not take it for
// upgraded then.
func TestPlan_MinReady(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	// upgradedSince is 2 pods on v1, the first upgraded to v2 and its new sidecar
	// running ready since a time.
	upgradedSince := func(started time.Time) []*podWrapper {
		ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
		ps[0].upgradedTo(t, v2.obj()).upgradedAt("s", started).completed()
		ps[0].status("agent").State.Running.StartedAt = metav1.NewTime(started)
		return ps
	}
	type want struct {
		Updates      []string
		Upgraded     []UpgradedPod
		RequeueAfter time.Duration
		Ready        int32
	}
	tests := []struct {
		name   string
		guards appsv1beta1.RolloutGuards
		pods   []*podWrapper
		want   want
	}{
		{
			name:   "running ready for less than min-ready: the pod holds maxUnavailable, is upgrading, and the round plans again when it settles",
			guards: appsv1beta1.RolloutGuards{MinReady: 10 * time.Second}, pods: upgradedSince(t0.Add(-3 * time.Second)),
			want: want{Updates: []string{}, RequeueAfter: 7 * time.Second, Ready: 2, Upgraded: []UpgradedPod{{
				Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: t0.Add(-3 * time.Second),
				Reason: "sidecar agent ready for less than 10s"}}},
		},
		{
			name:   "running ready for min-ready: the rollout goes on",
			guards: appsv1beta1.RolloutGuards{MinReady: 10 * time.Second}, pods: upgradedSince(t0.Add(-10 * time.Second)),
			want: want{Updates: []string{"pod-1"}, Upgraded: []UpgradedPod{}, Ready: 2},
		},
		{
			name:   "settling past the failure window does not fail the pod",
			guards: appsv1beta1.RolloutGuards{MinReady: time.Minute, FailureWindow: 5 * time.Second, FailureBudget: new(int32(0))},
			pods:   upgradedSince(t0.Add(-30 * time.Second)),
			want: want{Updates: []string{}, RequeueAfter: 30 * time.Second, Ready: 2, Upgraded: []UpgradedPod{{
				Pod: types.NamespacedName{Namespace: "default", Name: "pod-0"}, Since: t0.Add(-30 * time.Second),
				Reason: "sidecar agent ready for less than 1m0s"}}},
		},
		{
			name: "without min-ready a ready sidecar counts at once", pods: upgradedSince(t0.Add(-time.Second)),
			want: want{Updates: []string{"pod-1"}, Upgraded: []UpgradedPod{}, Ready: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, v2.obj(), pods(tc.pods...)...)
			in.Guards = tc.guards
			plan := compute(t, in)
			got := want{Updates: updatedNames(plan.Updates), Upgraded: plan.Upgraded, RequeueAfter: plan.RequeueAfter, Ready: plan.Status.ReadyPods}
			if got.Upgraded == nil {
				got.Upgraded = []UpgradedPod{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlan_FailureBudgetMessage(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(8))
	ps := fleet(t, v1.obj(), v2.obj(), 8, 0, 0)
	for i := range 7 {
		stuckAt(t, ps[i], v2.obj(), t0.Add(-10*time.Minute))
	}
	in := input(t, v2.obj(), pods(ps...)...)
	in.Guards = failureBudget(3, 2*time.Minute)
	plan := compute(t, in)
	var got string
	for _, c := range plan.Status.Conditions {
		if c.Type == appsv1beta1.SidecarSetConditionProgressing {
			got = c.Message
		}
	}
	want := "7 pods upgraded to revision s-rev fail, more than the failure budget of 3: " +
		"sidecar agent (ImagePullBackOff) not ready within 2m0s of the upgrade on " +
		"default/pod-0, default/pod-1, default/pod-2, default/pod-3, default/pod-4, and 2 more; " +
		"the rollout is paused (updateStrategy.paused): roll back with kubectl sidecarset rollout undo s, or fix the sidecar, then resume"
	if got != want {
		t.Errorf("Progressing message:\n got %s\nwant %s", got, want)
	}
}

func TestPlan_ProgressDeadline(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	deadline := appsv1beta1.RolloutGuards{ProgressDeadline: 10 * time.Minute, FailureWindow: appsv1beta1.DefaultFailureWindow}
	clock := func(since time.Duration) ProgressClock { return ProgressClock{Generation: 3, Since: t0.Add(-since)} }
	// A rollout waiting on an upgraded pod that does not come up.
	waiting := func() []*podWrapper { return fleet(t, v1.obj(), v2.obj(), 4, 1, 0) }
	type want struct {
		Reason       string
		RequeueAfter time.Duration
		Since        time.Time
	}
	tests := []struct {
		name  string
		set   *setWrapper
		clock ProgressClock
		pods  []*podWrapper
		want  want
	}{
		{
			name: "no progress for longer than the deadline turns Progressing False",
			set:  v2, clock: clock(11 * time.Minute), pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonProgressDeadlineExceeded, Since: t0.Add(-11 * time.Minute)},
		},
		{
			name: "within the deadline the rollout waits, and is planned again when it passes",
			set:  v2, clock: clock(4 * time.Minute), pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonWaitingForUnavailablePods, RequeueAfter: 6 * time.Minute, Since: t0.Add(-4 * time.Minute)},
		},
		{
			name: "a new generation starts the clock again",
			set:  v2, clock: ProgressClock{Generation: 2, Since: t0.Add(-time.Hour)}, pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonWaitingForUnavailablePods, RequeueAfter: 10 * time.Minute, Since: t0},
		},
		{
			name: "a pod that became updated and ready is progress",
			set:  v2, clock: clock(time.Hour),
			pods: func() []*podWrapper {
				ps := waiting()
				ps[1].upgradedTo(t, v2.obj()).completed()
				ps[1].Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute))
				return ps
			}(),
			want: want{Reason: appsv1beta1.ReasonWaitingForUnavailablePods, RequeueAfter: 9 * time.Minute, Since: t0.Add(-time.Minute)},
		},
		{
			name: "a paused rollout never exceeds its deadline",
			set:  v2.clone().paused(), clock: clock(time.Hour), pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonPaused, Since: t0.Add(-time.Hour)},
		},
		{
			name: "a partition holding the rest with the canary available is done, not stalled",
			set:  v2.clone().partition(intstr.FromInt32(3)), clock: clock(time.Hour), pods: fleet(t, v1.obj(), v2.obj(), 4, 1, 1),
			want: want{Reason: appsv1beta1.ReasonPartitionHeld, Since: t0.Add(-time.Hour)},
		},
		{
			name: "a partition holding the rest while the canary does not come up is stalled",
			set:  v2.clone().partition(intstr.FromInt32(3)), clock: clock(time.Hour), pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonProgressDeadlineExceeded, Since: t0.Add(-time.Hour)},
		},
		{
			name: "a rollout that completed in this generation never exceeds its deadline",
			set:  v2, clock: ProgressClock{Generation: 3, Since: t0.Add(-time.Hour), Complete: true}, pods: waiting(),
			want: want{Reason: appsv1beta1.ReasonWaitingForUnavailablePods, Since: t0.Add(-time.Hour)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, tc.set.obj(), pods(tc.pods...)...)
			in.Guards, in.Progress = deadline, tc.clock
			plan := compute(t, in)
			got := want{Reason: conditionReason(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing),
				RequeueAfter: plan.RequeueAfter, Since: plan.Progress.Since}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlan_ProgressDeadlineMessage(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	in := input(t, v2.obj(), pods(fleet(t, v1.obj(), v2.obj(), 3, 1, 0)...)...)
	in.Guards = appsv1beta1.RolloutGuards{ProgressDeadline: 10 * time.Minute, FailureWindow: appsv1beta1.DefaultFailureWindow}
	in.Progress = ProgressClock{Generation: 3, Since: t0.Add(-20 * time.Minute)}
	plan := compute(t, in)
	want := []metav1.Condition{
		{Type: appsv1beta1.SidecarSetConditionUpdated, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonProgressDeadlineExceeded,
			Message: "0 of 3 matched pods run the latest sidecars", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(t0)},
		{Type: appsv1beta1.SidecarSetConditionProgressing, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonProgressDeadlineExceeded,
			Message: "no pod was newly updated and ready since 2026-07-01T11:40:00Z, longer than the progress deadline of 10m0s; " +
				"2 of 3 pods wait: maxUnavailable 1 is used up by 1 pod upgrading or not ready",
			ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(t0)},
	}
	if diff := cmp.Diff(want, plan.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if plan.Progress.Complete {
		t.Error("the clock says complete, want not")
	}
}

func TestSeedClock_FromTheRecordedConditions(t *testing.T) {
	t.Parallel()
	then := metav1.NewTime(t0.Add(-30 * time.Minute))
	progressing := func(status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
		return metav1.Condition{Type: appsv1beta1.SidecarSetConditionProgressing, Status: status, Reason: reason,
			ObservedGeneration: generation, LastTransitionTime: then}
	}
	updated := metav1.Condition{Type: appsv1beta1.SidecarSetConditionUpdated, Status: metav1.ConditionTrue,
		Reason: appsv1beta1.ReasonRolloutComplete, ObservedGeneration: 3, LastTransitionTime: then}
	tests := []struct {
		name string
		prev []metav1.Condition
		want ProgressClock
	}{
		{"no condition starts the clock now", nil, ProgressClock{Generation: 3, Since: t0}},
		{"a rollout past its deadline stays past it",
			[]metav1.Condition{progressing(metav1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded, 3)},
			ProgressClock{Generation: 3, Since: then.Add(-10 * time.Minute)}},
		{"a progressing rollout is timed from when it started to progress",
			[]metav1.Condition{progressing(metav1.ConditionTrue, appsv1beta1.ReasonUpdating, 3)},
			ProgressClock{Generation: 3, Since: then.Time}},
		{"a rollout that completed stays complete", []metav1.Condition{updated},
			ProgressClock{Generation: 3, Since: t0, Complete: true}},
		{"conditions of another generation start the clock now",
			[]metav1.Condition{progressing(metav1.ConditionTrue, appsv1beta1.ReasonUpdating, 2)},
			ProgressClock{Generation: 3, Since: t0}},
		{"a rollout held by its configuration starts the clock now",
			[]metav1.Condition{progressing(metav1.ConditionFalse, appsv1beta1.ReasonPartitionHeld, 3)},
			ProgressClock{Generation: 3, Since: t0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, seedClock(tc.prev, 3, t0, 10*time.Minute)); diff != "" {
				t.Errorf("clock (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupPods_ByReason(t *testing.T) {
	t.Parallel()
	pods := []PodReason{{"ns/a", "x"}, {"ns/b", "y"}, {"ns/c", "x"}, {"ns/d", "y"}}
	tests := []struct {
		name  string
		pods  []PodReason
		limit int
		want  string
	}{
		{"pods are grouped by reason, in the order the reasons appear", pods, 5, "x on ns/a, ns/c; y on ns/b, ns/d"},
		{"pods beyond the limit are counted", pods, 2, "x on ns/a; y on ns/b, and 2 more"},
		{"no pod words nothing", nil, 5, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := GroupPods(tc.pods, tc.limit); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
