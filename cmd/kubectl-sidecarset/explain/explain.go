// Package explain turns one decision of the pod webhook into an answer for
// a person: which SidecarSets select the pod and, for the others, why not;
// whether the API server sends the pod to a pod webhook at all; what
// injection adds; and, for a pod that exists, what its annotations record.
//
// It decides nothing. The kubectl plugin gathers the inputs and runs the
// webhook's own decision (decide.Injector.Decide, which calls the pure
// injector); this package reads the injector's reasons and presents them,
// next to the webhook scope (package scope) and the patchPodMetadata
// whitelist (package policy). It does no I/O.
package explain

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// Input is everything an explanation is made of.
type Input struct {
	// Pod is the pod as given: read from the cluster, or a manifest's pod
	// or pod template.
	Pod *corev1.Pod
	// Existing is set for a pod read from the cluster: it was admitted
	// already, and the decision is what a creation of it would get now.
	Existing bool
	// Source names what the pod comes from, such as "pod default/web" or
	// "Deployment default/web (pod template)".
	Source string
	// Namespace is the pod's namespace.
	Namespace string
	// NamespaceLabels are the namespace's labels; nil when unknown.
	NamespaceLabels map[string]string
	// Injection is the injector's input, as the webhook gathered it with
	// every SidecarSet as a candidate.
	Injection inject.Input
	// Output is the injector's answer.
	Output inject.Output
	// Denied is the refusal of the pod, if any.
	Denied error
	// Whitelist is the patchPodMetadata whitelist in force; nil when it
	// was not read.
	Whitelist *policy.Snapshot
	// DefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	DefaultsAllowed bool
	// Webhooks are the pod webhooks as installed.
	Webhooks Webhooks
	// OperatorNamespace is the operator's namespace, whose own pods the
	// installed scope exempts.
	OperatorNamespace string
}

// Report is an explanation. Its fields are what the text and JSON outputs
// show.
type Report struct {
	// Source names the pod.
	Source string `json:"source"`
	// Existing is set when the pod exists: the decision is for a creation
	// of the same pod now.
	Existing bool `json:"existing,omitempty"`
	// Namespace is the pod's namespace.
	Namespace string `json:"namespace"`
	// PodLabels are the labels the selectors see.
	PodLabels map[string]string `json:"podLabels,omitempty"`
	// NamespaceLabels are the labels the namespaceSelectors see; nil when
	// not read.
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// Scope says whether the API server sends the pod to a pod webhook.
	Scope Scope `json:"scope"`
	// SidecarSets has one verdict per SidecarSet, by name.
	SidecarSets []Verdict `json:"sidecarSets"`
	// Added is what injection adds to the pod.
	Added Added `json:"added"`
	// PatchOperations is the length of the webhook's JSON patch.
	PatchOperations int `json:"patchOperations"`
	// Warnings are the admission warnings the creator of the pod gets.
	Warnings []string `json:"warnings,omitempty"`
	// Denied is the message of the refusal, if the pod is refused.
	Denied string `json:"denied,omitempty"`
	// Result is the outcome in a sentence.
	Result string `json:"result"`
	// Notes are facts worth knowing that change nothing.
	Notes []string `json:"notes,omitempty"`
	// Recorded is what the annotations of an existing pod record.
	Recorded *Recorded `json:"recorded,omitempty"`
}

// Verdict is one SidecarSet's part in the decision.
type Verdict struct {
	// Name of the SidecarSet.
	Name string `json:"name"`
	// FailurePolicy is Fail (required) or Ignore (best-effort).
	FailurePolicy string `json:"failurePolicy"`
	// Selected says whether the SidecarSet selects the pod.
	Selected bool `json:"selected"`
	// Outcome is Injected, one of the injector's skip reasons
	// (inject.Reason*), or Failed for a required SidecarSet that cannot be
	// applied (the pod is denied).
	Outcome string `json:"outcome"`
	// Message is the injector's sentence.
	Message string `json:"message,omitempty"`
	// Selection is the selection that did not select the pod: its
	// selector, namespace or namespaceSelector.
	Selection string `json:"selection,omitempty"`
	// Version is the version injected: the latest spec or a pinned
	// revision.
	Version string `json:"version,omitempty"`
	// Adds lists what this SidecarSet adds: containers and init containers.
	Adds []Container `json:"adds,omitempty"`
	// Whitelist is what the patchPodMetadata whitelist in force says of
	// this SidecarSet's patchPodMetadata; empty when it has none.
	Whitelist []string `json:"whitelist,omitempty"`
}

// Outcomes besides the injector's skip reasons.
const (
	// OutcomeInjected: the SidecarSet's sidecars are injected.
	OutcomeInjected = "Injected"
	// OutcomeFailed: a required SidecarSet cannot be applied; the pod is
	// denied.
	OutcomeFailed = "Failed"
)

