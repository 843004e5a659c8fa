package rollout

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPlan_Decisions(t *testing.T) {
	t.Parallel()
	v1 := makeSet("mesh").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(2)).partition(intstr.FromInt32(1))
	var ps []*podWrapper
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		ps = append(ps, makePod(name).injected(t, v1.obj()))
	}
	ps = append(ps, makePod("f").injected(t, v2.obj()), makePod("g").injected(t, v1.obj()))
	// Partition 1 of 7 lets 6 pods run v2: f does, 5 more go, 2 a batch.
	plan := compute(t, input(t, v2.obj(), pods(ps...)...))
	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: n} }
	want := []Decision{
		{Pod: key("a"), Action: ActionImage, Detail: "agent agent:1→agent:2", Batch: 1},
		{Pod: key("b"), Action: ActionImage, Detail: "agent agent:1→agent:2", Batch: 1},
		{Pod: key("c"), Action: ActionImage, Detail: "agent agent:1→agent:2", Batch: 2},
		{Pod: key("d"), Action: ActionImage, Detail: "agent agent:1→agent:2", Batch: 2},
		{Pod: key("e"), Action: ActionImage, Detail: "agent agent:1→agent:2", Batch: 3},
		{Pod: key("f"), Action: ActionNothing, Detail: "runs the current revision"},
		{Pod: key("g"), Action: ActionWait, Detail: "agent agent:1→agent:2 (held back by the partition)"},
	}
	if diff := cmp.Diff(want, plan.Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// Without Explain, a plan's decisions are those of the blocked pods, whole,
// and the refused evictions (pod and refusal), as the explained plan has
// them: what the controller announces, without the batches and the other
// pods' details. The rest of the plan is the same.
func TestPlan_DecisionsUnexplained(t *testing.T) {
	t.Parallel()
	v1, v2, deployed := recreateFixture(t)
	for _, set := range []*setWrapper{v2, v2.clone().paused(), v1.clone().mode("agent", "b")} {
		in := input(t, set.obj(), pods(deployed("a"), deployed("b"), deployed("c"), makePod("bare").injected(t, v1.obj()))...)
		in.Revisions = revisionsOf(t, v1.obj())
		in.Refused = map[types.UID]Refusal{"uid-a": {Message: "Cannot evict pod as it would violate the pod's disruption budget.", At: t0.Add(-2 * time.Second)}}
		explained := compute(t, in)
		in.Explain = false
		unexplained := compute(t, in)

		var want []Decision
		for _, d := range explained.Decisions {
			switch {
			case d.Action == ActionBlocked:
				want = append(want, d)
			case d.Refusal != "":
				want = append(want, Decision{Pod: d.Pod, Action: ActionWait, Refusal: d.Refusal})
			}
		}
		byPod := func(a, b Decision) int { return compareKeys(a.Pod, b.Pod) }
		slices.SortFunc(want, byPod)
		got := slices.SortedFunc(slices.Values(unexplained.Decisions), byPod)
		if len(want) == 0 {
			t.Fatalf("paused %v: the fixture has no blocked pod nor refused eviction", set.obj().Spec.UpdateStrategy.Paused)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("paused %v: unexplained decisions (-want +got):\n%s", set.obj().Spec.UpdateStrategy.Paused, diff)
		}
		explained.Decisions, unexplained.Decisions = nil, nil
		if diff := cmp.Diff(explained, unexplained); diff != "" {
			t.Errorf("paused %v: the plans differ beyond their decisions (-explained +unexplained):\n%s", set.obj().Spec.UpdateStrategy.Paused, diff)
		}
	}
}
