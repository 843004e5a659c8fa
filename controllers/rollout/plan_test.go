package rollout

import (
	"slices"
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

func TestCompute_RejectsIncompleteInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Input
	}{
		{"no SidecarSet is an error", Input{}},
		{"no hashes is an error", Input{SidecarSet: makeSet("s").obj()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Compute(tc.in); err == nil {
				t.Error("Compute succeeded, want an error")
			}
		})
	}
}

// One pod against SidecarSet v2 (maxUnavailable 5): is it upgraded, reported
// not upgradable, blocked, or left alone?
func TestPlan_Classification(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(5))
	v3 := v1.clone().image("agent", "agent:3").maxUnavailable(intstr.FromInt32(5))
	type outcome struct {
		Updates, NotUpgradable, Blocked []string
	}
	tests := []struct {
		name     string
		set      *setWrapper
		pod      *podWrapper
		inFlight map[types.UID]InFlight
		want     outcome
	}{
		{name: "a pod on the old images is upgraded", set: v2,
			pod: makePod("p").injected(t, v1.obj()), want: outcome{Updates: []string{"p"}}},
		{name: "an updated pod is left alone", set: v2,
			pod: makePod("p").injected(t, v2.obj()), want: outcome{}},
		{name: "a pod outside the update selector is left alone", set: v2.clone().updateSelector("canary", "true"),
			pod: makePod("p").injected(t, v1.obj()), want: outcome{}},
		{name: "a pod inside the update selector is upgraded", set: v2.clone().updateSelector("canary", "true"),
			pod: makePod("p").injected(t, v1.obj()).label("canary", "true"), want: outcome{Updates: []string{"p"}}},
		{name: "a pod differing in more than images is not upgradable", set: v2.clone().mode("agent", "x"),
			pod: makePod("p").injected(t, v1.obj()), want: outcome{NotUpgradable: []string{"p"}}},
		{name: "a pod without a without-image hash is not upgradable", set: v2,
			pod:  makePod("p").injected(t, v1.obj()).annotation(appsv1beta1.SidecarSetHashWithoutImageAnnotation, "{}"),
			want: outcome{NotUpgradable: []string{"p"}}},
		{name: "a pod finishing an earlier upgrade is skipped this round", set: v3,
			pod: makePod("p").injected(t, v1.obj()).upgradedTo(t, v2.obj()), want: outcome{}},
		{name: "a pod patched and not yet observed is skipped", set: v2,
			pod:      makePod("p").injected(t, v1.obj()),
			inFlight: map[types.UID]InFlight{"uid-p": {Hash: "whatever", Since: t0.Add(-time.Minute)}}, want: outcome{}},
		{name: "a pod with unreadable annotations is blocked", set: v2,
			pod:  makePod("p").injected(t, v1.obj()).annotation(appsv1beta1.InPlaceUpdateStateAnnotation, "{"),
			want: outcome{Blocked: []string{"p"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, tc.set.obj(), tc.pod.obj())
			in.InFlight = tc.inFlight
			plan := compute(t, in)
			got := outcome{Updates: updatedNames(plan.Updates)}
			for _, k := range plan.NotUpgradable {
				got.NotUpgradable = append(got.NotUpgradable, k.Name)
			}
			for _, b := range plan.Blocked {
				got.Blocked = append(got.Blocked, b.Pod.Name)
			}
			if diff := cmp.Diff(tc.want, got, cmpEmpty); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.Transformer("nilIfEmpty", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

func TestPlan_InFlight(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	h2 := hashesOf(t, v2.obj()).Hash
	old := func(name string) *podWrapper { return makePod(name).injected(t, v1.obj()) }
	tests := []struct {
		name        string
		pods        []*podWrapper
		inFlight    map[types.UID]InFlight
		wantUpdates []string
		wantDone    []types.UID
		wantExpired []types.UID
		wantRequeue time.Duration
	}{
		{
			name:        "a patched pod not yet observed takes the budget and asks for a requeue at its expiry",
			pods:        []*podWrapper{old("a"), old("b")},
			inFlight:    map[types.UID]InFlight{"uid-a": {Hash: h2, Since: t0.Add(-time.Minute)}},
			wantUpdates: []string{},
			wantRequeue: 4 * time.Minute,
		},
		{
			name:        "a pod showing the hash it was patched to is done",
			pods:        []*podWrapper{makePod("a").injected(t, v1.obj()).upgradedTo(t, v2.obj()).completed(), old("b")},
			inFlight:    map[types.UID]InFlight{"uid-a": {Hash: h2, Since: t0.Add(-time.Minute)}},
			wantUpdates: []string{"b"},
			wantDone:    []types.UID{"uid-a"},
		},
		{
			name:        "a vanished pod is done and holds nothing",
			pods:        []*podWrapper{old("b")},
			inFlight:    map[types.UID]InFlight{"uid-gone": {Hash: h2, Since: t0.Add(-time.Minute)}},
			wantUpdates: []string{"b"},
			wantDone:    []types.UID{"uid-gone"},
		},
		{
			// OpenKruise: the expectation never expires and the rollout stalls.
			name:        "an entry older than the timeout is given up and the pod planned again",
			pods:        []*podWrapper{old("a").created(t0)},
			inFlight:    map[types.UID]InFlight{"uid-a": {Hash: h2, Since: t0.Add(-InFlightTimeout)}},
			wantUpdates: []string{"a"},
			wantDone:    []types.UID{"uid-a"},
			wantExpired: []types.UID{"uid-a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, v2.obj(), pods(tc.pods...)...)
			in.InFlight = tc.inFlight
			plan := compute(t, in)
			if diff := cmp.Diff(tc.wantUpdates, updatedNames(plan.Updates), cmpEmpty); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			got := [][]types.UID{plan.Done, plan.Expired}
			if diff := cmp.Diff([][]types.UID{tc.wantDone, tc.wantExpired}, got); diff != "" {
				t.Errorf("[done, expired] (-want +got):\n%s", diff)
			}
			if plan.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", plan.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

func TestPlan_StatusCounts(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2")
	ps := []*podWrapper{
		makePod("old-ready").injected(t, v1.obj()),
		makePod("old-not-ready").injected(t, v1.obj()).notReady(),
		makePod("upgrading").injected(t, v1.obj()).upgradedTo(t, v2.obj()),
		makePod("upgraded").injected(t, v1.obj()).upgradedTo(t, v2.obj()).completed(),
		makePod("upgraded-not-ready").injected(t, v2.obj()).notReady(),
		makePod("unreadable").injected(t, v2.obj()).annotation(appsv1beta1.SidecarSetHashAnnotation, "["),
	}
	want := appsv1beta1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 3, ReadyPods: 2, UpdatedReadyPods: 1}
	for _, s := range []*setWrapper{v2, v2.clone().notUpdate(), v2.clone().paused()} {
		t.Run("counts for strategy "+string(s.obj().Spec.UpdateStrategy.Type)+pausedSuffix(s), func(t *testing.T) {
			t.Parallel()
			got := podCounts(compute(t, input(t, s.obj(), pods(ps...)...)).Status)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func pausedSuffix(s *setWrapper) string {
	if s.Spec.UpdateStrategy.Paused {
		return " paused"
	}
	return ""
}

// The plan does not depend on the order of the input pods.
func TestPlan_Deterministic(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromString("30%"))
	ps := pods(fleet(t, v1.obj(), v2.obj(), 30, 6, 3)...)
	first := compute(t, input(t, v2.obj(), ps...))
	reversed := slices.Clone(ps)
	slices.Reverse(reversed)
	second := compute(t, input(t, v2.obj(), reversed...))
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("plans differ with the pod order (-first +second):\n%s", diff)
	}
}

func BenchmarkPlan(b *testing.B) {
	in := benchmarkInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan_AsTheController plans the pods as the controller does: as
// its cache holds them (their SidecarSet state annotations compacted,
// podstate.Compact) and without explaining every decision.
//
// "scatter" is benchmarkInput; "plain" is the shape of the rollout bench
// (test/bench): 1 000 pods at 10% and no priority or scatter, 300 pods
// done, 90 upgrading, so that each plan patches the 10 the budget frees.
//
// The controller keeps a Memo between the plans of a SidecarSet: "memo"
// plans again with 5% of the pods changed since the last plan (a new
// resourceVersion), as a rollout's plans follow its pods' events; "none"
// reads every pod in every plan.
func BenchmarkPlan_AsTheController(b *testing.B) {
	for _, shape := range []struct {
		name string
		in   Input
	}{{"scatter", benchmarkInput(b)}, {"plain", plainBenchmarkInput(b)}} {
		in := shape.in
		in.Explain = false
		// Each pod in two versions, which differ in their resourceVersion.
		versions := make([][2]*corev1.Pod, len(in.Pods))
		for i, pod := range in.Pods {
			annotations, ok := podstate.Compact(pod.Annotations)
			if !ok {
				b.Fatalf("pod %s: annotations not compacted", pod.Name)
			}
			in.Pods[i] = pod.DeepCopy()
			in.Pods[i].Annotations = annotations
			versions[i][0], versions[i][1] = in.Pods[i], in.Pods[i].DeepCopy()
			versions[i][1].ResourceVersion += "0"
		}
		for _, tc := range []struct {
			name string
			memo bool
		}{{"memo=none", false}, {"memo=kept,changed=5%", true}} {
			b.Run(shape.name+"/"+tc.name, func(b *testing.B) {
				in := in
				in.Pods = slices.Clone(in.Pods)
				if tc.memo {
					in.Memo = &Memo{}
				}
				changed := len(in.Pods) / 20
				b.ReportAllocs()
				round := 0
				for b.Loop() {
					for j := range changed {
						i := (round*changed + j) % len(in.Pods)
						in.Pods[i] = versions[i][(round*changed+j)/len(in.Pods)%2]
					}
					round++
					if _, err := Compute(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// plainBenchmarkInput is a rollout of 1 000 pods at 10%, with no priority
// or scatter: 300 pods done and 90 upgrading.
func plainBenchmarkInput(b *testing.B) Input {
	b.Helper()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromString("10%"))
	in := input(b, v2.obj(), pods(fleet(b, v1.obj(), v2.obj(), 1000, 390, 300)...)...)
	if p, err := Compute(in); err != nil || len(p.Updates) != 10 {
		b.Fatalf("the plain rollout's plan: %d updates (want 10), error %v", len(p.Updates), err)
	}
	return in
}

// benchmarkInput is a rollout of 1 000 pods at 10%, 300 of them updated
// and 250 upgrading, with a priority and a scatter strategy.
func benchmarkInput(b *testing.B) Input {
	b.Helper()
	v1 := makeSet("s").cold("agent", "agent:1").cold("log", "log:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromString("10%"))
	v2.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
		WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
			{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z1"}}},
		},
	}
	v2.Spec.UpdateStrategy.ScatterStrategy = appsv1beta1.UpdateScatterStrategy{{Key: "zone", Value: "*"}}
	ws := fleet(b, v1.obj(), v2.obj(), 1000, 300, 250)
	for i, w := range ws {
		w.label("zone", []string{"z1", "z2", "z3"}[i%3])
	}
	return input(b, v2.obj(), pods(ws...)...)
}

// A settled plan is one no pod event can make act: the controller may then
// batch the events that only move the status counts.
func TestPlan_Settled(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	h2 := hashesOf(t, v2.obj()).Hash
	tests := []struct {
		name     string
		set      *setWrapper
		pods     []*podWrapper
		inFlight map[types.UID]InFlight
		want     bool
	}{
		{name: "every pod updated and consistent", set: v2,
			pods: []*podWrapper{makePod("a").injected(t, v2.obj()), makePod("b").injected(t, v2.obj()).notReady()}, want: true},
		{name: "no pods", set: v2, want: true},
		{name: "NotUpdate with old pods", set: v2.clone().notUpdate(),
			pods: []*podWrapper{makePod("a").injected(t, v1.obj())}, want: true},
		{name: "paused with old pods", set: v2.clone().paused(),
			pods: []*podWrapper{makePod("a").injected(t, v1.obj())}, want: true},
		{name: "an upgrade to issue", set: v2,
			pods: []*podWrapper{makePod("a").injected(t, v1.obj())}, want: false},
		{name: "a pod waiting for the budget", set: v2,
			pods: []*podWrapper{makePod("a").injected(t, v1.obj()).notReady(), makePod("b").injected(t, v1.obj())}, want: false},
		{name: "a pod finishing its upgrade", set: v2,
			pods: []*podWrapper{makePod("a").injected(t, v1.obj()).upgradedTo(t, v2.obj())}, want: false},
		{name: "an upgrade in flight, even paused", set: v2.clone().paused(),
			pods:     []*podWrapper{makePod("a").injected(t, v1.obj())},
			inFlight: map[types.UID]InFlight{"uid-a": {Hash: h2, Since: t0}}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := input(t, tc.set.obj(), pods(tc.pods...)...)
			in.InFlight = tc.inFlight
			if got := compute(t, in).Settled; got != tc.want {
				t.Errorf("Settled = %v, want %v", got, tc.want)
			}
		})
	}
}

// earliest keeps the smaller positive duration and never returns a
// negative one: the callers pass deadlines that may have passed.
func TestEarliest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, 0, 0},
		{0, 3, 3},
		{3, 0, 3},
		{2, 3, 2},
		{3, 2, 2},
		{0, -1, 0},
		{-1, 0, 0},
		{-1, -2, 0},
		{-1, 4, 4},
		{4, -1, 4},
	} {
		if got := earliest(tc.a, tc.b); got != tc.want {
			t.Errorf("earliest(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
