package webhooks

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// PodInjector is the pod mutating webhook: it decides each pod's injection
// (webhooks/decide: the inputs gathered from memory and the cache, the pure
// injector's answer) and answers with its patch, recording the outcome in
// the metrics. It writes nothing to the API server.
type PodInjector struct {
	// Injector decides the injection; the kubectl plugin runs the same.
	Injector decide.Injector
	// Failures reports best-effort SidecarSets that could not be injected
	// as events on them; nil reports none.
	Failures FailureReporter
}

// FailureReporter counts the pods admitted without a best-effort
// SidecarSet that selected them (webhooks/failureevents turns the counts
// into events).
type FailureReporter interface {
	Report(set *appsv1beta1.SidecarSet, pod, message string)
}

var _ http.Handler = &PodInjector{}

// ServeHTTP answers one pod admission request (podreview.go decodes it and
// encodes the answer).
func (h *PodInjector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, err := decodePodReview(r)
	var resp admission.Response
	result := "error"
	ctx := r.Context()
	switch {
	case err != nil:
		resp = admission.Errored(http.StatusBadRequest, err)
	default:
		resp, result = h.handle(ctx, req)
	}
	writePodReview(ctx, w, req, resp)
	metrics.AdmissionDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
}

func (h *PodInjector) handle(ctx context.Context, req *podRequest) (admission.Response, string) {
	if req.Operation != admissionv1.Create || req.SubResource != "" || req.Object == nil {
		return admission.Allowed(""), "unchanged"
	}
	pod := req.Object
	namespace := pod.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	d, err := h.Injector.DecidePatch(ctx, pod, namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), "error"
	}
	if len(d.Input.Candidates) == 0 {
		return admission.Allowed("no SidecarSet applies"), "unchanged"
	}

	out := d.Output
	podKey := types.NamespacedName{Namespace: namespace, Name: podName(pod)}
	// The logger with the request's values is made only for a line to
	// write: most admissions write none.
	log := func() logr.Logger {
		return ctrl.LoggerFrom(ctx).WithValues("webhook", names.PodInjectionPath, "UID", req.UID, "pod", podKey)
	}
	verbose := ctrl.LoggerFrom(ctx).V(2).Enabled()
	for _, s := range out.Skipped {
		metrics.Injections.WithLabelValues(s.SidecarSet, s.Reason).Inc()
		if verbose {
			log().V(2).Info("SidecarSet not injected", "sidecarSet", s.SidecarSet, "reason", s.Reason, "message", s.Message)
		}
	}
	for _, f := range out.Failed {
		metrics.InjectionFailures.WithLabelValues(f.SidecarSet, failurePolicy(f.BestEffort)).Inc()
		if f.BestEffort && !req.isDryRun() && h.Failures != nil {
			if e, ok := h.Injector.Registry.Get(f.SidecarSet); ok {
				h.Failures.Report(e.SidecarSet, podKey.String(), f.Message)
			}
		}
	}
	if d.Denied != nil {
		metrics.Denials.WithLabelValues("InjectionError").Inc()
		log().Info("Denied pod creation", "error", d.Denied.Error())
		return admission.Denied(d.Denied.Error()), "denied"
	}
	for _, name := range out.Injected {
		metrics.Injections.WithLabelValues(name, "injected").Inc()
	}
	if len(out.Patch) == 0 {
		resp := admission.Allowed("")
		resp.Warnings = out.Warnings
		return resp, "unchanged"
	}
	if verbose {
		log().V(2).Info("Injected sidecars", "sidecarSets", out.Injected)
	}
	resp := admission.Patched("", out.Patch...)
	resp.Warnings = out.Warnings
	return resp, "injected"
}

func failurePolicy(bestEffort bool) string {
	if bestEffort {
		return "Ignore"
	}
	return "Fail"
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}
