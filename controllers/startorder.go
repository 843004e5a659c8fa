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

// workFirst enqueues a SidecarSet on each of its events, as a controller's
// For does, except for the SidecarSets listed when the watch starts (the
// manager's start, a new leader): controller-runtime queues all of those
// behind every other request, in name order, and with thousands of
// SidecarSets one that changed while no manager ran, or whose rollout was
// under way, would wait for every settled one to be recounted first. Those
// go at the normal priority instead; the settled ones stay low.
func workFirst() handler.EventHandler {
	request := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// handler.Funcs already gives the initial list's events the low
			// priority, as the queue's default for this call.
			pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
			s, isSet := e.Object.(*appsv1beta1.SidecarSet)
			if !ok || !e.IsInInitialList || !isSet || !hasWork(s) {
				q.Add(request(e.Object.GetName()))
				return
			}
			normal := 0
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: &normal}, request(s.Name))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(request(e.ObjectNew.GetName()))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(request(e.Object.GetName()))
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(request(e.Object.GetName()))
		},
	}
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
