package match

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Reasons a candidate SidecarSet does not apply to a pod (Verdict.Reason).
const (
	// ReasonPodInactive: the pod has terminated or is being deleted.
	ReasonPodInactive = "PodInactive"
	// ReasonInjectionPaused: spec.injectionStrategy.paused is true.
	ReasonInjectionPaused = "InjectionPaused"
	// ReasonNamespaceNotSelected: the namespace or namespaceSelector does
	// not select the pod's namespace.
	ReasonNamespaceNotSelected = "NamespaceNotSelected"
	// ReasonInvalidNamespaceSelector: the namespaceSelector cannot be
	// evaluated; like OpenKruise, this counts as not selected.
	ReasonInvalidNamespaceSelector = "InvalidNamespaceSelector"
	// ReasonNamespaceLabelsUnknown: the namespaceSelector needs the
	// namespace's labels, they could not be read, and the selector matches
	// the pod's labels: whether the SidecarSet applies is not known.
	ReasonNamespaceLabelsUnknown = "NamespaceLabelsUnknown"
	// ReasonPodNotSelected: the selector does not match the pod's labels.
	ReasonPodNotSelected = "PodNotSelected"
	// ReasonInvalidSelector: the selector cannot be evaluated; the
	// SidecarSet selects no pod (validation refuses such selectors, so only
	// one stored before it can have one).
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonReplacedByCanary: a canary SidecarSet that applies to the pod
	// names this one as its base, and applies instead.
	ReasonReplacedByCanary = "ReplacedByCanary"
	// ReasonNamespaceReplaced: the SidecarSet selects the pod, but the
	// pod's namespace is not the one of that name the SidecarSet was
	// written for (SameNamespace): it was deleted and created again since.
	ReasonNamespaceReplaced = "NamespaceReplaced"
	// ReasonCanaryBaseReplaced: a canary SidecarSet selects the pod, but
	// its base is not the one it was written for (CanaryReplaces): the
	// canary is left out and the base applies.
	ReasonCanaryBaseReplaced = "CanaryBaseReplaced"
)

// Candidate is a SidecarSet that may apply to a pod.
type Candidate struct {
	// SidecarSet is the object, defaulted.
	SidecarSet *appsv1beta1.SidecarSet
	// Selector is spec.selector compiled, when the caller keeps it compiled
	// (nil for an empty or invalid one). When nil, spec.selector is
	// evaluated.
	Selector labels.Selector
}

// PodNamespace is the pod's namespace as the namespace selectors see it.
type PodNamespace struct {
	// Name of the namespace; empty means the pod's own, or "default".
	Name string
	// Labels of the namespace; needed only by the SidecarSets for which
	// NeedsNamespaceLabels is true.
	Labels map[string]string
	// UID of the namespace; needed only by the SidecarSets that record the
	// namespace's UID (PinsNamespace). Empty: not known, the namespace is
	// matched by name (SameNamespace).
	UID types.UID
	// LabelsError is set when the namespace's metadata (its labels and
	// UID) could not be read.
	LabelsError error
}

// Verdict is whether one candidate applies to the pod.
type Verdict struct {
	// Reason is "" when the SidecarSet applies, else one of the Reason*
	// constants.
	Reason string
	// Message explains Reason in a sentence.
	Message string
	// Selects is true when the SidecarSet's namespace selection and
	// selector select the pod, whatever Reason says (a paused SidecarSet,
	// or a base replaced by its canary, selects the pod).
	Selects bool
}

// Applicability is the answer for every candidate, and what the pod
// records of the SidecarSets applied to it before.
type Applicability struct {
	// Verdicts has one entry per candidate, in the candidates' order.
	Verdicts []Verdict
	// Recorded is the pod's SidecarSet state as injection reads it, decoded
	// only when some candidate selects the pod.
	Recorded podstate.State
	// RecordedError is set when that state cannot be decoded (a malformed
	// kruise.io/sidecarset-hash annotation, for example). Nobody can then
	// tell what the pod carries: the pod webhook denies the pod (a
	// best-effort SidecarSet is left out) and the controller reports it
	// (NotInjectedUnreadable); neither guesses.
	RecordedError error
}

