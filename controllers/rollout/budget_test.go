package rollout

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestResolvePartition_Values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		v       *intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		{"nil is 0", nil, 10, 0, false},
		{"an integer is used as is", new(intstr.FromInt32(4)), 10, 4, false},
		{"an integer above the total is clamped", new(intstr.FromInt32(40)), 10, 10, false},
		{"a percentage rounds up", new(intstr.FromString("18%")), 1000, 180, false},
		{"1% of 5 rounds up to 1", new(intstr.FromString("1%")), 5, 1, false},
		{"99% of 5 rounds up to 5 and keeps one pod fewer", new(intstr.FromString("99%")), 5, 4, false},
		{"100% holds every pod", new(intstr.FromString("100%")), 5, 5, false},
		{"99% of a single pod holds it", new(intstr.FromString("99%")), 1, 1, false},
		{"a malformed string is an error", new(intstr.FromString("ten")), 5, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolvePartition(tc.v, tc.total)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("resolvePartition = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestResolveMaxUnavailable_Values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		v       *intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		{"nil is 1", nil, 10, 1, false},
		{"an integer is used as is", new(intstr.FromInt32(30)), 10, 30, false},
		{"0 is 0", new(intstr.FromInt32(0)), 10, 0, false},
		{"5% of 5 pods is 1, never 0", new(intstr.FromString("5%")), 5, 1, false},
		{"10% of 1000 pods is 100", new(intstr.FromString("10%")), 1000, 100, false},
		{"0% is 0", new(intstr.FromString("0%")), 1000, 0, false},
		{"above 100% counts as 100%", new(intstr.FromString("150%")), 8, 8, false},
		// OpenKruise: 0 with the error ignored.
		{"a malformed string is an error", new(intstr.FromString("5")), 5, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolveMaxUnavailable(tc.v, tc.total)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("resolveMaxUnavailable = %d, want %d", got, tc.want)
			}
		})
	}
}

