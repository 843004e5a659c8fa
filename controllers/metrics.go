package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Prometheus metrics of the rollout, served on the manager's metrics endpoint.
var (
	rolloutPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pods",
		Help: "Pods of a SidecarSet by state: matched, updated, ready, updated_ready, not_upgradable, not_injected (selected, without its sidecars), restricted (injected without what the SidecarSet's authority does not cover), resize_pending, recreate_pending.",
	}, []string{"sidecarset", "state"})
	inPlaceUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_inplace_updates_total",
		Help: "In-place pod upgrades (and hot-upgrade resets) issued, by SidecarSet and result.",
	}, []string{"sidecarset", "result"})
	podResizes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_resizes_total",
		Help: "In-place resizes of sidecars (pods/resize) issued, by SidecarSet and result: success, conflict, refused, error.",
	}, []string{"sidecarset", "result"})
	podEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_evictions_total",
		Help: "Evictions of pods to recreate them, by SidecarSet and result: evicted, refused (a PodDisruptionBudget), gone, error.",
	}, []string{"sidecarset", "result"})
	detectorSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecarset_detector_seconds_total",
		Help: "Time the detection of pods without their sidecars spent deciding, over every pod it looked at.",
	})
	detectorPods = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecarset_detector_pods_total",
		Help: "Pod events the detection of pods without their sidecars looked at (creations, relevant updates, rescans).",
	})
	inFlightOldest = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sidecarset_inflight_oldest_seconds",
		Help: "Age of the oldest in-place upgrade the controller issued and has not yet seen applied (given up after 5 minutes).",
	})
)

func init() {
	metrics.Registry.MustRegister(rolloutPods, inPlaceUpdates, podResizes, podEvictions, inFlightOldest, detectorSeconds, detectorPods)
}

// recordStatusMetrics sets a SidecarSet's pod gauges. A SidecarSet that
// selects no pod has none: with thousands of SidecarSets, most of them
// idle, their all-zero series were a fifth of the manager's live heap.
func recordStatusMetrics(set string, st *appsv1beta1.SidecarSetStatus, notUpgradable, restricted int) {
	if st.MatchedPods == 0 && st.NotInjectedPods == 0 && notUpgradable == 0 {
		rolloutPods.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
		return
	}
	rolloutPods.WithLabelValues(set, "matched").Set(float64(st.MatchedPods))
	rolloutPods.WithLabelValues(set, "updated").Set(float64(st.UpdatedPods))
	rolloutPods.WithLabelValues(set, "ready").Set(float64(st.ReadyPods))
	rolloutPods.WithLabelValues(set, "updated_ready").Set(float64(st.UpdatedReadyPods))
	rolloutPods.WithLabelValues(set, "not_upgradable").Set(float64(notUpgradable))
	rolloutPods.WithLabelValues(set, "not_injected").Set(float64(st.NotInjectedPods))
	rolloutPods.WithLabelValues(set, "resize_pending").Set(float64(st.ResizePendingPods))
	rolloutPods.WithLabelValues(set, "recreate_pending").Set(float64(st.RecreatePendingPods))
	rolloutPods.WithLabelValues(set, "restricted").Set(float64(restricted))
}

func forgetMetrics(set string) {
	rolloutPods.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
	inPlaceUpdates.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
	podResizes.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
	podEvictions.DeletePartialMatch(prometheus.Labels{"sidecarset": set})
}
