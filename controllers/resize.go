package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// The resize path's I/O (the decision is rollout/resize.go's): sidecars'
// CPU and memory are changed through the pods/resize subresource.
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch

// Events of the resize path.
const (
	// EventResizing, on a pod: the SidecarSet resized its sidecars.
	EventResizing = "Resizing"
	// EventResizeFailed, on a pod: the API server refused a resize.
	EventResizeFailed = "ResizeFailed"
	// EventResizePending, on a SidecarSet: resizes wait (deferred,
	// infeasible, stuck, or cannot be made), once per change of the set.
	EventResizePending = "ResizePending"
)

// applyResizes issues pods/resize patches in parallel (PodWriters at a
// time, none started once ctx ends) and records them in flight. It returns
// how many were refused for a stale resourceVersion. A resize the API
// server refuses as invalid or forbidden is remembered (resizeRefusals):
// the planner then reports the pod instead of sending it again.
func (r *SidecarSetReconciler) applyResizes(ctx context.Context, set string, resizes []rollout.PodResize) (int, error) {
	if len(resizes) == 0 {
		return 0, nil
	}
	var (
		mu        sync.Mutex
		conflicts int
		errs      []error
	)
	workqueue.ParallelizeUntil(ctx, r.PodWriters, len(resizes), func(i int) {
		rs := resizes[i]
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name, pod.UID = rs.Pod.Namespace, rs.Pod.Name, rs.UID
		err := r.patchPod(ctx, rs.Pod, "resize", rs.Patch)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			r.memories.expect(set, rs.UID, rollout.InFlight{Hash: rs.Hash, Since: r.now(), Resize: true, Generation: rs.Generation})
			metrics.PodResizes.WithLabelValues(set, "success").Inc()
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			conflicts++
			metrics.PodResizes.WithLabelValues(set, "conflict").Inc()
		case refusesResize(err):
			r.resizeRefusals.Store(rs.UID, resizeRefusal{hash: rs.Hash, message: apiMessage(err)})
			metrics.PodResizes.WithLabelValues(set, "refused").Inc()
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventResizeFailed, "Resize", "SidecarSet %s: %v", set, err)
		default:
			metrics.PodResizes.WithLabelValues(set, "error").Inc()
			errs = append(errs, fmt.Errorf("resizing pod %s: %w", rs.Pod, err))
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventResizeFailed, "Resize", "SidecarSet %s: %v", set, err)
		}
	})
	return conflicts, errors.Join(errs...)
}

// refusesResize reports whether the API server refused a resize for good:
// invalid (the rule of the resize), or forbidden by its PodResize admission
// because the pod's node cannot fit the new requests or is not Linux. Other
// errors (a node the API server does not know yet, an admission not ready)
// are retried.
func refusesResize(err error) bool {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == "NodeCapacity" || c.Type == "UnsupportedPlatform" {
			return true
		}
	}
	return false
}

// resizeRefusal is a resize the API server refused, towards a hash.
type resizeRefusal struct {
	hash, message string
}

// refusedResizes returns the resizes towards a hash the API server refused,
// by pod.
func (r *SidecarSetReconciler) refusedResizes(hash string) map[types.UID]string {
	out := map[types.UID]string{}
	r.resizeRefusals.Range(func(k, v any) bool {
		if f := v.(resizeRefusal); f.hash == hash {
			out[k.(types.UID)] = f.message
		}
		return true
	})
	return out
}

// announceResizes emits the ResizePending event when the set of pods whose
// resize waits changes and is not empty.
func (r *SidecarSetReconciler) announceResizes(obj *appsv1beta1.SidecarSet, plan *rollout.Plan, note *noteState) {
	var waiting []string
	for _, d := range plan.Decisions {
		if d.Blocker == rollout.BlockerResize {
			waiting = append(waiting, fmt.Sprintf("%s (%s)", d.Pod, d.Detail))
		}
	}
	key := strings.Join(waiting, ",")
	if key == note.resizePending {
		return
	}
	if len(waiting) > 0 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventResizePending, "Resize",
			"%d pod(s) wait for their in-place resize, keeping their resources: %s", len(waiting), names(waiting))
	}
	note.resizePending = key
}
