package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// TestRestricted_Gauge: the restricted pods of a plan set the SidecarSet's
// restricted gauge (the Restricted condition is the planner's,
// rollout.TestStatus_Restricted).
func TestRestricted_Gauge(t *testing.T) {
	const set = "restricted-test-agent"
	recordStatusMetrics(set, &appsv1beta1.SidecarSetStatus{MatchedPods: 7}, 0, 5)
	if got := testutil.ToFloat64(metrics.RolloutPods.WithLabelValues(set, "restricted")); got != 5 {
		t.Errorf(`sidecarset_pods{state="restricted"} = %v, want 5`, got)
	}
	metrics.ForgetSidecarSet(set)
}
