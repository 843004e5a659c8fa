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

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestPlan_Conditions(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2")
	mu := func(n int32) *setWrapper { return v2.clone().maxUnavailable(intstr.FromInt32(n)) }
	now, then := metav1.NewTime(t0), metav1.NewTime(t0.Add(-time.Hour))
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 3, LastTransitionTime: ltt}
	}
	updated := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return cond(appsv1beta1.SidecarSetConditionUpdated, status, reason, msg, now)
	}
	progressing := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return cond(appsv1beta1.SidecarSetConditionProgressing, status, reason, msg, now)
	}
	const (
		yes = metav1.ConditionTrue
		no  = metav1.ConditionFalse
	)
	tests := []struct {
		name     string
		set      *setWrapper
		pods     []*podWrapper
		inFlight map[types.UID]InFlight
		want     []metav1.Condition
	}{
		{
			name: "a complete rollout keeps only the Updated condition",
			set:  mu(1), pods: fleet(t, v2.obj(), v2.obj(), 3, 0, 0),
			want: []metav1.Condition{
				updated(yes, appsv1beta1.ReasonRolloutComplete, "all 3 matched pods run the latest sidecars"),
			},
		},
		{
			name: "a rollout completing removes the Progressing condition",
			set: mu(1).conditions(
				metav1.Condition{Type: appsv1beta1.SidecarSetConditionUpdated, Status: no, Reason: appsv1beta1.ReasonUpdating, LastTransitionTime: then},
				metav1.Condition{Type: appsv1beta1.SidecarSetConditionProgressing, Status: yes, Reason: appsv1beta1.ReasonUpdating, LastTransitionTime: then},
			),
			pods: fleet(t, v2.obj(), v2.obj(), 2, 0, 0),
			want: []metav1.Condition{
				updated(yes, appsv1beta1.ReasonRolloutComplete, "all 2 matched pods run the latest sidecars"),
			},
		},
		{
			name: "a NotUpdate SidecarSet whose pods all run the latest sidecars keeps only the Updated condition",
			set:  mu(1).notUpdate(), pods: fleet(t, v2.obj(), v2.obj(), 2, 0, 0),
			want: []metav1.Condition{
				updated(yes, appsv1beta1.ReasonRolloutComplete, "all 2 matched pods run the latest sidecars"),
			},
		},
		{
			name: "an upgrade in progress says how many pods move and how many wait",
			set:  mu(1), pods: fleet(t, v1.obj(), v2.obj(), 3, 0, 0),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonUpdating, "0 of 3 matched pods run the latest sidecars"),
				progressing(yes, appsv1beta1.ReasonUpdating, "upgrading 1 pod; 0 of 3 pods are updated; "+
					"2 of 3 pods wait: maxUnavailable 1 is used up by 1 pod upgrading or not ready"),
			},
		},
		{
			name: "pods waiting for upgraded pods to become available are counted",
			set:  mu(10), pods: fleet(t, v1.obj(), v2.obj(), 100, 90, 80),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonWaitingForUnavailablePods, "80 of 100 matched pods run the latest sidecars"),
				progressing(yes, appsv1beta1.ReasonWaitingForUnavailablePods,
					"10 of 100 pods wait: maxUnavailable 10 is used up by 10 pods upgrading or not ready"),
			},
		},
		{
			name: "a paused SidecarSet says how many pods wait",
			set:  mu(1).paused(), pods: fleet(t, v1.obj(), v2.obj(), 3, 1, 1),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonPaused, "1 of 3 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonPaused, "updateStrategy.paused is true: 2 of 3 pods wait for their upgrade"),
			},
		},
		{
			name: "a NotUpdate SidecarSet leaves pods alone",
			set:  mu(1).notUpdate(), pods: fleet(t, v1.obj(), v2.obj(), 3, 0, 0),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonNotUpdate, "0 of 3 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonNotUpdate, "updateStrategy.type is NotUpdate: existing pods keep their sidecars; 0 of 3 pods are updated"),
			},
		},
		{
			name: "a partition holding every remaining pod says so",
			set:  mu(1).partition(intstr.FromString("50%")), pods: fleet(t, v1.obj(), v2.obj(), 4, 2, 2),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonPartitionHeld, "2 of 4 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonPartitionHeld, "2 of 4 pods are held on the old sidecars by partition 50% (2)"),
			},
		},
		{
			name: "maxUnavailable 0 says no pod may become unavailable",
			set:  mu(0), pods: fleet(t, v1.obj(), v2.obj(), 3, 0, 0),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonMaxUnavailableIsZero, "0 of 3 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonMaxUnavailableIsZero, "3 of 3 pods wait: maxUnavailable 0 lets no pod become unavailable"),
			},
		},
		{
			name: "pods that cannot be upgraded in place are named as the reason",
			set:  mu(1).mode("agent", "x"),
			pods: append(fleet(t, v2.clone().mode("agent", "x").obj(), v2.obj(), 2, 0, 0), makePod("old").injected(t, v1.obj())),
			want: []metav1.Condition{
				// OpenKruise-style "complete" here would be a false success: a pod still needs the change.
				updated(no, appsv1beta1.ReasonNotUpgradablePods, "2 of 3 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonNotUpgradablePods, "1 of 3 pods cannot be upgraded in place: "+
					"a field other than images and resources changed, or their resize cannot be made; recreate them to get the "+
					`new sidecars (sidecarset-operator.dev/recreate-pods: "true" has the rollout recreate them)`),
			},
		},
		{
			name: "pods outside the update selector are named as the reason",
			set:  mu(1).updateSelector("canary", "true"),
			pods: append(fleet(t, v1.obj(), v2.obj(), 2, 0, 0), makePod("canary").injected(t, v2.obj()).label("canary", "true")),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonNotSelected, "1 of 3 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonNotSelected, "2 of 3 pods are not updated: updateStrategy.selector does not select them"),
			},
		},
		{
			name: "an upgraded pod stuck on an image that cannot be pulled is not reported complete",
			set:  mu(1),
			pods: func() []*podWrapper {
				ps := fleet(t, v1.obj(), v2.obj(), 2, 2, 1)
				ps[1].stuck("agent")
				return ps
			}(),
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonUpdatedPodsUnavailable, "1 of 2 matched pods run the latest sidecars"),
				progressing(no, appsv1beta1.ReasonUpdatedPodsUnavailable, "1 of 2 upgraded pods are not available: not ready, "+
					"or the new sidecar image is not running (for example, it cannot be pulled); see kubectl get pods and their events"),
			},
		},
		{
			name: "an expired in-flight entry is reported",
			set:  mu(1), pods: fleet(t, v1.obj(), v2.obj(), 1, 0, 0),
			inFlight: map[types.UID]InFlight{"uid-pod-0": {Hash: "h", Since: t0.Add(-time.Hour)}},
			want: []metav1.Condition{
				updated(no, appsv1beta1.ReasonUpdating, "0 of 1 matched pods run the latest sidecars"),
				progressing(yes, appsv1beta1.ReasonUpdating, "upgrading 1 pod; 0 of 1 pods are updated; "+
					"gave up waiting for 1 patched pod to show their new version after 5m0s"),
			},
		},
		{
			name: "the transition time is kept while the status does not change, other conditions are kept",
			set: mu(1).conditions(
				metav1.Condition{Type: "Other", Status: yes, Reason: "R", LastTransitionTime: then},
				metav1.Condition{Type: appsv1beta1.SidecarSetConditionUpdated, Status: yes, Reason: appsv1beta1.ReasonRolloutComplete, LastTransitionTime: then},
				metav1.Condition{Type: appsv1beta1.SidecarSetConditionProgressing, Status: yes, Reason: appsv1beta1.ReasonUpdating, LastTransitionTime: then},
			),
			pods: fleet(t, v1.obj(), v2.obj(), 2, 1, 0),
			want: []metav1.Condition{
				{Type: "Other", Status: yes, Reason: "R", LastTransitionTime: then},
				updated(no, appsv1beta1.ReasonWaitingForUnavailablePods, "0 of 2 matched pods run the latest sidecars"),
				cond(appsv1beta1.SidecarSetConditionProgressing, yes, appsv1beta1.ReasonWaitingForUnavailablePods,
					"1 of 2 pods wait: maxUnavailable 1 is used up by 1 pod upgrading or not ready", then),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, tc.set.obj(), pods(tc.pods...)...)
			in.InFlight = tc.inFlight
			got := compute(t, in).Status.Conditions
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCount_Plural(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"0 pods", "1 pod", "2 pods"}, []string{count(0, "pod"), count(1, "pod"), count(2, "pod")}); diff != "" {
		t.Errorf("count (-want +got):\n%s", diff)
	}
}

