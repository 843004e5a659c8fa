package controllers

import (
	"github.com/prometheus/client_golang/prometheus"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// recordStatusMetrics sets a SidecarSet's pod gauges. A SidecarSet that
// selects no pod has none: with thousands of SidecarSets, most of them
// idle, their all-zero series would be a large share of the manager's live
// heap.
func recordStatusMetrics(set string, st *appsv1beta1.SidecarSetStatus, notUpgradable, restricted int) {
	if st.MatchedPods == 0 && st.NotInjectedPods == 0 && notUpgradable == 0 {
		metrics.RolloutPods.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
		return
	}
	metrics.RolloutPods.WithLabelValues(set, "matched").Set(float64(st.MatchedPods))
	metrics.RolloutPods.WithLabelValues(set, "updated").Set(float64(st.UpdatedPods))
	metrics.RolloutPods.WithLabelValues(set, "ready").Set(float64(st.ReadyPods))
	metrics.RolloutPods.WithLabelValues(set, "updated_ready").Set(float64(st.UpdatedReadyPods))
	metrics.RolloutPods.WithLabelValues(set, "not_upgradable").Set(float64(notUpgradable))
	metrics.RolloutPods.WithLabelValues(set, "not_injected").Set(float64(st.NotInjectedPods))
	metrics.RolloutPods.WithLabelValues(set, "resize_pending").Set(float64(st.ResizePendingPods))
	metrics.RolloutPods.WithLabelValues(set, "recreate_pending").Set(float64(st.RecreatePendingPods))
	metrics.RolloutPods.WithLabelValues(set, "restricted").Set(float64(restricted))
}

// recordPausedMetric sets sidecarset_rollout_paused: 1 while the rollout is
// paused, no series otherwise (like the pod gauges, no zeros for the many
// SidecarSets that are not).
func recordPausedMetric(set string, paused bool) {
	if paused {
		metrics.RolloutPaused.WithLabelValues(set).Set(1)
		return
	}
	metrics.RolloutPaused.DeleteLabelValues(set)
}