// The worked table of the reference behaviour (3.9) where it holds for us,
// plus one row per fix. "upgraded" pods are patched to v2, "completed" ones
// run it.
func TestPlan_PartitionAndMaxUnavailable(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1")
	v2 := v1.clone().image("sidecar", "agent:2")
	v3 := v1.clone().image("sidecar", "agent:3")
	mu := func(v intstr.IntOrString) *setWrapper { return v2.clone().maxUnavailable(v) }
	tests := []struct {
		name                        string
		set                         *setWrapper
		total, upgraded, completed  int
		mutate                      func(ps []*podWrapper)
		wantUpdates, wantNotUpgrade int
	}{
		{name: "100/30/26 with maxUnavailable 10 upgrades 6", set: mu(intstr.FromInt32(10)),
			total: 100, upgraded: 30, completed: 26, wantUpdates: 6},
		{name: "1000/300/260 with maxUnavailable 10% upgrades 60", set: mu(intstr.FromString("10%")),
			total: 1000, upgraded: 300, completed: 260, wantUpdates: 60},
		{name: "1000/300/250 with maxUnavailable 5% upgrades none", set: mu(intstr.FromString("5%")),
			total: 1000, upgraded: 300, completed: 250, wantUpdates: 0},
		{name: "100/30/27 with maxUnavailable 100 upgrades the other 70", set: mu(intstr.FromInt32(100)),
			total: 100, upgraded: 30, completed: 27, wantUpdates: 70},
		{name: "1000/800/760 with partition 180 upgrades 20", set: mu(intstr.FromInt32(100)).partition(intstr.FromInt32(180)),
			total: 1000, upgraded: 800, completed: 760, wantUpdates: 20},
		{name: "1000/800/760 with partition 100 upgrades 60 (the budget binds)", set: mu(intstr.FromInt32(100)).partition(intstr.FromInt32(100)),
			total: 1000, upgraded: 800, completed: 760, wantUpdates: 60},
		{name: "1000/800/760 with partition 18% upgrades 20", set: mu(intstr.FromInt32(100)).partition(intstr.FromString("18%")),
			total: 1000, upgraded: 800, completed: 760, wantUpdates: 20},
		{name: "1000/800/760 with partition 10% upgrades 60", set: mu(intstr.FromInt32(100)).partition(intstr.FromString("10%")),
			total: 1000, upgraded: 800, completed: 760, wantUpdates: 60},
		{name: "an update selector limits the upgrade to its 30 pods", set: mu(intstr.FromInt32(100)).updateSelector("group", "test"),
			total: 1000, wantUpdates: 30,
			mutate: func(ps []*podWrapper) {
				for _, p := range ps[:30] {
					p.label("group", "test")
				}
			}},
		{name: "a change other than images makes all 100 pods not upgradable",
			set: mu(intstr.FromInt32(100)).mode("sidecar", "fast"), total: 100, wantNotUpgrade: 100},
		{name: "maxUnavailable 5% of 5 pods upgrades 1", set: mu(intstr.FromString("5%")), total: 5, wantUpdates: 1},
		{name: "partition 99% of 5 pods keeps 4 and upgrades 1", set: mu(intstr.FromInt32(5)).partition(intstr.FromString("99%")),
			total: 5, wantUpdates: 1},
		{name: "partition 1% of 5 pods keeps 1 and upgrades 4", set: mu(intstr.FromInt32(5)).partition(intstr.FromString("1%")),
			total: 5, wantUpdates: 4},

		// Seeds: partition counts the pods kept on the old version.
		{name: "partition 90 of 100 upgrades 10", set: mu(intstr.FromInt32(100)).partition(intstr.FromInt32(90)),
			total: 100, wantUpdates: 10},
		{name: "partition 80 with maxUnavailable 30 upgrades 20 at once", set: mu(intstr.FromInt32(30)).partition(intstr.FromInt32(80)),
			total: 100, wantUpdates: 20},
		{name: "partition 50 with maxUnavailable 10 upgrades 10 at once", set: mu(intstr.FromInt32(10)).partition(intstr.FromInt32(50)),
			total: 100, wantUpdates: 10},

		// Fix 4.1.10. OpenKruise: 40, since the 10 pods still finishing an
		// upgrade to v2 are left out of the list the partition is taken from.
		{name: "pods finishing an earlier upgrade count toward the partition", set: v3.clone().maxUnavailable(intstr.FromInt32(100)).partition(intstr.FromInt32(50)),
			total: 100, upgraded: 10, wantUpdates: 50},
		// Fix 4.1.11. OpenKruise: 4 (the 3 not-ready pods bypass the budget).
		{name: "not-ready pods on the old version take a share of the budget", set: mu(intstr.FromInt32(1)),
			total: 10, wantUpdates: 1,
			mutate: func(ps []*podWrapper) { ps[1].notReady(); ps[4].notReady(); ps[7].notReady() }},
		// Fix 4.1.11. OpenKruise: 2 (only the not-ready pods).
		{name: "maxUnavailable 0 upgrades no ready pod nor not-ready one", set: mu(intstr.FromInt32(0)),
			total: 10, wantUpdates: 0,
			mutate: func(ps []*podWrapper) { ps[1].notReady(); ps[4].notReady() }},
		// Fix 4.1.11. OpenKruise: 1 (the budget is used up, only updated pods count as unavailable
		// and pod-0 is not updated to v3; it is picked because it is not ready) + 1.
		{name: "a pod stuck on a bad image is upgraded again without a new share", set: v3.clone().maxUnavailable(intstr.FromInt32(1)),
			total: 10, upgraded: 1, wantUpdates: 1,
			mutate: func(ps []*podWrapper) { ps[0].stuck("sidecar") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := fleet(t, v1.obj(), v2.obj(), tc.total, tc.upgraded, tc.completed)
			if tc.mutate != nil {
				tc.mutate(ps)
			}
			got := compute(t, input(t, tc.set.obj(), pods(ps...)...))
			counts := []int{len(got.Updates), len(got.NotUpgradable)}
			if diff := cmp.Diff([]int{tc.wantUpdates, tc.wantNotUpgrade}, counts); diff != "" {
				t.Errorf("[updates, not upgradable] (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod stuck on a bad image is picked first by the fix and nothing else.
func TestPlan_StuckPodIsFixedFirst(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1")
	bad := v1.clone().image("sidecar", "agent:bad")
	fix := v1.clone().image("sidecar", "agent:3").maxUnavailable(intstr.FromInt32(1))
	ps := fleet(t, v1.obj(), bad.obj(), 5, 1, 0)
	ps[0].stuck("sidecar")
	got := compute(t, input(t, fix.obj(), pods(ps...)...))
	if diff := cmp.Diff([]string{"pod-0"}, updatedNames(got.Updates)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

// The seed's example run to the end: 100 pods, partition 50, maxUnavailable
// 10 upgrade 50 pods in total, never more than 10 unavailable at once.
func TestPlan_PartitionRollsOutToTheEnd(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1")
	v2 := v1.clone().image("sidecar", "agent:2").maxUnavailable(intstr.FromInt32(10)).partition(intstr.FromInt32(50))
	c := newCluster(pods(fleet(t, v1.obj(), v1.obj(), 100, 0, 0)...))
	set := v2.obj()
	for round := range 20 {
		plan := compute(t, input(t, set, c.list()...))
		if n := len(plan.Updates); n > 10 {
			t.Fatalf("round %d upgrades %d pods, maxUnavailable is 10", round, n)
		}
		c.apply(t, plan)
		if got := c.unavailable(t, set); got > 10 {
			t.Fatalf("round %d leaves %d pods unavailable", round, got)
		}
		c.kubelet()
		set.Status.Conditions = plan.Status.Conditions
	}
	plan := compute(t, input(t, set, c.list()...))
	if plan.Status.UpdatedPods != 50 || len(plan.Updates) != 0 {
		t.Errorf("after the rollout: %d updated, %d more updates; want 50 and 0", plan.Status.UpdatedPods, len(plan.Updates))
	}
	if got := conditionReason(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); got != appsv1beta1.ReasonPartitionHeld {
		t.Errorf("Progressing reason = %s, want %s", got, appsv1beta1.ReasonPartitionHeld)
	}
}

// The manual's partition is the number of pods kept on the old version,
// counted over every matched pod: pods that cannot be upgraded in place are
// among them. OpenKruise (4.1 #10) takes it from the upgradable pods only,
// so its rows would upgrade 0, 0, 0, 0, 0 and 3 pods.
func TestPlan_PartitionCountsEveryMatchedPod(t *testing.T) {
	t.Parallel()
	v0 := makeSet("s").cold("sidecar", "agent:1")
	v1 := v0.clone().mode("sidecar", "fast")
	v2 := v1.clone().image("sidecar", "agent:2").maxUnavailable(intstr.FromInt32(100))
	tests := []struct {
		name                  string
		partition             intstr.IntOrString
		matched, stuck        int
		wantUpdates, wantHeld int
	}{
		{name: "6 matched, 4 not upgradable, partition 2: both others are upgraded",
			partition: intstr.FromInt32(2), matched: 6, stuck: 4, wantUpdates: 2},
		{name: "6 matched, 4 not upgradable, partition 50% (3): both others are upgraded",
			partition: intstr.FromString("50%"), matched: 6, stuck: 4, wantUpdates: 2},
		{name: "6 matched, 4 not upgradable, partition 5: one of the others is upgraded",
			partition: intstr.FromInt32(5), matched: 6, stuck: 4, wantUpdates: 1, wantHeld: 1},
		{name: "6 matched, 4 not upgradable, partition 83% (5): one of the others is upgraded",
			partition: intstr.FromString("83%"), matched: 6, stuck: 4, wantUpdates: 1, wantHeld: 1},
		{name: "6 matched, 4 not upgradable, partition 6: none is upgraded",
			partition: intstr.FromInt32(6), matched: 6, stuck: 4, wantUpdates: 0, wantHeld: 2},
		{name: "10 matched, 2 not upgradable, partition 5: 5 end on the new version",
			partition: intstr.FromInt32(5), matched: 10, stuck: 2, wantUpdates: 5, wantHeld: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := make([]*podWrapper, tc.matched)
			for i := range ps {
				from := v1
				if i < tc.stuck {
					from = v0
				}
				ps[i] = makePod(fmt.Sprintf("pod-%d", i)).injected(t, from.obj())
			}
			got := compute(t, input(t, v2.clone().partition(tc.partition).obj(), pods(ps...)...))
			if len(got.Updates) != tc.wantUpdates || len(got.NotUpgradable) != tc.stuck {
				t.Errorf("%d updates and %d not upgradable, want %d and %d", len(got.Updates), len(got.NotUpgradable), tc.wantUpdates, tc.stuck)
			}
			if got := tc.matched - tc.stuck - len(got.Updates); got != tc.wantHeld {
				t.Errorf("%d upgradable pods held back, want %d", got, tc.wantHeld)
			}
		})
	}
}

func TestBudget_Pick(t *testing.T) {
	t.Parallel()
	stuck := func(name string) *podView {
		v := viewsOf([]*podWrapper{makePod(name)})[0]
		v.consistent = false
		return v
	}
	tests := []struct {
		name    string
		b       budget
		pods    []*podView
		want    []string
		wantOut batch
	}{
		{
			name:    "the partition cuts first, the budget second",
			b:       budget{matched: 10, partition: 7, maxUnavailable: 2},
			pods:    scatterFleet(10),
			want:    []string{"pod-0", "pod-1"},
			wantOut: batch{byPartition: 7, byBudget: 1, unavailable: 2},
		},
		{
			name:    "a stuck pod is picked free of the budget after it is used up",
			b:       budget{matched: 3, maxUnavailable: 1, unavailable: 1},
			pods:    []*podView{scatterFleet(1)[0], stuck("stuck")},
			want:    []string{"stuck"},
			wantOut: batch{byBudget: 1, unavailable: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := tc.b.pick(tc.pods, func(*podView) bool { return true })
			if diff := cmp.Diff(tc.want, viewNames(out.chosen)); diff != "" {
				t.Errorf("chosen (-want +got):\n%s", diff)
			}
			out.chosen = nil
			if diff := cmp.Diff(tc.wantOut, out, cmp.AllowUnexported(batch{})); diff != "" {
				t.Errorf("batch (-want +got):\n%s", diff)
			}
		})
	}
}
