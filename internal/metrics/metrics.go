// Package metrics declares every Prometheus metric the operator exports,
// registered on controller-runtime's registry (served on the manager's
// metrics endpoint next to its own). docs/observability.md lists them. The
// webhooks and the controllers record them; what each means is said here,
// once.
package metrics

import (
	"regexp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Prometheus metrics of the rollout, served on the manager's metrics endpoint.
var (
	RolloutPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pods",
		Help: "Pods of a SidecarSet by state: matched, updated, ready, updated_ready, not_upgradable, not_injected (selected, without its sidecars), restricted (injected without what the SidecarSet's authority does not cover), resize_pending, recreate_pending.",
	}, []string{"sidecarset", "state"})
	InPlaceUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_inplace_updates_total",
		Help: "In-place pod upgrades (and hot-upgrade resets) issued, by SidecarSet and result.",
	}, []string{"sidecarset", "result"})
	PodResizes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_resizes_total",
		Help: "In-place resizes of sidecars (pods/resize) issued, by SidecarSet and result: success, conflict, refused, error.",
	}, []string{"sidecarset", "result"})
	PodEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_evictions_total",
		Help: "Evictions of pods to recreate them, by SidecarSet and result: evicted, refused (a PodDisruptionBudget), gone, error.",
	}, []string{"sidecarset", "result"})
	DetectorSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecarset_detector_seconds_total",
		Help: "Time the detection of pods without their sidecars spent deciding, over every pod it looked at.",
	})
	DetectorPods = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecarset_detector_pods_total",
		Help: "Pod events the detection of pods without their sidecars looked at (creations, relevant updates, rescans).",
	})
	InFlightOldest = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sidecarset_inflight_oldest_seconds",
		Help: "Age of the oldest in-place upgrade the controller issued and has not yet seen applied (given up after 5 minutes).",
	})
)

// The rollout guards' metrics (SidecarSets with a failure budget or a
// progress deadline).
var (
	RolloutFailedPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_rollout_failed_pods",
		Help: "Pods upgraded in place to the current revision that count against the failure budget (SidecarSets with one).",
	}, []string{"sidecarset"})
	RolloutDeadlineExceeded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_rollout_progress_deadline_exceeded",
		Help: "1 while the rollout is past its progress deadline, else 0 (SidecarSets with one).",
	}, []string{"sidecarset"})
	RolloutAutoPauses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_rollout_auto_pauses_total",
		Help: "Rollouts the controller paused because more upgraded pods failed than the failure budget allows.",
	}, []string{"sidecarset"})
)

// Prometheus metrics of the webhooks, served on the manager's metrics
// endpoint next to controller-runtime's own.
var (
	AdmissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sidecarset_pod_admission_duration_seconds",
		Help: "Time the pod injection webhook took to answer, by result (injected, unchanged, denied, error).",
		// Up to the webhook's 3s timeout.
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 3},
	}, []string{"result"})
	Injections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_injections_total",
		Help: "Pods admitted per SidecarSet that applied to them, by outcome (injected, or the reason it was skipped).",
	}, []string{"sidecarset", "outcome"})
	InjectionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_injection_failures_total",
		Help: "Pods a SidecarSet selected but could not be applied to, by failure policy: Fail (the pod was denied) or Ignore (admitted without it).",
	}, []string{"sidecarset", "failure_policy"})
	Denials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_pod_denials_total",
		Help: "Pod creations denied by the injection webhook, by reason.",
	}, []string{"reason"})
	PolicyReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_policy_reloads_total",
		Help: "Loads of the kruise-configuration whitelist, by result (success, error, deleted).",
	}, []string{"result"})
	SidecarSetRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecarset_admission_rejections_total",
		Help: "SidecarSet creations and updates rejected by validation, by operation.",
	}, []string{"operation"})
)

// The pod webhooks' scope, per webhook (PodWebhookName, PodBestEffortWebhookName).
var (
	PodWebhookScopeExact = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_exact",
		Help: "1 when the pod webhook's matchCondition is exactly the SidecarSets' selections, 0 when it had to be widened to fit the API server's limits.",
	}, []string{"webhook"})
	PodWebhookScopeDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_degraded_sidecarsets",
		Help: "SidecarSets left out of the pod webhook's matchCondition because it could not fit the API server's limits (their pods go to the best-effort webhook, which then receives every pod).",
	}, []string{"webhook"})
	PodWebhookScopeBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sidecarset_pod_webhook_scope_bytes",
		Help: "Length of the pod webhook's matchCondition expression.",
	}, []string{"webhook"})
)

// BuildInfo is 1, labelled with the manager's version and commit (set at
// start).
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "sidecarset_build_info",
	Help: "1, labelled by the manager's release version and the commit it was built from.",
}, []string{"version", "revision"})

// RolloutPaused is 1 while a SidecarSet's rollout is paused
// (updateStrategy.paused, by hand or by its failure budget); a rollout that
// is not paused has no series.
var RolloutPaused = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "sidecarset_rollout_paused",
	Help: "1 while the SidecarSet's rollout is paused (updateStrategy.paused); absent otherwise.",
}, []string{"sidecarset"})

// WebhookCertExpiry is the expiry of the certificate the webhook server
// serves, as a Unix time (set once the certificate is there).
var WebhookCertExpiry = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "sidecarset_webhook_certificate_expiry_timestamp_seconds",
	Help: "Expiry of the certificate the webhook server serves, in seconds since the epoch.",
})

// all are the metrics above, registered at start.
var all = []prometheus.Collector{
	BuildInfo,
	RolloutPods,
	InPlaceUpdates,
	PodResizes,
	PodEvictions,
	DetectorSeconds,
	DetectorPods,
	InFlightOldest,
	RolloutFailedPods,
	RolloutDeadlineExceeded,
	RolloutAutoPauses,
	AdmissionDuration,
	Injections,
	InjectionFailures,
	Denials,
	PolicyReloads,
	SidecarSetRejections,
	PodWebhookScopeExact,
	PodWebhookScopeBytes,
	PodWebhookScopeDegraded,
	WebhookCertExpiry,
	RolloutPaused,
}

func init() {
	crmetrics.Registry.MustRegister(all...)
	// The one denial reason has its series from the start: a counter that
	// appears at 1 shows no increase, and the first denial would go unseen.
	Denials.WithLabelValues("InjectionError")
}

// ForgetSidecarSet removes a deleted SidecarSet's series from every metric
// labelled by SidecarSet, the webhooks' counters included. A metric without
// the label matches nothing, so one labelled by SidecarSet later is covered
// without being listed here.
func ForgetSidecarSet(name string) {
	for _, c := range all {
		if v, ok := c.(interface{ DeletePartialMatch(prometheus.Labels) int }); ok {
			v.DeletePartialMatch(prometheus.Labels{"sidecarset": name})
		}
	}
}

// fqName finds a metric's name in its description.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the name of every metric the operator exports, sorted:
// what hack/metricnames lists of the operator's own, from the definitions
// above.
func Names() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range all {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}