// notSelected are the outcomes of a SidecarSet that does not select the
// pod (or is not used for it).
var notSelected = []string{
	inject.ReasonPodInactive, inject.ReasonInjectionPaused, inject.ReasonNamespaceNotSelected,
	inject.ReasonInvalidNamespaceSelector, inject.ReasonPodNotSelected, inject.ReasonInvalidSelector,
	inject.ReasonReplacedByCanary, inject.ReasonNamespaceReplaced, inject.ReasonCanaryBaseReplaced,
}

// Explain builds the report of a decision.
func Explain(ctx context.Context, in Input) Report {
	r := Report{
		Source:          in.Source,
		Existing:        in.Existing,
		Namespace:       in.Namespace,
		NamespaceLabels: in.NamespaceLabels,
		Warnings:        in.Output.Warnings,
		PatchOperations: len(in.Output.Patch),
	}
	if in.Pod != nil {
		r.PodLabels = in.Pod.Labels
	}
	if in.Denied != nil {
		r.Denied = in.Denied.Error()
	}
	sets := candidateSets(in.Injection.Candidates)
	r.Scope = explainScope(ctx, in, sets)
	if in.Output.Pod != nil && in.Pod != nil {
		r.Added = added(in.Pod, in.Output.Pod, attribute(in))
	}
	for i := range in.Injection.Candidates {
		r.SidecarSets = append(r.SidecarSets, verdict(in, &in.Injection.Candidates[i], r.Added))
	}
	slices.SortFunc(r.SidecarSets, func(a, b Verdict) int { return strings.Compare(a.Name, b.Name) })
	r.SidecarSets = slices.CompactFunc(r.SidecarSets, func(a, b Verdict) bool { return a.Name == b.Name })
	r.Notes = notes(in)
	if in.Existing && in.Pod != nil {
		r.Recorded = recorded(in.Pod, in.Injection.Candidates)
	}
	r.Result = result(in, r)
	return r
}

func candidateSets(cands []inject.Candidate) []*appsv1beta1.SidecarSet {
	out := make([]*appsv1beta1.SidecarSet, 0, len(cands))
	for _, c := range cands {
		out = append(out, c.SidecarSet)
	}
	return out
}

// verdict reads one SidecarSet's outcome from the injector's output.
func verdict(in Input, c *inject.Candidate, a Added) Verdict {
	s := c.SidecarSet
	v := Verdict{Name: s.Name, FailurePolicy: appsv1beta1.FailurePolicyFail}
	if appsv1beta1.IsBestEffort(s) {
		v.FailurePolicy = appsv1beta1.FailurePolicyIgnore
	}
	skipped := slices.IndexFunc(in.Output.Skipped, func(k inject.Skip) bool { return k.SidecarSet == s.Name })
	failed := slices.IndexFunc(in.Output.Failed, func(f inject.Failure) bool { return f.SidecarSet == s.Name })
	switch {
	case slices.Contains(in.Output.Injected, s.Name):
		v.Outcome = OutcomeInjected
	case skipped >= 0:
		v.Outcome, v.Message = in.Output.Skipped[skipped].Reason, in.Output.Skipped[skipped].Message
	case failed >= 0:
		v.Outcome, v.Message = OutcomeFailed, in.Output.Failed[failed].Message
	default:
		v.Outcome = inject.ReasonPodNotSelected
		v.Message = "the webhook did not consider it"
	}
	v.Selected = !slices.Contains(notSelected, v.Outcome)
	switch v.Outcome {
	case inject.ReasonPodNotSelected, inject.ReasonInvalidSelector:
		v.Selection = "selector: " + formatSelector(s.Spec.Selector)
	case inject.ReasonNamespaceNotSelected, inject.ReasonInvalidNamespaceSelector:
		v.Selection = namespaceSelection(s)
	}
	if v.Outcome == OutcomeInjected {
		v.Version = injectedVersion(in.Output.Pod, c)
		v.Adds = containersOf(a, s.Name)
	}
	if v.Selected && len(s.Spec.PatchPodMetadata) > 0 {
		v.Whitelist = whitelistVerdict(in, s)
	}
	return v
}

// whitelistVerdict checks a SidecarSet's patchPodMetadata against the
// whitelist in force, as the SidecarSet validating webhook does.
func whitelistVerdict(in Input, s *appsv1beta1.SidecarSet) []string {
	if in.Whitelist == nil {
		return []string{"not checked: the kruise-configuration ConfigMap was not read"}
	}
	errs := in.Whitelist.Check(in.DefaultsAllowed, s)
	if len(errs) == 0 {
		return []string{"every patchPodMetadata annotation key is allowed by the whitelist in force"}
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// result says the outcome in a sentence.
func result(in Input, r Report) string {
	prefix := ""
	if in.Existing {
		prefix = "If this pod were created now: "
	}
	if r.Scope.Called == CalledNo {
		return prefix + "admitted unchanged: the API server calls no pod webhook for it"
	}
	switch {
	case r.Denied != "":
		return prefix + "denied: " + r.Denied
	case len(in.Output.Injected) > 0:
		return prefix + "admitted with the sidecars of " + strings.Join(in.Output.Injected, ", ")
	case r.PatchOperations > 0:
		return prefix + "admitted with changed annotations, no sidecar"
	}
	return prefix + "admitted unchanged"
}
