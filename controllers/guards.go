package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// The shell of the rollout guards (the decisions are the planner's,
// controllers/rollout/guard.go): the pause it writes when the plan asks
// for it, and the guards' events and metrics.

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
// SidecarSet as it was planned from: the patch carries its
// resourceVersion (client.MergeFromWithOptimisticLock), so a SidecarSet
// changed meanwhile, for instance to a fixed image, is not paused on old
// evidence; a conflict is not an error, the next round decides again from
// the new spec. Either way the reconcile ends there, its one write of the
// SidecarSet made: the next round, which the spec change brings, writes
// the status.
func (r *SidecarSetReconciler) pauseRollout(ctx context.Context, obj *appsv1beta1.SidecarSet, plan *rollout.Plan) (reconcile.Result, error) {
	paused := obj.DeepCopy()
	paused.Spec.UpdateStrategy.Paused = true
	err := r.Client.Patch(ctx, paused, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("pausing the rollout: %w", err)
	}
	metrics.RolloutAutoPauses.WithLabelValues(obj.Name).Inc()
	recordPausedMetric(obj.Name, true)
	// The FailureBudgetExceeded message names the revision and the pods,
	// and says the rollout is paused.
	note := "Paused the rollout (updateStrategy.paused)"
	if c := meta.FindStatusCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); c != nil {
		note = c.Message
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventRolloutPaused, "Pause", "%s", note)
	ctrl.LoggerFrom(ctx).Info("Paused the rollout: more upgraded pods fail than the failure budget allows",
		"revision", plan.Status.LatestRevision)
	// The spec change brings the next round; this one is a safety net.
	return reconcile.Result{RequeueAfter: staleRetry}, nil
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
