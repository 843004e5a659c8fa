package rollout

import (
	"testing"

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
