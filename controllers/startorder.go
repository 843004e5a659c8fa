package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// workFirst enqueues a SidecarSet on each of its events as a controller's
// For does (handler.EnqueueRequestForObject), except for the SidecarSets
// listed when the watch starts (the manager's start, a new leader) that
// have work to do: controller-runtime queues the whole initial list behind
// every other request, in name order, and with thousands of SidecarSets one
// that changed while no manager ran, or whose rollout was under way, would
// wait for every settled one to be recounted first. Those go at the normal
// priority instead; the settled ones stay low.
type workFirst struct {
	handler.EnqueueRequestForObject
}

// Create implements handler.EventHandler.
func (w *workFirst) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	s, isSet := e.Object.(*appsv1beta1.SidecarSet)
	if !ok || !e.IsInInitialList || !isSet || !hasWork(s) {
		w.EnqueueRequestForObject.Create(ctx, e, q)
		return
	}
	normal := 0
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: &normal}, reconcile.Request{NamespacedName: types.NamespacedName{Name: s.Name}})
}

// hasWork: the SidecarSet's status does not describe its spec yet, or its
// pods are being upgraded (an update strategy that upgrades, not paused,
// and pods left on an older revision).
func hasWork(s *appsv1beta1.SidecarSet) bool {
	if s.Status.ObservedGeneration != s.Generation {
		return true
	}
	strategy := s.Spec.UpdateStrategy
	return strategy.Type != appsv1beta1.NotUpdateSidecarSetStrategyType && !strategy.Paused &&
		s.Status.UpdatedPods < s.Status.MatchedPods
}
