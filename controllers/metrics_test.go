package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

func TestRecordStatusMetrics_NoSeriesForIdleSidecarSets(t *testing.T) {
	recordStatusMetrics("metrics-test-busy", &appsv1beta1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 2}, 0, 0)
	recordStatusMetrics("metrics-test-idle", &appsv1beta1.SidecarSetStatus{}, 0, 0)
	if got := testutil.ToFloat64(metrics.RolloutPods.WithLabelValues("metrics-test-busy", "updated")); got != 2 {
		t.Errorf("updated = %v, want 2", got)
	}
	series := testutil.CollectAndCount(metrics.RolloutPods)
	recordStatusMetrics("metrics-test-busy", &appsv1beta1.SidecarSetStatus{}, 0, 0)
	if after := testutil.CollectAndCount(metrics.RolloutPods); after != series-9 {
		t.Errorf("%d series after the SidecarSet went idle, want %d: an idle SidecarSet keeps no series", after, series-9)
	}
	metrics.ForgetSidecarSet("metrics-test-busy")
}

// TestRecordGuardMetrics_AutoPauseCounterStartsAtZero: a SidecarSet with a
// failure budget has its auto-pause counter at 0 before its first pause, so
// that increase() over it sees the first pause (a counter that appears at 1
// increases by nothing).
func TestRecordGuardMetrics_AutoPauseCounterStartsAtZero(t *testing.T) {
	const set = "metrics-test-budget"
	defer metrics.ForgetSidecarSet(set)
	budget := int32(1)
	recordGuardMetrics(set, appsv1beta1.RolloutGuards{FailureBudget: &budget}, &rollout.Plan{}, &appsv1beta1.SidecarSetStatus{})
	if n := testutil.CollectAndCount(metrics.RolloutAutoPauses, "sidecarset_rollout_auto_pauses_total"); n == 0 {
		t.Fatal("no sidecarset_rollout_auto_pauses_total series for a SidecarSet with a failure budget")
	}
	if got := testutil.ToFloat64(metrics.RolloutAutoPauses.WithLabelValues(set)); got != 0 {
		t.Errorf("auto pauses = %v, want 0", got)
	}
}

// TestRecordPausedMetric_OnlyWhilePaused: a paused rollout has its series
// at 1; a rollout that is not paused has none (with thousands of
// SidecarSets, zeros cost memory).
func TestRecordPausedMetric_OnlyWhilePaused(t *testing.T) {
	const set = "metrics-test-paused"
	defer metrics.ForgetSidecarSet(set)
	recordPausedMetric(set, true)
	if got := testutil.ToFloat64(metrics.RolloutPaused.WithLabelValues(set)); got != 1 {
		t.Errorf("paused = %v, want 1", got)
	}
	recordPausedMetric(set, false)
	if n := testutil.CollectAndCount(metrics.RolloutPaused); n != 0 {
		t.Errorf("%d series once the rollout is resumed, want 0", n)
	}
}