// Applicable decides which of the candidate SidecarSets apply to a pod:
// the pod is active, the SidecarSet is not paused, its namespace selection
// and its selector select the pod, the namespace is the one it was written
// for (SameNamespace), and no canary SidecarSet that applies to the pod
// replaces it. A canary whose base is among the candidates but is not the
// base it was written for (CanaryReplaces) does not apply, and the base
// does. An invalid selector or namespaceSelector selects
// nothing: unlike OpenKruise, which denies every pod its index puts next to
// an invalid selector, a SidecarSet's own defect never blocks pods
// (validation refuses such selectors when a SidecarSet is written). When
// two canaries name the same base, the message names the first in the
// candidates' order.
//
// It is the one answer for the pod webhook, the not-injected detector and
// the kubectl plugin.
func Applicable(pod *corev1.Pod, ns PodNamespace, cands []Candidate) Applicability {
	out := Applicability{Verdicts: make([]Verdict, len(cands))}
	if !PodActive(pod) {
		for i := range out.Verdicts {
			out.Verdicts[i] = Verdict{Reason: ReasonPodInactive, Message: "the pod has terminated or is being deleted"}
		}
		return out
	}
	nsName := namespaceName(pod, ns)
	replacedBy := map[string]string{}
	selecting := false
	byName := make(map[string]*appsv1beta1.SidecarSet, len(cands))
	for _, c := range cands {
		byName[c.SidecarSet.Name] = c.SidecarSet
	}
	for i, c := range cands {
		v := selection(c, pod, ns, nsName)
		if c.SidecarSet.Spec.InjectionStrategy.Paused {
			// Said before anything else, as the pod webhook always has.
			v.Reason, v.Message = ReasonInjectionPaused, "spec.injectionStrategy.paused is true"
		}
		selecting = selecting || v.Selects
		if v.Reason == "" {
			if base := CanaryBase(c.SidecarSet); base != "" {
				if b, ok := byName[base]; ok {
					if replaces, why := CanaryReplaces(c.SidecarSet, b); !replaces {
						v.Reason, v.Message = ReasonCanaryBaseReplaced, why
					}
				}
				if _, seen := replacedBy[base]; !seen && v.Reason == "" {
					replacedBy[base] = c.SidecarSet.Name
				}
			}
		}
		out.Verdicts[i] = v
	}
	for i, c := range cands {
		canary, replaced := replacedBy[c.SidecarSet.Name]
		if replaced && out.Verdicts[i].Reason == "" {
			out.Verdicts[i].Reason = ReasonReplacedByCanary
			out.Verdicts[i].Message = fmt.Sprintf("canary SidecarSet %q also matches the pod and is injected instead", canary)
		}
	}
	if selecting {
		out.Recorded, out.RecordedError = podstate.ReadInjection(pod.Annotations)
	}
	return out
}

// selection is whether one SidecarSet's namespace selection and selector
// select the pod, and why not.
func selection(c Candidate, pod *corev1.Pod, ns PodNamespace, nsName string) Verdict {
	s := c.SidecarSet
	if ns.LabelsError != nil && NeedsNamespace(s, nsName) {
		if ok, err := podSelected(c, pod.Labels); err != nil || !ok {
			return Verdict{Reason: ReasonPodNotSelected, Message: "its selector does not match the pod's labels"}
		}
		if !NeedsNamespaceLabels(s) {
			return Verdict{Reason: ReasonNamespaceLabelsUnknown, Message: fmt.Sprintf(
				"whether namespace %q is the one it was written for cannot be told: the namespace could not be read: %v", nsName, ns.LabelsError)}
		}
		return Verdict{Reason: ReasonNamespaceLabelsUnknown, Message: fmt.Sprintf(
			"its namespaceSelector cannot be evaluated: the labels of namespace %q could not be read: %v", nsName, ns.LabelsError)}
	}
	ok, err := Namespace(s, nsName, ns.Labels)
	switch {
	case err != nil:
		return Verdict{Reason: ReasonInvalidNamespaceSelector, Message: fmt.Sprintf("its namespace selection cannot be evaluated: %v", err)}
	case !ok:
		return Verdict{Reason: ReasonNamespaceNotSelected, Message: fmt.Sprintf("it does not select namespace %q", nsName)}
	}
	ok, err = podSelected(c, pod.Labels)
	switch {
	case err != nil:
		return Verdict{Reason: ReasonInvalidSelector, Message: fmt.Sprintf("its selector cannot be evaluated, so it selects no pod: %v", err)}
	case !ok:
		return Verdict{Reason: ReasonPodNotSelected, Message: "its selector does not match the pod's labels"}
	}
	if same, why := SameNamespace(s, nsName, ns.UID); !same {
		return Verdict{Reason: ReasonNamespaceReplaced, Message: why, Selects: true}
	}
	return Verdict{Selects: true}
}

// podSelected evaluates the compiled selector when there is one, else
// spec.selector.
func podSelected(c Candidate, podLabels map[string]string) (bool, error) {
	if c.Selector != nil {
		return c.Selector.Matches(labels.Set(podLabels)), nil
	}
	return Pod(c.SidecarSet, podLabels)
}

// namespaceName is the pod's namespace: the one given, or the pod's own, or
// the default.
func namespaceName(pod *corev1.Pod, ns PodNamespace) string {
	switch {
	case ns.Name != "":
		return ns.Name
	case pod.Namespace != "":
		return pod.Namespace
	}
	return metav1.NamespaceDefault
}
