package controllers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// At start the SidecarSets with work to do are reconciled before the
// settled ones, whatever their names; later events keep their order.
func TestWorkFirst_SidecarSetsWithWorkFirstAtStart(t *testing.T) {
	t.Parallel()
	set := func(name string, generation, observed int64, matched, updated int32, mutate func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation}}
		s.Status = appsv1beta1.SidecarSetStatus{ObservedGeneration: observed, MatchedPods: matched, UpdatedPods: updated}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	notUpdate := func(s *appsv1beta1.SidecarSet) {
		s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	}
	paused := func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }
	// The informer lists by name: the ones with work come last.
	listed := []*appsv1beta1.SidecarSet{
		set("a-settled", 2, 2, 10, 10, nil),
		set("b-not-update", 2, 2, 10, 3, notUpdate),
		set("c-paused", 2, 2, 10, 3, paused),
		set("d-settled", 1, 1, 0, 0, nil),
		set("x-rolling", 3, 3, 10, 4, nil),
		set("y-changed", 4, 3, 10, 10, nil),
		set("z-new", 1, 0, 0, 0, nil),
	}
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := &workFirst{}
	for _, s := range listed {
		h.Create(context.Background(), event.CreateEvent{Object: s, IsInInitialList: true}, q)
	}
	var got []string
	for q.Len() > 0 {
		req, _ := q.Get()
		got = append(got, req.Name)
		q.Done(req)
	}
	want := []string{"x-rolling", "y-changed", "z-new", "a-settled", "b-not-update", "c-paused", "d-settled"}
	if len(got) != len(want) {
		t.Fatalf("reconciled %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reconciled in the order %v, want %v", got, want)
		}
	}

	// After the start, a creation is not put before what is queued.
	h.Create(context.Background(), event.CreateEvent{Object: set("m-settled", 1, 1, 0, 0, nil), IsInInitialList: true}, q)
	h.Create(context.Background(), event.CreateEvent{Object: set("n-created", 1, 0, 0, 0, nil)}, q)
	h.Create(context.Background(), event.CreateEvent{Object: set("o-created", 1, 0, 0, 0, nil)}, q)
	var later []string
	for q.Len() > 0 {
		req, _ := q.Get()
		later = append(later, req.Name)
		q.Done(req)
	}
	if len(later) != 3 || later[0] != "n-created" || later[1] != "o-created" || later[2] != "m-settled" {
		t.Errorf("after the start, reconciled in the order %v, want [n-created o-created m-settled]", later)
	}
}
