package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// The shell of the rollout guards (the decisions are the planner's,
// controllers/rollout/guard.go): the progress clock it remembers per
// SidecarSet, the pause it writes when the failure budget is exceeded, and
// their events and metrics.

// Events of the rollout guards, on SidecarSets.
const (
	// EventRolloutPaused: the controller set updateStrategy.paused because
	// more upgraded pods fail than the failure budget allows; the note
	// names them and the revision.
	EventRolloutPaused = "RolloutPaused"
	// EventProgressDeadlineExceeded: the rollout made no progress for
	// longer than its progress deadline.
	EventProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)

// pauseRollout sets updateStrategy.paused, and nothing else, on the
// SidecarSet as it was planned from (the patch carries its
// resourceVersion, so a SidecarSet changed meanwhile, for instance to a
// fixed image, is not paused on old evidence). It reports whether the
// write went through; a conflict is not an error, the next round decides
// again.
func (r *SidecarSetReconciler) pauseRollout(ctx context.Context, obj *appsv1beta1.SidecarSet, st *appsv1beta1.SidecarSetStatus) (bool, error) {
	patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"updateStrategy":{"paused":true}}}`, obj.ResourceVersion)
	target := &appsv1beta1.SidecarSet{}
	target.Name = obj.Name
	if err := r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("pausing the rollout: %w", err)
	}
	metrics.RolloutAutoPauses.WithLabelValues(obj.Name).Inc()
	// The FailureBudgetExceeded message names the revision and the pods,
	// and says the rollout is paused.
	note := "Paused the rollout (updateStrategy.paused)"
	if c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionProgressing); c != nil {
		note = c.Message
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventRolloutPaused, "Pause", "%s", note)
	ctrl.LoggerFrom(ctx).Info("Paused the rollout: more upgraded pods fail than the failure budget allows",
		"revision", st.LatestRevision)
	return true, nil
}

// announceDeadline emits ProgressDeadlineExceeded when the rollout passes
// its deadline (once per stall: a new one begins when the clock moves).
func (r *SidecarSetReconciler) announceDeadline(obj *appsv1beta1.SidecarSet, st *appsv1beta1.SidecarSetStatus, clock rollout.ProgressClock, note *noteState) {
	c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionProgressing)
	if c == nil || c.Reason != appsv1beta1.ReasonProgressDeadlineExceeded {
		note.stalled = ""
		return
	}
	key := fmt.Sprintf("%d/%s", clock.Generation, clock.Since)
	if key == note.stalled {
		return
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventProgressDeadlineExceeded, "Upgrade",
		"Revision %s: %s", st.LatestRevision, c.Message)
	note.stalled = key
}

// recordGuardMetrics sets the guards' gauges of a SidecarSet: only for the
// guards it sets.
func recordGuardMetrics(set string, guards appsv1beta1.RolloutGuards, plan *rollout.Plan, st *appsv1beta1.SidecarSetStatus) {
	if guards.FailureBudget == nil {
		metrics.RolloutFailedPods.DeleteLabelValues(set)
	} else {
		// The auto-pause counter exists at 0 before the first pause, so that
		// increase() over it sees that pause.
		metrics.RolloutAutoPauses.WithLabelValues(set)
		failed := 0
		for _, u := range plan.Upgraded {
			if u.Failed {
				failed++
			}
		}
		metrics.RolloutFailedPods.WithLabelValues(set).Set(float64(failed))
	}
	if guards.ProgressDeadline == 0 {
		metrics.RolloutDeadlineExceeded.DeleteLabelValues(set)
		return
	}
	exceeded := 0.0
	if c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionProgressing); c != nil &&
		c.Reason == appsv1beta1.ReasonProgressDeadlineExceeded {
		exceeded = 1
	}
	metrics.RolloutDeadlineExceeded.WithLabelValues(set).Set(exceeded)
}
