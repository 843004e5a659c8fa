package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
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
