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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// Candidate is one SidecarSet indexed for the pod's namespace. The shell
// looked it up; it is not yet matched against the pod.
type Candidate struct {
	// SidecarSet is the live object, already defaulted (appsv1beta1.SetDefaults).
	SidecarSet *appsv1beta1.SidecarSet
	// Hashes are the hashes of the live spec (appsv1beta1.ComputeHashes).
	Hashes appsv1beta1.Hashes
	// Selector is spec.selector compiled, when the shell keeps it compiled
	// (candidate.Entry.Selector: nil for an empty or invalid one); when
	// nil, spec.selector is evaluated per pod (match.Candidate.Selector).
	Selector labels.Selector
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
	SidecarSet *appsv1beta1.SidecarSet
	// Hashes are the hashes of the restored spec.
	Hashes appsv1beta1.Hashes
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
	// UID of the namespace: a SidecarSet that records the UID of the
	// namespace of this name (match.SameNamespace) applies only if it is
	// the same. Empty: not known.
	UID types.UID
	// LabelsError is set when the namespace's metadata (labels, UID) could
	// not be read: a SidecarSet whose namespaceSelector needs the labels, or
	// that records the namespace's UID, and whose selector matches the pod
	// fails (a required one denies the pod, a best-effort one is left out);
	// the others are unaffected.
	LabelsError error
}

// Options are the feature gates that change injection, resolved to values.
type Options struct {
	// SortContainersByName orders injected containers by name across
	// SidecarSets, instead of by SidecarSet name then spec order
	// (OpenKruise's EnableSortSidecarContainerByName gate).
	SortContainersByName bool
	// BeforeAdmission says the pod has not been through the API server's
	// admission yet (a manifest injected offline by the kubectl plugin):
	// the ServiceAccount admission plugin will mount the pod's token into
	// every container without a mount at its path, the sidecars included.
	// A sidecar whose SidecarSet's authority lacks inject-secrets then gets
	// the empty directory at that path now, as it would at admission.
	BeforeAdmission bool
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
	// PatchOnly is set by a caller that reads only Output.Patch (the pod
	// webhook): Output.Pod is left nil, the pod is not copied.
	PatchOnly bool
}

// Output is the result of an injection decision.
type Output struct {
	// Patch is a minimal RFC 6902 patch against Input.Pod; empty when
	// nothing changes.
	Patch []jsonpatch.Operation
	// Pod is Input.Pod with Patch applied (a copy); nil with
	// Input.PatchOnly.
	Pod *corev1.Pod
	// Injected names the SidecarSets that injected at least one container,
	// in processing (name) order.
	Injected []string
	// Skipped lists every candidate that injected nothing, with the reason.
	// A best-effort SidecarSet that failed is here too (ReasonFailed).
	Skipped []Skip
	// Failed lists the matched SidecarSets that could not be applied to the
	// pod, best-effort and required alike. Any required one denies the pod.
	Failed []Failure
	// Warnings are admission warnings for the user creating the pod.
	Warnings []string
	// Restricted lists what sidecars were not given because their
	// SidecarSet's authority did not cover it (the pod records it too).
	Restricted []Restriction
}