// TestStatus_Restricted: the pods that record a restriction of the
// SidecarSet set its Restricted condition (reason SidecarsRestricted, the
// first three pods named with what each lacked, and how many more); a pod
// restricted for another SidecarSet does not count, and none left removes
// the condition.
func TestStatus_Restricted(t *testing.T) {
	t.Parallel()
	pod := func(name, record string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
		if record != "" {
			p.Annotations = map[string]string{appsv1beta1.RestrictedAnnotation: record}
		}
		return p
	}
	var ps []*corev1.Pod
	for i := 5; i >= 1; i-- {
		ps = append(ps, pod(fmt.Sprintf("web-%d", i), fmt.Sprintf(`{"agent":["volume creds (secret) of sidecar agent %d"]}`, i)))
	}
	ps = append(ps, pod("plain", ""), pod("other", `{"another":["volume creds (secret)"]}`))

	ts := metav1.NewTime(t0)
	restricted := restrictedPods("agent", ps)
	if len(restricted) != 5 {
		t.Fatalf("restricted = %+v, want the 5 web pods", restricted)
	}
	c := restrictedCondition(restricted, 4, ts)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appsv1beta1.ReasonSidecarsRestricted || c.ObservedGeneration != 4 {
		t.Fatalf("condition = %+v, want Restricted True, reason %s, generation 4", c, appsv1beta1.ReasonSidecarsRestricted)
	}
	const want = "5 pod(s) run the sidecars without what the SidecarSet's authority does not cover: " +
		"team-a/web-1: volume creds (secret) of sidecar agent 1; team-a/web-2: volume creds (secret) of sidecar agent 2; " +
		"team-a/web-3: volume creds (secret) of sidecar agent 3, and 2 more"
	if c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}
	if c := restrictedCondition(restrictedPods("agent", ps[5:]), 4, ts); c != nil {
		t.Errorf("no pod restricted for the SidecarSet, condition %+v", c)
	}
}

