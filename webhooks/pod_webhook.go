package webhooks

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// PodInjector is the pod mutating webhook: it gathers the injection inputs
// from memory and the cache, asks the pure injector for a decision, and
// answers with its patch. It writes nothing to the API server.
//
// The kubectl plugin (cmd/kubectl-sidecarset) runs the same gathering and
// decision through Decide, on a reader over what it read from the cluster or
// from files: there is no second implementation of either.
type PodInjector struct {
	// Registry holds the SidecarSets, indexed for pods.
	Registry *candidate.Registry
	// Reader is the cache: namespace metadata and ControllerRevisions.
	Reader client.Reader
	// LiveReader reads a namespace the cache does not have yet (a pod
	// created right after its namespace); nil means none.
	LiveReader client.Reader
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
	// Now is the injection time; nil means the wall clock.
	Now func() metav1.Time
	// Coin is the coin of a Partial injection, in [0,1); nil means a random
	// number.
	Coin func() float64
	// EverySidecarSet makes every SidecarSet of the registry a candidate,
	// not only those the registry finds for the pod, so that each gets a
	// reason (the explain command). The decision is the same.
	EverySidecarSet bool

	pinned pinnedCache
}

var _ http.Handler = &PodInjector{}

// Decision is what the webhook decides for one pod, with the inputs it
// gathered.
type Decision struct {
	// Input is what the injector was given. Without candidates, the
	// injector was not called: no SidecarSet applies.
	Input inject.Input
	// Output is the injector's answer.
	Output inject.Output
	// Denied is set when the pod is refused: its message is the denial's.
	Denied error
}

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
	d, err := h.decide(ctx, pod, namespace, true)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), "error"
	}
	if len(d.Input.Candidates) == 0 {
		return admission.Allowed("no SidecarSet applies"), "unchanged"
	}

	out := d.Output
	podKey := types.NamespacedName{Namespace: namespace, Name: podName(pod)}
	log := ctrl.LoggerFrom(ctx).WithValues("pod", podKey)
	for _, s := range out.Skipped {
		metrics.Injections.WithLabelValues(s.SidecarSet, s.Reason).Inc()
		log.V(2).Info("SidecarSet not injected", "sidecarSet", s.SidecarSet, "reason", s.Reason, "message", s.Message)
	}
	for _, f := range out.Failed {
		metrics.InjectionFailures.WithLabelValues(f.SidecarSet, failurePolicy(f.BestEffort)).Inc()
		if f.BestEffort && !req.isDryRun() {
			if e, ok := h.Registry.Get(f.SidecarSet); ok {
				h.Failures.Report(e.SidecarSet, podKey.String(), f.Message)
			}
		}
	}
	if d.Denied != nil {
		metrics.Denials.WithLabelValues("InjectionError").Inc()
		log.Info("Denied pod creation", "error", d.Denied.Error())
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
	log.V(2).Info("Injected sidecars", "sidecarSets", out.Injected)
	resp := admission.Patched("", out.Patch...)
	resp.Warnings = out.Warnings
	return resp, "injected"
}

// Decide gathers the injection inputs of a pod being created in the
// namespace (its candidates, their pinned revisions, the namespace's labels
// when a namespaceSelector needs them, the whitelist in force) and runs the
// injector. The error is a failure to read the inputs; a refusal of the pod
// is Decision.Denied.
func (h *PodInjector) Decide(ctx context.Context, pod *corev1.Pod, namespace string) (Decision, error) {
	return h.decide(ctx, pod, namespace, false)
}

// decide is Decide; with patchOnly, the decision has no injected pod (the
// webhook answers with the patch).
func (h *PodInjector) decide(ctx context.Context, pod *corev1.Pod, namespace string, patchOnly bool) (Decision, error) {
	var entries []*candidate.Entry
	if h.EverySidecarSet {
		entries = h.Registry.All()
	} else {
		entries = h.Registry.Candidates(namespace, pod.Labels)
	}
	in := inject.Input{
		Pod:       pod,
		Namespace: inject.Namespace{Name: namespace},
		Options:   h.Options,
		PatchOnly: patchOnly,
	}
	if len(entries) == 0 {
		return Decision{Input: in}, nil
	}
	in.Candidates = make([]inject.Candidate, 0, len(entries))
	in.Now, in.Rand = h.now(), h.coin()
	in.Whitelist = podmeta.Whitelist{Snapshot: h.Whitelist.Current(), DefaultsAllowed: h.PatchMetadataDefaultsAllowed}
	needNamespaceLabels := false
	for _, e := range entries {
		c := inject.Candidate{SidecarSet: e.SidecarSet, Hashes: e.Hashes, Selector: e.Selector, Resources: e.Resources}
		if e.SidecarSet.Spec.InjectionStrategy.Revision != nil && e.Matches(pod.Labels) {
			c.Pinned, c.PinnedError = h.resolvePinned(ctx, e)
		}
		if match.NeedsNamespace(e.SidecarSet, namespace) && !e.SidecarSet.Spec.InjectionStrategy.Paused && e.Matches(pod.Labels) {
			needNamespaceLabels = true
		}
		in.Candidates = append(in.Candidates, c)
	}
	if needNamespaceLabels {
		// Only when a SidecarSet that tests the namespace's labels, or
		// records its UID, selects the pod: a pod no SidecarSet selects
		// never waits on the read, and never fails for it (the injector
		// fails only the SidecarSets that need the namespace).
		ns, err := h.namespaceMetadata(ctx, namespace)
		if err != nil {
			in.Namespace.LabelsError = err
		} else {
			in.Namespace.Labels, in.Namespace.UID = ns.GetLabels(), ns.GetUID()
		}
	}
	out, err := inject.Inject(in)
	return Decision{Input: in, Output: out, Denied: err}, nil
}

// namespaceMetadata reads the namespace's metadata (labels, UID) from the
// cache, and from the API server when the cache does not have the
// namespace yet.
func (h *PodInjector) namespaceMetadata(ctx context.Context, namespace string) (*metav1.PartialObjectMetadata, error) {
	ns, err := lookup.Namespace(ctx, h.Reader, namespace)
	if apierrors.IsNotFound(err) && h.LiveReader != nil {
		ns, err = lookup.Namespace(ctx, h.LiveReader, namespace)
	}
	return ns, err
}

func (h *PodInjector) now() metav1.Time {
	if h.Now != nil {
		return h.Now()
	}
	return metav1.Now()
}

func (h *PodInjector) coin() float64 {
	if h.Coin != nil {
		return h.Coin()
	}
	return rand.Float64() //nolint:gosec // the coin of a Partial injection needs no cryptographic randomness
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