// Failure is a SidecarSet that selects the pod but cannot be applied to it:
// a pinned revision that cannot be resolved, a resourcesPolicy that finds no
// container, a patchPodMetadata that cannot be merged, malformed SidecarSet
// annotations on the pod.
type Failure struct {
	// SidecarSet is the name of the SidecarSet.
	SidecarSet string
	// BestEffort is true when its failure policy is Ignore: the pod is
	// admitted without it.
	BestEffort bool
	// Message says what failed, naming the SidecarSet.
	Message string
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
	// ReasonPodInactive: see match.ReasonPodInactive.
	ReasonPodInactive = match.ReasonPodInactive
	// ReasonInjectionPaused: see match.ReasonInjectionPaused.
	ReasonInjectionPaused = match.ReasonInjectionPaused
	// ReasonNamespaceNotSelected: see match.ReasonNamespaceNotSelected.
	ReasonNamespaceNotSelected = match.ReasonNamespaceNotSelected
	// ReasonInvalidNamespaceSelector: see match.ReasonInvalidNamespaceSelector.
	ReasonInvalidNamespaceSelector = match.ReasonInvalidNamespaceSelector
	// ReasonPodNotSelected: see match.ReasonPodNotSelected.
	ReasonPodNotSelected = match.ReasonPodNotSelected
	// ReasonReplacedByCanary: see match.ReasonReplacedByCanary.
	ReasonReplacedByCanary = match.ReasonReplacedByCanary
	// ReasonNamespaceReplaced: see match.ReasonNamespaceReplaced.
	ReasonNamespaceReplaced = match.ReasonNamespaceReplaced
	// ReasonCanaryBaseReplaced: see match.ReasonCanaryBaseReplaced.
	ReasonCanaryBaseReplaced = match.ReasonCanaryBaseReplaced
	// ReasonAlreadyInjected: the pod's SidecarSet annotations already list
	// this SidecarSet (for example, the webhook is invoked again).
	ReasonAlreadyInjected = "AlreadyInjected"
	// ReasonNameConflict: a sidecar's name is already used by a container of
	// the pod, by a sidecar of an earlier SidecarSet, or twice by this one.
	ReasonNameConflict = "NameConflict"
	// ReasonNothingToInject: the selected version has no containers; only
	// its patchPodMetadata applies.
	ReasonNothingToInject = "NothingToInject"
	// ReasonInvalidSelector: see match.ReasonInvalidSelector.
	ReasonInvalidSelector = match.ReasonInvalidSelector
	// ReasonFailed: a best-effort SidecarSet could not be applied to the pod
	// (see Output.Failed); the pod is admitted without it.
	ReasonFailed = "InjectionFailed"
)

// Inject decides the sidecar injection of a pod being created. A SidecarSet
// that selects the pod but cannot be applied to it is a Failure: a
// best-effort one is skipped with a warning, a required one (the default)
// makes Inject return an error, and the pod must be denied with err.Error()
// as the message. The other SidecarSets never depend on it.
func Inject(in Input) (Output, error) {
	if in.Pod == nil {
		return Output{}, fmt.Errorf("no pod to inject")
	}
	cands, err := orderCandidates(in.Candidates)
	if err != nil {
		return Output{}, err
	}
	pod := in.Pod
	var out Output
	matched, skips, unknown, state, stateErr := matchCandidates(cands, pod, in.Namespace)
	out.Skipped = append(out.Skipped, skips...)
	out.Warnings = append(out.Warnings, identityWarnings(skips)...)
	for _, u := range unknown {
		out.fail(u.c.SidecarSet, fmt.Errorf("SidecarSet %q: %s", u.c.SidecarSet.Name, u.message))
	}
	if len(matched) == 0 {
		if !in.PatchOnly {
			out.Pod = pod.DeepCopy()
		}
		return out, out.denial()
	}

	// Decide, for each matched SidecarSet, the version to inject and which
	// of its sidecars the pod does not have yet.
	names := existingContainerNames(pod)
	var accepted []*version
	for _, c := range matched {
		if stateErr != nil {
			out.fail(c.SidecarSet, stateErr)
			continue
		}
		v, err := chooseVersion(c, pod.Labels, in.Rand)
		if err == nil {
			err = checkHotUpgrade(v)
		}
		if err != nil {
			out.fail(c.SidecarSet, err)
			continue
		}
		kept, skip, warnings := selectSidecars(v, names)
		out.Warnings = append(out.Warnings, warnings...)
		if skip != nil {
			out.Skipped = append(out.Skipped, *skip)
			continue
		}
		accepted = append(accepted, kept)
	}

	// Build everything; a SidecarSet that fails is left out and the rest is
	// built again without it (its patchPodMetadata may have fed another's
	// transferEnv).
	var b built
	for {
		var failed *version
		b, failed, err = build(accepted, pod, in.Whitelist)
		if failed == nil {
			break
		}
		out.fail(failed.origin, err)
		accepted = slices.DeleteFunc(accepted, func(v *version) bool { return v == failed })
	}
	out.Warnings = append(out.Warnings, b.warnings...)
	for _, p := range b.plans {
		if p.empty() {
			out.Skipped = append(out.Skipped, Skip{SidecarSet: p.v.name, Reason: ReasonNothingToInject,
				Message: "the injected version has no containers; only its patchPodMetadata applies"})
		} else {
			out.Injected = append(out.Injected, p.v.name)
		}
	}

	var m merged
	if len(out.Injected) > 0 {
		m = merge(pod, b.plans, in.Options)
		out.Warnings = append(out.Warnings, m.warnings...)
		out.Restricted = m.restricted
		if len(m.reach) > 0 {
			recorded := map[string]string{}
			for name, verbs := range m.reach {
				recorded[name] = authority.Format(verbs)
			}
			b.annotations[appsv1beta1.ReachAnnotation] = podstate.EncodeStringMap(recorded)
		}
		if len(m.restricted) > 0 {
			for _, r := range m.restricted {
				out.Warnings = append(out.Warnings, r.Message)
			}
			raw, err := json.Marshal(restrictedAnnotation(m.restricted))
			if err != nil {
				return Output{}, err
			}
			b.annotations[appsv1beta1.RestrictedAnnotation] = string(raw)
		}
		var listed []string
		for _, v := range accepted {
			listed = append(listed, v.name)
		}
		recordInjection(b.annotations, state, b.plans, listed, in.Now)
	}
	out.Pod, out.Patch = apply(pod, m, b.annotations, !in.PatchOnly)
	slices.SortStableFunc(out.Skipped, func(a, b Skip) int { return strings.Compare(a.SidecarSet, b.SidecarSet) })
	return out, out.denial()
}

