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
	injectionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_injection_failures_total",
		Help: "Pods a SidecarSet selected but could not be applied to, by failure policy: Fail (the pod was denied) or Ignore (admitted without it).",
	}, []string{"sidecarset", "failure_policy"})
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
	metrics.Registry.MustRegister(admissionDuration, injections, injectionFailures, denials, policyReloads, sidecarSetRejections, podWebhookScopeExact, podWebhookScopeBytes, podWebhookScopeDegraded)
}

// The pod webhooks' scope, per webhook (PodWebhookName, PodBestEffortWebhookName).
var (
	podWebhookScopeExact = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_exact",
		Help: "1 when the pod webhook's matchCondition is exactly the SidecarSets' selections, 0 when it had to be widened to fit the API server's limits.",
	}, []string{"webhook"})
	podWebhookScopeDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_degraded_sidecarsets",
		Help: "SidecarSets left out of the pod webhook's matchCondition because it could not fit the API server's limits (their pods go to the best-effort webhook, which then receives every pod).",
	}, []string{"webhook"})
	podWebhookScopeBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_bytes",
		Help: "Length of the pod webhook's matchCondition expression.",
	}, []string{"webhook"})
)
