package webhooks

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// PodInjector is the pod mutating webhook: it gathers the injection inputs
// from memory and the cache, asks the pure injector for a decision, and
// answers with its patch. It writes nothing to the API server.
type PodInjector struct {
	// Registry holds the SidecarSets, indexed for pods.
	Registry *candidate.Registry
	// Reader is the cache: namespace metadata and ControllerRevisions.
	Reader client.Reader
	// Namespace is the operator's namespace (ControllerRevisions).
	Namespace string
	// Options are the injection gates.
	Options inject.Options
	// Whitelist holds the patchPodMetadata whitelist in force.
	Whitelist *policy.Store
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
	// Failures reports best-effort SidecarSets that could not be injected
	// as events on them; nil reports none.
	Failures *FailureEvents

	pinned pinnedCache
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
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("webhook", PodInjectionPath, "UID", req.UID))
		resp, result = h.handle(ctx, req)
	}
	writePodReview(ctx, w, req, resp)
	admissionDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
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
	entries := h.Registry.Candidates(namespace, pod.Labels)
	if len(entries) == 0 {
		return admission.Allowed("no SidecarSet applies"), "unchanged"
	}

	in := inject.Input{
		Pod:        pod,
		Namespace:  inject.Namespace{Name: namespace},
		Candidates: make([]inject.Candidate, 0, len(entries)),
		Now:        metav1.Now(),
		Rand:       rand.Float64(), //nolint:gosec // the coin of a Partial injection needs no cryptographic randomness
		Options:    h.Options,
		Whitelist:  podmeta.Whitelist{Snapshot: h.Whitelist.Current(), DefaultsAllowed: h.PatchMetadataDefaultsAllowed},
	}
	needNamespaceLabels := false
	for _, e := range entries {
		c := inject.Candidate{SidecarSet: e.SidecarSet, Hashes: e.Hashes, Resources: e.Resources}
		if e.SidecarSet.Spec.InjectionStrategy.Revision != nil && e.Matches(pod.Labels) {
			c.Pinned, c.PinnedError = h.resolvePinned(ctx, e)
		}
		if match.NeedsNamespaceLabels(e.SidecarSet) {
			needNamespaceLabels = true
		}
		in.Candidates = append(in.Candidates, c)
	}
	if needNamespaceLabels {
		labels, err := lookup.NamespaceLabels(ctx, h.Reader, namespace)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err), "error"
		}
		in.Namespace.Labels = labels
	}

	out, err := inject.Inject(in)
	podKey := types.NamespacedName{Namespace: namespace, Name: podName(pod)}
	log := ctrl.LoggerFrom(ctx).WithValues("pod", podKey)
	for _, s := range out.Skipped {
		injections.WithLabelValues(s.SidecarSet, s.Reason).Inc()
		log.V(2).Info("SidecarSet not injected", "sidecarSet", s.SidecarSet, "reason", s.Reason, "message", s.Message)
	}
	for _, f := range out.Failed {
		injectionFailures.WithLabelValues(f.SidecarSet, failurePolicy(f.BestEffort)).Inc()
		if f.BestEffort && !req.isDryRun() {
			if e, ok := h.Registry.Get(f.SidecarSet); ok {
				h.Failures.Report(e.SidecarSet, podKey.String(), f.Message)
			}
		}
	}
	if err != nil {
		denials.WithLabelValues("InjectionError").Inc()
		log.Info("Denied pod creation", "error", err.Error())
		return admission.Denied(err.Error()), "denied"
	}
	for _, name := range out.Injected {
		injections.WithLabelValues(name, "injected").Inc()
	}
	if len(out.Patch) == 0 {
		resp := admission.Allowed("")
		resp.Warnings = out.Warnings
		return resp, "unchanged"
	}
	log.V(2).Info("Injected sidecars", "sidecarSets", out.Injected)
	resp := admission.Patched("", out.Patch...)
	resp.Warnings = out.Warnings
	return resp, "injected"
}

func (h *PodInjector) resolvePinned(ctx context.Context, e *candidate.Entry) (*inject.Pinned, error) {
	rev, err := lookup.PinnedRevision(ctx, h.Reader, h.Namespace, e.SidecarSet)
	if err != nil {
		return nil, err
	}
	return h.pinned.restore(e.SidecarSet, rev)
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
