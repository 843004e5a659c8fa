// Package inject is the pure core of sidecar injection: given a pod being
// created and the SidecarSets indexed for its namespace, it decides which
// SidecarSets apply, builds their sidecars and returns the mutated pod with a
// minimal RFC 6902 patch.
//
// The core does no I/O. The admission handler (and the offline explain tool)
// gathers the inputs: SidecarSets from the cache, the namespace's labels,
// pinned ControllerRevisions already restored, the time and a random number.
// The output carries, for every candidate SidecarSet, why it was or was not
// injected, so the shell can turn it into warnings, logs and metrics.
//
// The semantics are OpenKruise's (wire-compatible annotations and hashes),
// with its sharp edges removed: candidates are processed in name order, a
// sidecar never replaces or duplicates a container of the same name, and
// injecting an already injected pod changes nothing.
package inject

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject/resources"
)

// Candidate is one SidecarSet indexed for the pod's namespace. The shell
// looked it up; it is not yet matched against the pod.
type Candidate struct {
	// SidecarSet is the live object, already defaulted (appsv1alpha1.SetDefaults).
	SidecarSet *appsv1alpha1.SidecarSet
	// Hashes are the hashes of the live spec (appsv1alpha1.ComputeHashes).
	Hashes appsv1alpha1.Hashes
	// Pinned is the revision named by spec.injectionStrategy.revision,
	// resolved by the shell; nil when no revision is pinned or when it could
	// not be resolved.
	Pinned *Pinned
	// PinnedError is set when a revision is pinned but could not be
	// resolved (for example, it does not exist).
	PinnedError error
	// Resources are the live object's compiled resourcesPolicies
	// (resources.CompileSpec); those missing are compiled per pod.
	Resources resources.Policies
}

// Pinned is a historical version of a SidecarSet, restored from its
// ControllerRevision (revision.Restore).
type Pinned struct {
	// SidecarSet is the restored object.
	SidecarSet *appsv1alpha1.SidecarSet
	// Hashes are the hashes of the restored spec.
	Hashes appsv1alpha1.Hashes
	// RevisionName is the name of the ControllerRevision, recorded on the
	// pod as controllerRevision.
	RevisionName string
	// Resources are the restored object's compiled resourcesPolicies.
	Resources resources.Policies
}

// Namespace is the pod's namespace as the namespace selectors see it.
type Namespace struct {
	// Name of the namespace. Empty means the pod's own metadata.namespace.
	Name string
	// Labels of the namespace.
	Labels map[string]string
}

// Options are the feature gates that change injection, resolved to values.
type Options struct {
	// SortContainersByName orders injected containers by name across
	// SidecarSets, instead of by SidecarSet name then spec order
	// (OpenKruise's EnableSortSidecarContainerByName gate).
	SortContainersByName bool
}

// Input is everything one injection decision depends on.
type Input struct {
	// Pod is the pod as admitted (CREATE). Inject never modifies it.
	Pod *corev1.Pod
	// Namespace is the pod's namespace.
	Namespace Namespace
	// Candidates are the SidecarSets indexed for the pod's namespace, in any
	// order.
	Candidates []Candidate
	// Now is written as updateTimestamp in the hash annotations.
	Now metav1.Time
	// Rand, in [0,1), is the coin of injectionStrategy.revision.policy
	// Partial with a percentage partition.
	Rand float64
	// Options are the resolved feature gates.
	Options Options
	// Whitelist decides the keys patchPodMetadata may write.
	Whitelist podmeta.Whitelist
}

// Output is the result of an injection decision.
type Output struct {
	// Patch is a minimal RFC 6902 patch against Input.Pod; empty when
	// nothing changes.
	Patch []jsonpatch.Operation
	// Pod is Input.Pod with Patch applied (a copy).
	Pod *corev1.Pod
	// Injected names the SidecarSets that injected at least one container,
	// in processing (name) order.
	Injected []string
	// Skipped lists every candidate that injected nothing, with the reason.
	Skipped []Skip
	// Warnings are admission warnings for the user creating the pod.
	Warnings []string
}

// Skip says why a candidate SidecarSet injected nothing into the pod.
type Skip struct {
	// SidecarSet is the name of the candidate.
	SidecarSet string
	// Reason is one of the Reason* constants.
	Reason string
	// Message explains the reason in a sentence.
	Message string
}

