package rollout

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func evictedNames(es []PodEviction) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Pod.Name)
	}
	return out
}

func TestRecreatable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		pod        *podWrapper
		jobs       bool
		want       bool
		wantReason string
	}{
		{name: "a Deployment's pod", pod: makePod("a").ownedBy("ReplicaSet", "apps/v1", "rs"), want: true},
		{name: "a StatefulSet's pod", pod: makePod("a").ownedBy("StatefulSet", "apps/v1", "sts"), want: true},
		{name: "an OpenKruise CloneSet's pod", pod: makePod("a").ownedBy("CloneSet", "apps.kruise.io/v1alpha1", "cs"), want: true},
		{name: "a bare pod is never recreated", pod: makePod("a"), jobs: true, wantReason: "a bare pod: no controller would recreate it"},
		{name: "a Job's pod only with the Job opt-in", pod: makePod("a").ownedBy("Job", "batch/v1", "job"),
			wantReason: `a Job's pod, which a recreation runs again (sidecarset-operator.dev/recreate-job-pods "true" allows it)`},
		{name: "a Job's pod with the Job opt-in", pod: makePod("a").ownedBy("Job", "batch/v1", "job"), jobs: true, want: true},
		{name: "an unknown controller's pod", pod: makePod("a").ownedBy("Workflow", "argoproj.io/v1alpha1", "wf"),
			wantReason: "its controller, a Workflow, is not known to recreate evicted pods"},
		{name: "a pod that never restarts", pod: func() *podWrapper {
			p := makePod("a").ownedBy("ReplicaSet", "apps/v1", "rs")
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			return p
		}(), wantReason: `restartPolicy Never: a recreation runs it again (sidecarset-operator.dev/recreate-job-pods "true" allows it)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ok, reason := recreatable(tc.pod.obj(), tc.jobs)
			if ok != tc.want || reason != tc.wantReason {
				t.Errorf("recreatable: %v %q, want %v %q", ok, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestPlan_Recreate(t *testing.T) {
	t.Parallel()
	v1, v2, deployed := recreateFixture(t)
	recreating := func(tb testing.TB, set *setWrapper, ps ...*podWrapper) Input {
		tb.Helper()
		in := input(tb, set.obj(), pods(ps...)...)
		in.Revisions = revisionsOf(tb, v1.obj())
		return in
	}

	t.Run("an env change is recreated, within maxUnavailable, never a bare pod", func(t *testing.T) {
		t.Parallel()
		in := recreating(t, v2, deployed("a"), deployed("b"), makePod("bare").injected(t, v1.obj()))
		plan := compute(t, in)
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"a"}) {
			t.Fatalf("evicted %v, want [a]", got)
		}
		if e := plan.Evictions[0]; e.Owner != "rs-1" || e.UID != "uid-a" || e.Reason != "sidecar agent: env changed" {
			t.Errorf("eviction %+v", e)
		}
		if plan.Status.RecreatePendingPods != 2 {
			t.Errorf("recreatePendingPods %d, want 2", plan.Status.RecreatePendingPods)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Reason != appsv1beta1.ReasonRecreating {
			t.Fatalf("Recreated %+v, want reason %s", c, appsv1beta1.ReasonRecreating)
		}
		want := "2 pods to recreate: 1 being replaced, 1 waiting; maxUnavailable 1 is used up; 1 pod not recreatable: default/bare (sidecar agent: env changed; " +
			"not recreatable: a bare pod: no controller would recreate it)"
		if c.Message != want {
			t.Errorf("message\n%s\nwant\n%s", c.Message, want)
		}
		if !cmp.Equal(plan.NotUpgradable, []types.NamespacedName{{Namespace: "default", Name: "bare"}}) {
			t.Errorf("not upgradable %v, want the bare pod", plan.NotUpgradable)
		}
	})

	t.Run("a round that evicts plans again EvictionRetry later, or sooner when something else is due", func(t *testing.T) {
		t.Parallel()
		// Whether the evictions go through is known only after the round:
		// the next one looks again EvictionRetry later.
		in := recreating(t, v2, deployed("a"), deployed("b"))
		plan := compute(t, in)
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"a"}) {
			t.Fatalf("evicted %v, want [a]", got)
		}
		if plan.RequeueAfter != EvictionRetry {
			t.Errorf("requeue after %v, want EvictionRetry %v", plan.RequeueAfter, EvictionRetry)
		}
		// A refusal due again sooner keeps its earlier wake-up.
		in.Refused = map[types.UID]Refusal{"uid-a": {Message: "refused", At: t0.Add(-4 * time.Second)}}
		plan = compute(t, in)
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"b"}) {
			t.Fatalf("evicted %v, want [b]: a waits for its budget", got)
		}
		if plan.RequeueAfter != time.Second {
			t.Errorf("requeue after %v, want 1s, when a's refusal may be tried again", plan.RequeueAfter)
		}
	})

	t.Run("without the annotation nothing is recreated and no Recreated condition is set", func(t *testing.T) {
		t.Parallel()
		plan := compute(t, recreating(t, v1.clone().mode("agent", "b"), deployed("a")))
		if len(plan.Evictions) != 0 || findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated) != nil {
			t.Errorf("evictions %v, conditions %+v", plan.Evictions, plan.Status.Conditions)
		}
		if len(plan.NotUpgradable) != 1 {
			t.Errorf("not upgradable %v, want the pod", plan.NotUpgradable)
		}
	})

	t.Run("an evicted pod counts as unavailable until its controller replaces it", func(t *testing.T) {
		t.Parallel()
		in := recreating(t, v2, deployed("b"))
		in.Evictions = map[types.UID]Eviction{"uid-a": {Owner: "rs-1", Since: t0.Add(-time.Second)}}
		plan := compute(t, in)
		if len(plan.Evictions) != 0 || len(plan.EvictionsDone) != 0 {
			t.Fatalf("evictions %v, done %v: pod a is gone and not replaced", evictedNames(plan.Evictions), plan.EvictionsDone)
		}
		if c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated); c == nil ||
			c.Reason != appsv1beta1.ReasonRecreating || c.Message != "2 pods to recreate: 1 being replaced, 1 waiting; maxUnavailable 1 is used up" {
			t.Errorf("Recreated %+v", c)
		}
		if plan.Settled {
			t.Error("settled while a replacement is awaited")
		}

		// The replacement appears, injected with v2 and not ready yet: the
		// record is done, the replacement holds the share.
		replacement := makePod("a2").injected(t, v2.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0).notReady()
		in.Pods = pods(deployed("b"), replacement)
		plan = compute(t, in)
		if !cmp.Equal(plan.EvictionsDone, []types.UID{"uid-a"}) || len(plan.Evictions) != 0 {
			t.Fatalf("done %v, evictions %v: want a replaced, b waiting", plan.EvictionsDone, evictedNames(plan.Evictions))
		}

		// Ready: the next pod goes.
		in.Pods = pods(deployed("b"), makePod("a2").injected(t, v2.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0))
		in.Evictions = nil
		if plan = compute(t, in); !cmp.Equal(evictedNames(plan.Evictions), []string{"b"}) {
			t.Errorf("evicted %v, want [b]", evictedNames(plan.Evictions))
		}
	})

	t.Run("a replacement admitted without the sidecars holds the eviction's share until it is ready", func(t *testing.T) {
		t.Parallel()
		// Right after a SidecarSet's creation, the API server may admit a
		// replacement before it has seen the pod webhooks' new scope: the
		// replacement lacks the sidecars, so no "updated and not ready"
		// rule counts it. Its eviction's share must hold until it is ready.
		set := v1.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true")
		in := input(t, set.obj())
		replacement := makePod("a2").ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0).notReady()
		in.NotInjected = []*corev1.Pod{makePod("b").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj(), replacement.obj()}
		in.Evictions = map[types.UID]Eviction{"uid-a": {Owner: "rs-1", Since: t0.Add(-time.Second)}}
		plan := compute(t, in)
		if len(plan.Evictions) != 0 || len(plan.EvictionsDone) != 0 {
			t.Fatalf("evicted %v, done %v: a's replacement is not ready, maxUnavailable 1 is used up",
				evictedNames(plan.Evictions), plan.EvictionsDone)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Message != "3 pods to recreate: 1 being replaced, 2 waiting; maxUnavailable 1 is used up" {
			t.Errorf("Recreated %+v", c)
		}

		// Ready: the record is done and one pod goes, the replacement
		// first (it still lacks the sidecars, and it is the newest).
		in.NotInjected = []*corev1.Pod{makePod("b").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj(),
			makePod("a2").ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0).obj()}
		plan = compute(t, in)
		if !cmp.Equal(plan.EvictionsDone, []types.UID{"uid-a"}) || len(plan.Evictions) != 1 {
			t.Fatalf("done %v, evicted %v: want a replaced and one eviction", plan.EvictionsDone, evictedNames(plan.Evictions))
		}
	})

	t.Run("a replacement already credited to an eviction is no replacement of the next one in the same second", func(t *testing.T) {
		t.Parallel()
		// a was evicted and a2 replaced it, ready: a's record is done. In
		// the same second b is evicted. Creation times have a one-second
		// resolution, so a2 looks created since b's eviction: it must not
		// count as b's replacement, or b's share is freed before b's
		// replacement exists and c goes too (e2e: 3 of 8 unavailable with
		// maxUnavailable 2).
		set := v1.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true")
		a2 := makePod("a2").injected(t, set.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0)
		in := input(t, set.obj(), a2.obj())
		in.NotInjected = []*corev1.Pod{makePod("b").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj(),
			makePod("c").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj()}
		in.Now = t0.Add(300 * time.Millisecond)
		plan := compute(t, in)
		if len(plan.Evictions) != 1 {
			t.Fatalf("evicted %v, want one pod (maxUnavailable 1)", evictedNames(plan.Evictions))
		}
		first := plan.Evictions[0]

		// The next round, in the same second: the evicted pod is gone, its
		// replacement not created yet.
		in.Evictions = map[types.UID]Eviction{first.UID: evictionOf(first, t0.Add(400*time.Millisecond))}
		for i, p := range in.NotInjected {
			if p.UID == first.UID {
				in.NotInjected = append(in.NotInjected[:i:i], in.NotInjected[i+1:]...)
				break
			}
		}
		in.Now = t0.Add(800 * time.Millisecond)
		plan = compute(t, in)
		if len(plan.Evictions) != 0 || len(plan.EvictionsDone) != 0 {
			t.Fatalf("evicted %v, done %v: %s's replacement does not exist yet, maxUnavailable 1 is used up",
				evictedNames(plan.Evictions), plan.EvictionsDone, first.Pod.Name)
		}
	})

	t.Run("a replacement is credited to one eviction only, even when another one of its second waits", func(t *testing.T) {
		t.Parallel()
		// a and b were evicted in the same second; a2, a's replacement,
		// appears after both evictions were planned and is ready at once.
		// It is a's, not b's too: b's share holds until b's own
		// replacement exists, and c waits.
		set := v1.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true").maxUnavailable(intstr.FromInt32(2))
		a2 := makePod("a2").injected(t, set.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0)
		in := input(t, set.obj(), a2.obj())
		in.NotInjected = []*corev1.Pod{makePod("c").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj()}
		in.Evictions = map[types.UID]Eviction{
			"uid-a": {Owner: "rs-1", Since: t0.Add(200 * time.Millisecond)},
			"uid-b": {Owner: "rs-1", Since: t0.Add(600 * time.Millisecond)},
		}
		in.Now = t0.Add(800 * time.Millisecond)
		for round := 1; round <= 2; round++ {
			plan := compute(t, in)
			if len(plan.Evictions) != 1 {
				// a2 is ready: a's share is free, b's holds: one more pod.
				t.Fatalf("round %d: evicted %v, want c only (b's replacement does not exist yet)", round, evictedNames(plan.Evictions))
			}
			in.Evictions = settledRecords(in.Evictions, plan)
			if _, ok := in.Evictions["uid-b"]; !ok {
				t.Fatalf("round %d: b's eviction forgotten, records %v", round, in.Evictions)
			}
			in.Now = in.Now.Add(100 * time.Millisecond)
		}

		// b's replacement appears: every record is done.
		b2 := makePod("b2").injected(t, set.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1").created(t0.Add(time.Second)).notReady()
		in.Pods = pods(a2, b2)
		in.NotInjected = nil
		plan := compute(t, in)
		if !cmp.Equal(plan.EvictionsDone, []types.UID{"uid-a", "uid-b"}) {
			t.Errorf("done %v, want both records", plan.EvictionsDone)
		}
	})

	t.Run("a pod older than the eviction is no replacement, and a record expires", func(t *testing.T) {
		t.Parallel()
		in := recreating(t, v2.clone().maxUnavailable(intstr.FromInt32(2)), deployed("b"))
		in.Evictions = map[types.UID]Eviction{"uid-a": {Owner: "rs-1", Since: t0.Add(-time.Second)},
			"uid-z": {Owner: "rs-9", Since: t0.Add(-RecreateTimeout)}}
		plan := compute(t, in)
		if !cmp.Equal(plan.EvictionsDone, []types.UID{"uid-z"}) {
			t.Errorf("done %v, want the expired record only", plan.EvictionsDone)
		}
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"b"}) {
			t.Errorf("evicted %v, want [b] in the second share", got)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Message != "2 pods to recreate: 2 being replaced, 0 waiting; gave up waiting for the replacement of 1 evicted pod after 10m0s" {
			t.Errorf("Recreated %+v", c)
		}
	})

	t.Run("a refused eviction waits EvictionRetry, naming the PodDisruptionBudget", func(t *testing.T) {
		t.Parallel()
		in := recreating(t, v2, deployed("a"), deployed("b"))
		in.Refused = map[types.UID]Refusal{"uid-a": {Message: "Cannot evict pod as it would violate the pod's disruption budget.", At: t0.Add(-2 * time.Second)}}
		plan := compute(t, in)
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"b"}) {
			t.Errorf("evicted %v, want [b]: a waits for its budget", got)
		}
		if plan.RequeueAfter != 3*time.Second {
			t.Errorf("requeue after %v, want 3s", plan.RequeueAfter)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Reason != appsv1beta1.ReasonWaitingForPodDisruptionBudget {
			t.Fatalf("Recreated %+v", c)
		}
		if got := decisionOf(plan, "a"); got.Action != ActionBlocked {
			t.Errorf("decision %+v, want blocked", got)
		}

		in.Now = t0.Add(3 * time.Second)
		if plan = compute(t, in); !cmp.Equal(evictedNames(plan.Evictions), []string{"a"}) {
			t.Errorf("evicted %v after the retry delay, want [a] again", evictedNames(plan.Evictions))
		}
	})

	t.Run("pods created before the SidecarSet are recreated, paced and ordered like the others", func(t *testing.T) {
		t.Parallel()
		set := v1.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true").maxUnavailable(intstr.FromString("100%")).
			partition(intstr.FromInt32(1))
		in := input(t, set.obj())
		for _, name := range []string{"c", "a", "b"} {
			in.NotInjected = append(in.NotInjected, makePod(name).ownedBy("ReplicaSet", "apps/v1", "rs-1").obj())
		}
		in.NotInjected = append(in.NotInjected, makePod("bare").obj())
		plan := compute(t, in)
		if got := evictedNames(plan.Evictions); len(got) != 2 {
			t.Errorf("evicted %v: 3 recreatable pods, partition 1", got)
		}
		if plan.Status.MatchedPods != 0 || plan.Status.RecreatePendingPods != 3 {
			t.Errorf("status %+v", plan.Status)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Message != "3 pods to recreate: 2 being replaced, 1 waiting; partition 1 holds the rest; 1 pod not recreatable: "+
			"default/bare (lacks the sidecars; a bare pod: no controller would recreate it)" {
			t.Errorf("Recreated %+v", c)
		}
		if len(plan.Upgradable) != 0 {
			t.Errorf("pod conditions %v written on pods the SidecarSet never injected", plan.Upgradable)
		}
	})

	t.Run("pods that lack the sidecars wait until the API server has the pod webhooks' new scope", func(t *testing.T) {
		t.Parallel()
		set := v1.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true").maxUnavailable(intstr.FromInt32(2))
		in := input(t, set.obj())
		in.NotInjected = []*corev1.Pod{makePod("a").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj(),
			makePod("b").ownedBy("ReplicaSet", "apps/v1", "rs-1").obj()}
		in.NotInjectedFrom = t0.Add(3 * time.Second)
		plan := compute(t, in)
		if len(plan.Evictions) != 0 {
			t.Fatalf("evicted %v before the scope settled", evictedNames(plan.Evictions))
		}
		if plan.RequeueAfter != 3*time.Second {
			t.Errorf("requeue after %v, want 3s, when the scope has settled", plan.RequeueAfter)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		if c == nil || c.Reason != appsv1beta1.ReasonRecreating ||
			c.Message != "2 pods to recreate: 0 being replaced, 2 waiting; 2 wait until the API server has the pod webhooks' new scope" {
			t.Errorf("Recreated %+v", c)
		}
		if d := decisionOf(plan, "a"); d.Action != ActionWait || !strings.HasSuffix(d.Detail, "(until the API server has the pod webhooks' new scope)") {
			t.Errorf("decision %+v", d)
		}

		in.Now = in.NotInjectedFrom
		if plan = compute(t, in); !cmp.Equal(evictedNames(plan.Evictions), []string{"a", "b"}) {
			t.Errorf("evicted %v once the scope settled, want [a b]", evictedNames(plan.Evictions))
		}
	})

	t.Run("paused, nothing is evicted", func(t *testing.T) {
		t.Parallel()
		plan := compute(t, recreating(t, v2.clone().paused(), deployed("a")))
		if len(plan.Evictions) != 0 {
			t.Errorf("evicted %v while paused", evictedNames(plan.Evictions))
		}
		if c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated); c == nil || c.Reason != appsv1beta1.ReasonPaused {
			t.Errorf("Recreated %+v", c)
		}
	})

	t.Run("a pod still in the cache after its eviction is not evicted again", func(t *testing.T) {
		t.Parallel()
		in := recreating(t, v2.clone().maxUnavailable(intstr.FromInt32(2)), deployed("a"), deployed("b"))
		in.Evictions = map[types.UID]Eviction{"uid-a": {Owner: "rs-1", Since: t0}}
		plan := compute(t, in)
		if got := evictedNames(plan.Evictions); !cmp.Equal(got, []string{"b"}) {
			t.Errorf("evicted %v, want [b]", got)
		}
		if got := decisionOf(plan, "a"); got.Action != ActionInProgress {
			t.Errorf("decision %+v", got)
		}
	})
}

// The conditions of the other paths are absent from a plain rollout's
// status, which the manual reads in a few lines.
func TestPlan_NoResizeOrRecreateConditions(t *testing.T) {
	t.Parallel()
	v1 := makeSet("mesh").cold("agent", "agent:1")
	plan := compute(t, input(t, v1.clone().image("agent", "agent:2").obj(), pods(makePod("a").injected(t, v1.obj()))...))
	for _, c := range plan.Status.Conditions {
		if c.Type == appsv1beta1.SidecarSetConditionResized || c.Type == appsv1beta1.SidecarSetConditionRecreated {
			t.Errorf("condition %+v on an image rollout", c)
		}
	}
	if len(plan.Updates) != 1 {
		t.Errorf("updates %v", updatedNames(plan.Updates))
	}
}

// evictionOf is the record the shell keeps of an eviction the API server
// accepted at since.
func evictionOf(e PodEviction, since time.Time) Eviction {
	return Eviction{Owner: e.Owner, Since: since, NotReplacements: e.Siblings}
}

// settledRecords applies a round's outcome to the eviction records, as the
// shell does.
func settledRecords(records map[types.UID]Eviction, plan Plan) map[types.UID]Eviction {
	out := maps.Clone(records)
	for _, uid := range plan.EvictionsDone {
		delete(out, uid)
	}
	for uid, by := range plan.EvictionsReplaced {
		e := out[uid]
		e.ReplacedBy = by
		out[uid] = e
	}
	return out
}
