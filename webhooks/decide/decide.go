// Package decide is the pod webhook's decision: it gathers a pod's
// injection inputs from memory and a reader (its candidate SidecarSets,
// their pinned revisions, the namespace's metadata when a SidecarSet needs
// it, the patchPodMetadata whitelist in force) and runs the pure injector
// (webhooks/inject). It writes nothing.
//
// The pod webhook (webhooks.PodInjector) answers with its patch; the
// kubectl plugin (cmd/kubectl-sidecarset) runs it on a reader over what it
// read from the cluster or from files: there is no second implementation of
// either. It links no webhook server and records no metric.
package decide

import (
	"context"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// Injector decides the injection of pods being created.
type Injector struct {
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

// Decide gathers the injection inputs of a pod being created in the
// namespace (its candidates, their pinned revisions, the namespace's labels
// when a namespaceSelector needs them, the whitelist in force) and runs the
// injector. The error is a failure to read the inputs; a refusal of the pod
// is Decision.Denied.
func (h *Injector) Decide(ctx context.Context, pod *corev1.Pod, namespace string) (Decision, error) {
	return h.decide(ctx, pod, namespace, false)
}

// DecidePatch is Decide without the injected pod in the output: the
// webhook answers with the patch alone.
func (h *Injector) DecidePatch(ctx context.Context, pod *corev1.Pod, namespace string) (Decision, error) {
	return h.decide(ctx, pod, namespace, true)
}

func (h *Injector) decide(ctx context.Context, pod *corev1.Pod, namespace string, patchOnly bool) (Decision, error) {
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
func (h *Injector) namespaceMetadata(ctx context.Context, namespace string) (*metav1.PartialObjectMetadata, error) {
	ns, err := lookup.Namespace(ctx, h.Reader, namespace)
	if apierrors.IsNotFound(err) && h.LiveReader != nil {
		ns, err = lookup.Namespace(ctx, h.LiveReader, namespace)
	}
	return ns, err
}

func (h *Injector) now() metav1.Time {
	if h.Now != nil {
		return h.Now()
	}
	return metav1.Now()
}

func (h *Injector) coin() float64 {
	if h.Coin != nil {
		return h.Coin()
	}
	return rand.Float64() //nolint:gosec // the coin of a Partial injection needs no cryptographic randomness
}

func (h *Injector) resolvePinned(ctx context.Context, e *candidate.Entry) (*inject.Pinned, error) {
	rev, err := lookup.PinnedRevision(ctx, h.Reader, h.Namespace, e.SidecarSet)
	if err != nil {
		return nil, err
	}
	return h.pinned.restore(e.SidecarSet, rev)
}