// Reasons a candidate SidecarSet injects nothing.
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
	// ReasonPodNotSelected: the selector does not match the pod's labels.
	ReasonPodNotSelected = "PodNotSelected"
	// ReasonReplacedByCanary: a matching canary SidecarSet names this one as
	// its base, and is injected instead.
	ReasonReplacedByCanary = "ReplacedByCanary"
	// ReasonAlreadyInjected: the pod's SidecarSet annotations already list
	// this SidecarSet (for example, the webhook is invoked again).
	ReasonAlreadyInjected = "AlreadyInjected"
	// ReasonNameConflict: a sidecar's name is already used by a container of
	// the pod, by a sidecar of an earlier SidecarSet, or twice by this one.
	ReasonNameConflict = "NameConflict"
	// ReasonNothingToInject: the selected version has no containers; only
	// its patchPodMetadata applies.
	ReasonNothingToInject = "NothingToInject"
)

// Inject decides the sidecar injection of a pod being created. An error
// means the pod must be denied, with err.Error() as the message: an invalid
// selector, an unresolvable pinned revision, a patchPodMetadata merge error
// or malformed SidecarSet annotations on the pod.
func Inject(in Input) (Output, error) {
	if in.Pod == nil {
		return Output{}, fmt.Errorf("no pod to inject")
	}
	cands, err := orderCandidates(in.Candidates)
	if err != nil {
		return Output{}, err
	}
	pod := in.Pod
	out := Output{Pod: pod.DeepCopy()}
	if !match.PodActive(pod) {
		for _, c := range cands {
			out.Skipped = append(out.Skipped, Skip{SidecarSet: c.SidecarSet.Name, Reason: ReasonPodInactive,
				Message: "the pod has terminated or is being deleted"})
		}
		return out, nil
	}

	matched, skips, err := matchCandidates(cands, pod, in.Namespace)
	if err != nil {
		return Output{}, err
	}
	out.Skipped = append(out.Skipped, skips...)
	if len(matched) == 0 {
		return out, nil
	}
	state, err := readState(pod.Annotations)
	if err != nil {
		return Output{}, err
	}

	// Decide, for each matched SidecarSet, the version to inject and whether
	// its sidecars fit the pod. Names are checked on the spec alone, before
	// anything is applied, so a conflicting SidecarSet is skipped whole.
	names := existingContainerNames(pod)
	var accepted []*version
	var listed []string // the SidecarSets recorded in the injected-list
	for _, c := range matched {
		name := c.SidecarSet.Name
		if state.lists(name) {
			out.Skipped = append(out.Skipped, Skip{SidecarSet: name, Reason: ReasonAlreadyInjected,
				Message: "the pod's SidecarSet annotations already list it"})
			listed = append(listed, name)
			continue
		}
		v, err := chooseVersion(c, pod.Labels, in.Rand)
		if err != nil {
			return Output{}, err
		}
		if err := checkHotUpgrade(v); err != nil {
			return Output{}, err
		}
		if skip, warning := checkNames(v, names); skip != nil {
			out.Skipped = append(out.Skipped, *skip)
			out.Warnings = append(out.Warnings, warning)
			continue
		}
		accepted = append(accepted, v)
		listed = append(listed, name)
	}

	// patchPodMetadata, in name order, before the sidecars are built: a
	// transferEnv may read a patched annotation.
	annotations := maps.Clone(pod.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, v := range accepted {
		warnings, err := patchMetadata(v, annotations, in.Whitelist)
		if err != nil {
			return Output{}, err
		}
		out.Warnings = append(out.Warnings, warnings...)
	}

	sidecarNames := map[string]bool{}
	for _, v := range accepted {
		for _, list := range [][]appsv1alpha1.SidecarContainer{v.set.Spec.InitContainers, v.set.Spec.Containers} {
			for i := range list {
				sidecarNames[list[i].Name] = true
			}
		}
	}
	var plans []*plan
	for _, v := range accepted {
		p, err := buildPlan(v, pod, annotations, sidecarNames)
		if err != nil {
			return Output{}, err
		}
		out.Warnings = append(out.Warnings, p.warnings...)
		if p.empty() {
			out.Skipped = append(out.Skipped, Skip{SidecarSet: v.name, Reason: ReasonNothingToInject,
				Message: "the injected version has no containers; only its patchPodMetadata applies"})
		} else {
			out.Injected = append(out.Injected, v.name)
		}
		plans = append(plans, p)
	}

	var m merged
	if len(out.Injected) > 0 {
		m = merge(pod, plans, in.Options)
		out.Warnings = append(out.Warnings, m.warnings...)
		recordInjection(annotations, state, plans, listed, in.Now)
	}
	out.Pod, out.Patch = apply(pod, m, annotations)
	slices.SortStableFunc(out.Skipped, func(a, b Skip) int { return strings.Compare(a.SidecarSet, b.SidecarSet) })
	return out, nil
}