// TestPlan_StatusIsWhole: the plan's status is the whole status to write:
// generation, latest revision, collision count (0 included), the pods the
// detector found without the sidecars (kept from the previous status until
// it has looked at every pod), the Restricted and Scoped conditions beside
// the rollout's.
func TestPlan_StatusIsWhole(t *testing.T) {
	t.Parallel()
	set := makeSet("s").cold("agent", "agent:1")
	pod := makePod("p").injected(t, set.obj()).annotation(appsv1beta1.RestrictedAnnotation, `{"s":["volume creds (secret)"]}`)
	missing := []NotInjectedPod{
		{Pod: types.NamespacedName{Namespace: "default", Name: "a"}, Reason: match.NotInjectedCreatedBefore},
		{Pod: types.NamespacedName{Namespace: "default", Name: "b"}, Reason: match.NotInjectedPaused},
	}
	in := input(t, set.obj(), pod.obj())
	in.Detected, in.DetectorSynced = missing, true
	in.ScopeDegraded, in.ScopeWhy = true, "the scope is full"
	st := compute(t, in).Status
	if st.ObservedGeneration != 3 || st.LatestRevision != "s-rev" || st.CollisionCount == nil || *st.CollisionCount != 0 || st.NotInjectedPods != 2 {
		t.Errorf("status = %+v, want generation 3, revision s-rev, collision count 0, 2 pods not injected", st)
	}
	ts := metav1.NewTime(t0)
	want := []metav1.Condition{
		{Type: appsv1beta1.SidecarSetConditionUpdated, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonRolloutComplete,
			Message: "the matched pod runs the latest sidecars", ObservedGeneration: 3, LastTransitionTime: ts},
		{Type: appsv1beta1.SidecarSetConditionInjected, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonPodsNotInjected,
			Message:            "2 pods it selects run without its sidecars: default/a (created before the SidecarSet), default/b (injection paused)",
			ObservedGeneration: 3, LastTransitionTime: ts},
		{Type: appsv1beta1.SidecarSetConditionRestricted, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonSidecarsRestricted,
			Message:            "1 pod(s) run the sidecars without what the SidecarSet's authority does not cover: default/p: volume creds (secret)",
			ObservedGeneration: 3, LastTransitionTime: ts},
		{Type: appsv1beta1.SidecarSetConditionScoped, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonScopeDegraded,
			Message: "the scope is full", ObservedGeneration: 3, LastTransitionTime: ts},
	}
	if diff := cmp.Diff(want, st.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}

	// Before the detector has looked at every pod, the previous count and
	// condition stay; none found once it has removes the condition.
	prev := set.clone().conditions(want[1])
	prev.Status.NotInjectedPods = 2
	in = input(t, prev.obj(), pod.obj())
	in.CollisionCount = 1
	st = compute(t, in).Status
	if st.NotInjectedPods != 2 || conditionReason(st.Conditions, appsv1beta1.SidecarSetConditionInjected) != appsv1beta1.ReasonPodsNotInjected {
		t.Errorf("detector not synced: status = %+v, want the previous count and Injected condition", st)
	}
	if *st.CollisionCount != 1 {
		t.Errorf("collision count = %d, want 1", *st.CollisionCount)
	}
	in.DetectorSynced = true
	st = compute(t, in).Status
	if st.NotInjectedPods != 0 || conditionReason(st.Conditions, appsv1beta1.SidecarSetConditionInjected) != "" {
		t.Errorf("detector synced, no pod found: status = %+v, want no count nor Injected condition", st)
	}
}

