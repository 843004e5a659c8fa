package webhooks

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Prometheus metrics of the webhooks, served on the manager's metrics
// endpoint next to controller-runtime's own.
var (
	admissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sidecarset_pod_admission_duration_seconds",
		Help: "Time the pod injection webhook took to answer, by result (injected, unchanged, denied, error).",
		// Up to the webhook's 3s timeout.
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 3},
	}, []string{"result"})
	injections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_injections_total",
		Help: "Pods admitted per SidecarSet that applied to them, by outcome (injected, or the reason it was skipped).",
	}, []string{"sidecarset", "outcome"})
	denials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_denials_total",
		Help: "Pod creations denied by the injection webhook, by reason.",
	}, []string{"reason"})
	policyReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_policy_reloads_total",
		Help: "Loads of the kruise-configuration whitelist, by result (success, error, deleted).",
	}, []string{"result"})
	sidecarSetRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_admission_rejections_total",
		Help: "SidecarSet creations and updates rejected by validation, by operation.",
	}, []string{"operation"})
)

func init() {
	metrics.Registry.MustRegister(admissionDuration, injections, denials, policyReloads, sidecarSetRejections, podWebhookScoped)
}

var podWebhookScoped = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sidecarset_pod_webhook_scoped",
	Help: "1 when the pod webhook's matchConditions limit it to the pods some SidecarSet could select, 0 when it receives every pod.",
})
