package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// EventScopeDegraded is the warning emitted when the pod webhooks' scope
// starts leaving a SidecarSet out (webhooks/scope, Level Degraded).
const EventScopeDegraded = "ScopeDegraded"

// scopeDegraded returns why the pod webhooks' scope leaves the SidecarSet
// out, if it does.
func (r *SidecarSetReconciler) scopeDegraded(name string) (string, bool) {
	if r.Scope == nil {
		return "", false
	}
	return r.Scope.Degraded(name)
}

// scopeSettled returns when the API server has had ScopeSettle to take in
// the pod webhooks' scope holding the SidecarSet's generation: the pods
// that lack its sidecars are recreated from then on. Zero when no scope is
// kept, or when its last write predates the generation's.
func (r *SidecarSetReconciler) scopeSettled(s *appsv1beta1.SidecarSet, now time.Time) time.Time {
	if r.Scope == nil {
		return time.Time{}
	}
	at, ok := r.Scope.WrittenAt(s.Name, s.Generation)
	switch {
	case !ok:
		// Not written yet: look again a ScopeSettle later.
		return now.Add(rollout.ScopeSettle)
	case at.IsZero():
		return time.Time{}
	}
	return at.Add(rollout.ScopeSettle)
}

// announceScope emits a warning when the scope starts leaving the
// SidecarSet out, or says so for another reason.
func (r *SidecarSetReconciler) announceScope(obj *appsv1beta1.SidecarSet, why string, degraded bool, note *noteState) {
	if !degraded {
		note.scope = ""
		return
	}
	if why != note.scope {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventScopeDegraded, "Scope", "%s", why)
		note.scope = why
	}
}
