package match

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Reasons a pod that a SidecarSet selects runs without its sidecars (the
// controller's Injected condition and event, the explain command).
const (
	// NotInjectedCreatedBefore: the pod existed before the SidecarSet (or
	// was created in the same second); injection happens only at pod
	// creation.
	NotInjectedCreatedBefore = "CreatedBeforeSidecarSet"
	// NotInjectedPaused: spec.injectionStrategy.paused is true.
	NotInjectedPaused = "InjectionPaused"
	// NotInjectedNameConflict: the pod has a container of a sidecar's name,
	// its own; the webhook left that sidecar out.
	NotInjectedNameConflict = "NameConflict"
	// NotInjectedAtAdmission: the pod was created after the SidecarSet and
	// admitted without it: the operator was unreachable, a best-effort
	// SidecarSet could not be applied, or the webhook's scope or registry
	// had not caught up with the SidecarSet yet.
	NotInjectedAtAdmission = "NotInjectedAtAdmission"
	// NotInjectedOperatorLabel: the pod, outside the operator's namespace,
	// carries the operator's own label (appsv1beta1.OperatorPodLabel), which
	// an OLM install's webhook objectSelector exempts from injection until
	// the operator has written its scope (or after OLM rewrote it).
	NotInjectedOperatorLabel = "CarriesOperatorLabel"
	// NotInjectedUnreadable: the pod's SidecarSet annotations (its hash
	// entries, its injected-list) cannot be decoded, so what it carries
	// cannot be told; the pod webhook denies such a pod at creation, so the
	// annotations were broken afterwards. Fix or remove them.
	NotInjectedUnreadable = "UnreadableAnnotations"
	// NotInjectedNamespaceReplaced: the pod's namespace was deleted and
	// created again since the SidecarSet was written (ReasonNamespaceReplaced).
	NotInjectedNamespaceReplaced = ReasonNamespaceReplaced
	// NotInjectedCanaryBaseReplaced: the canary's base was deleted and
	// created again since the canary was written (ReasonCanaryBaseReplaced);
	// the base is injected instead.
	NotInjectedCanaryBaseReplaced = ReasonCanaryBaseReplaced
)

// InjectsSomething reports whether a SidecarSet has sidecars to inject: one
// with only patchPodMetadata never leaves a pod without its sidecars.
func InjectsSomething(s *appsv1beta1.SidecarSet) bool {
	return len(s.Spec.Containers)+len(s.Spec.InitContainers) > 0
}

// NotInjected says why a pod that a SidecarSet selects (the caller checked
// its selector and namespace) does not carry the SidecarSet's sidecars, or
// returns "" when it does. A pod carries them when its recorded hash entry
// for the SidecarSet exists and every sidecar that entry lists (every
// sidecar of the spec, for an entry in the legacy format without a list) is
// one of its containers, or both twins' first for a hot-upgrade sidecar.
// The reasons are checked in order: a name conflict, created before the
// SidecarSet, paused, and otherwise admitted without it.
func NotInjected(s *appsv1beta1.SidecarSet, pod *corev1.Pod, recorded podstate.Hashes) string {
	if !InjectsSomething(s) {
		return ""
	}
	names := containerNames(pod)
	if entry, ok := recorded[s.Name]; ok {
		list := entry.SidecarList
		if len(list) == 0 {
			list = podstate.SidecarList(&s.Spec)
		}
		if !slices.ContainsFunc(list, func(n string) bool { return !present(names, n) }) {
			return ""
		}
	}
	switch {
	case slices.ContainsFunc(sidecarNames(s), func(n string) bool { return present(names, n) }):
		// First: recreating the pod would not inject it either.
		return NotInjectedNameConflict
	case !pod.CreationTimestamp.After(s.CreationTimestamp.Time):
		// Both are stored to the second: a pod of the same second as the
		// SidecarSet counts as created before it.
		return NotInjectedCreatedBefore
	case s.Spec.InjectionStrategy.Paused:
		return NotInjectedPaused
	case pod.Labels[appsv1beta1.OperatorPodLabel] == appsv1beta1.OperatorPodName:
		return NotInjectedOperatorLabel
	}
	return NotInjectedAtAdmission
}

func containerNames(pod *corev1.Pod) map[string]bool {
	names := make(map[string]bool, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		names[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names[c.Name] = true
	}
	return names
}

// present reports whether a sidecar is in the pod, under its name or as the
// first twin of a hot-upgrade sidecar.
func present(names map[string]bool, sidecar string) bool {
	twin, _ := appsv1beta1.HotUpgradeTwins(sidecar)
	return names[sidecar] || names[twin]
}

func sidecarNames(s *appsv1beta1.SidecarSet) []string {
	var names []string
	for _, list := range [][]appsv1beta1.SidecarContainer{s.Spec.InitContainers, s.Spec.Containers} {
		for i := range list {
			names = append(names, list[i].Name)
		}
	}
	return names
}