// A rollout's progress (its counts, and the conditions' messages that tell
// them) may wait for the next refresh; anything else the status says may
// not.
func TestProgressOnly(t *testing.T) {
	t.Parallel()
	stored := appsv1beta1.SidecarSetStatus{
		ObservedGeneration: 2, MatchedPods: 10, UpdatedPods: 3, ReadyPods: 9, UpdatedReadyPods: 2, LatestRevision: "web-2",
		Conditions: []metav1.Condition{{Type: "Updated", Status: metav1.ConditionFalse, Reason: "RolloutInProgress",
			Message: "2 of 10 matched pods run the latest sidecars", LastTransitionTime: metav1.Unix(100, 0), ObservedGeneration: 2}},
	}
	tests := []struct {
		name   string
		change func(*appsv1beta1.SidecarSetStatus)
		want   bool
	}{
		{"nothing", func(*appsv1beta1.SidecarSetStatus) {}, true},
		{"the counts and a condition's message", func(st *appsv1beta1.SidecarSetStatus) {
			st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods, st.ResizePendingPods = 5, 8, 4, 1
			st.Conditions[0].Message = "4 of 10 matched pods run the latest sidecars"
		}, true},
		{"a condition's status", func(st *appsv1beta1.SidecarSetStatus) {
			st.Conditions[0].Status, st.Conditions[0].LastTransitionTime = metav1.ConditionTrue, metav1.Unix(200, 0)
		}, false},
		{"a condition's reason", func(st *appsv1beta1.SidecarSetStatus) { st.Conditions[0].Reason = "RolloutPaused" }, false},
		{"a new condition", func(st *appsv1beta1.SidecarSetStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: "Paused", Status: metav1.ConditionTrue, Reason: "FailureBudgetExceeded"})
		}, false},
		{"the generation observed", func(st *appsv1beta1.SidecarSetStatus) { st.ObservedGeneration = 3 }, false},
		{"the latest revision", func(st *appsv1beta1.SidecarSetStatus) { st.LatestRevision = "web-3" }, false},
		{"the collision count", func(st *appsv1beta1.SidecarSetStatus) { st.CollisionCount = new(int32(1)) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next := *stored.DeepCopy()
			tc.change(&next)
			if got := ProgressOnly(&stored, &next); got != tc.want {
				t.Errorf("ProgressOnly: %v, want %v", got, tc.want)
			}
		})
	}
}