// built is the sidecars of the accepted SidecarSets and the pod's
// annotations after their patchPodMetadata.
type built struct {
	annotations map[string]string
	plans       []*plan
	warnings    []string
}

// build applies the accepted versions' patchPodMetadata, in name order,
// then builds their sidecars (a transferEnv may read a patched annotation).
// It stops at the first version that fails, returning it and the error.
func build(accepted []*version, pod *corev1.Pod, w podmeta.Whitelist) (built, *version, error) {
	b := built{annotations: maps.Clone(pod.Annotations)}
	if b.annotations == nil {
		b.annotations = map[string]string{}
	}
	for _, v := range accepted {
		if err := checkAuthority(v); err != nil {
			return built{}, v, err
		}
		warnings, err := patchMetadata(v, b.annotations, w)
		if err != nil {
			return built{}, v, err
		}
		b.warnings = append(b.warnings, warnings...)
	}
	sidecarNames := map[string]bool{}
	for _, v := range accepted {
		for _, list := range [][]appsv1beta1.SidecarContainer{v.set.Spec.InitContainers, v.set.Spec.Containers} {
			for i := range list {
				sidecarNames[list[i].Name] = true
			}
		}
	}
	for _, v := range accepted {
		p, err := buildPlan(v, pod, b.annotations, sidecarNames)
		if err != nil {
			return built{}, v, err
		}
		b.warnings = append(b.warnings, p.warnings...)
		b.plans = append(b.plans, p)
	}
	return b, nil, nil
}

// fail records a SidecarSet that cannot be applied to the pod. A
// best-effort one is also skipped, with a warning for the pod's author.
func (o *Output) fail(s *appsv1beta1.SidecarSet, err error) {
	f := Failure{SidecarSet: s.Name, BestEffort: appsv1beta1.IsBestEffort(s), Message: err.Error()}
	o.Failed = append(o.Failed, f)
	if f.BestEffort {
		o.Skipped = append(o.Skipped, Skip{SidecarSet: s.Name, Reason: ReasonFailed, Message: f.Message})
		o.Warnings = append(o.Warnings, fmt.Sprintf("best-effort SidecarSet %q was not injected: %s", s.Name, f.Message))
	}
}

// denial is the error denying the pod: the failures of required
// SidecarSets, or nil.
func (o *Output) denial() error {
	var msgs []string
	for _, f := range o.Failed {
		if !f.BestEffort {
			msgs = append(msgs, f.Message)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}
