package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// conflict is a clash between the SidecarSet and another one that can
// select the same pods. Its key names the other SidecarSet and the clashing
// item, so that the same clash can be recognised on the old object.
type conflict struct {
	key string
	err *field.Error
}

// validateConflicts checks the SidecarSet against every other SidecarSet
// that can select the same pod (exact selector and namespace overlap),
// except itself and its canary or base. On update, a conflict that the old
// object already had is returned as a warning instead of an error.
func validateConflicts(s, old *appsv1beta1.SidecarSet, others []*appsv1beta1.SidecarSet, spec *field.Path) (field.ErrorList, []string) {
	found := findConflicts(s, others, spec)
	if len(found) == 0 {
		return nil, nil
	}
	before := sets.New[string]()
	if old != nil {
		for _, c := range findConflicts(old, others, spec) {
			before.Insert(c.key)
		}
	}
	var errs field.ErrorList
	var warnings []string
	for _, c := range found {
		if before.Has(c.key) {
			warnings = append(warnings, c.err.Error()+" (accepted because this conflict predates the update; resolve it)")
			continue
		}
		errs = append(errs, c.err)
	}
	return errs, warnings
}

func findConflicts(s *appsv1beta1.SidecarSet, others []*appsv1beta1.SidecarSet, spec *field.Path) []conflict {
	if match.IsEmpty(s.Spec.Selector) {
		return nil // selects no pod
	}
	sorted := slices.SortedFunc(func(yield func(*appsv1beta1.SidecarSet) bool) {
		for _, o := range others {
			if o != nil && !yield(o) {
				return
			}
		}
	}, func(a, b *appsv1beta1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	myVolumes := defaultedVolumes(s.Spec.Volumes)
	var out []conflict
	for _, o := range sorted {
		if o.Name == s.Name || canaryPair(s, o) || match.IsEmpty(o.Spec.Selector) || !match.Overlap(s, o) {
			continue
		}
		out = append(out, nameConflicts(s, o, spec)...)
		out = append(out, volumeConflicts(s.Spec.Volumes, myVolumes, o, spec.Child("volumes"))...)
		out = append(out, annotationConflicts(s.Spec.PatchPodMetadata, o, spec.Child("patchPodMetadata"))...)
	}
	return out
}

// injectedNames returns the names of the containers a SidecarSet injects
// into a pod, init containers included: a HotUpgrade sidecar X is injected
// as. Each name maps to the sidecar it comes from.
func injectedNames(spec *appsv1beta1.SidecarSetSpec) map[string]string {
	names := map[string]string{}
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, n := range podNames(&list[i]) {
				if _, taken := names[n]; !taken {
					names[n] = list[i].Name
				}
			}
		}
	}
	return names
}

// podNames are the container names a sidecar takes in a pod: its own name
// (which also keys its hot-upgrade annotations) and its twins.
func podNames(c *appsv1beta1.SidecarContainer) []string {
	if c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
		first, second := appsv1beta1.HotUpgradeTwins(c.Name)
		return []string{c.Name, first, second}
	}
	return []string{c.Name}
}

// nameConflicts reports each sidecar of s, init or not, that would take a
// container name that o also injects, whichever list o declares it in.
func nameConflicts(s, o *appsv1beta1.SidecarSet, spec *field.Path) []conflict {
	theirs := injectedNames(&o.Spec)
	var out []conflict
	for _, list := range []struct {
		path       *field.Path
		containers []appsv1beta1.SidecarContainer
	}{{spec.Child("initContainers"), s.Spec.InitContainers}, {spec.Child("containers"), s.Spec.Containers}} {
		for i := range list.containers {
			c := &list.containers[i]
			for _, name := range podNames(c) {
				origin, clash := theirs[name]
				if !clash {
					continue
				}
				var what, how string
				if name == c.Name {
					what = fmt.Sprintf("container name %q", name)
				} else {
					what = fmt.Sprintf("HotUpgrade twin %q of container %q", name, c.Name)
				}
				if origin != name {
					how = fmt.Sprintf(" (as a twin of its HotUpgrade sidecar %q)", origin)
				}
				out = append(out, conflict{
					key: o.Name + "/container/" + c.Name,
					err: withDetail(field.Duplicate(list.path.Index(i).Child("name"), c.Name), fmt.Sprintf(
						"%s is also injected by SidecarSet %q%s, which can select the same pods; "+
							"rename one of them or make their selectors disjoint", what, o.Name, how)),
				})
				break
			}
		}
	}
	return out
}

// volumeConflicts reports each volume of s that o declares under the same
// name with a different definition (compared after defaulting): a pod gets
// only one of the two.
func volumeConflicts(volumes []corev1.Volume, defaulted map[string]corev1.Volume, o *appsv1beta1.SidecarSet, path *field.Path) []conflict {
	theirs := defaultedVolumes(o.Spec.Volumes)
	var out []conflict
	for i, v := range volumes {
		other, shared := theirs[v.Name]
		if !shared || equality.Semantic.DeepEqual(defaulted[v.Name], other) {
			continue
		}
		out = append(out, conflict{
			key: o.Name + "/volume/" + v.Name,
			err: field.Invalid(path.Index(i), v.Name, fmt.Sprintf(
				"volume %q is also declared by SidecarSet %q, which can select the same pods, with a different definition, "+
					"and a pod gets only one of them; make the definitions identical, rename one of them, "+
					"or make their selectors disjoint", v.Name, o.Name)),
		})
	}
	return out
}

func defaultedVolumes(volumes []corev1.Volume) map[string]corev1.Volume {
	copied := make([]corev1.Volume, len(volumes))
	for i := range volumes {
		volumes[i].DeepCopyInto(&copied[i])
	}
	appsv1beta1.SetVolumeDefaults(copied)
	byName := make(map[string]corev1.Volume, len(copied))
	for _, v := range copied {
		byName[v.Name] = v
	}
	return byName
}

// annotationConflicts reports each annotation that s and o both patch onto
// pods where either side overwrites it. Retain entries never conflict, and
// neither do two MergePatchJson entries.
func annotationConflicts(entries []appsv1beta1.SidecarSetPatchPodMetadata, o *appsv1beta1.SidecarSet, path *field.Path) []conflict {
	theirs := map[string]appsv1beta1.SidecarSetPatchPolicyType{}
	for _, e := range o.Spec.PatchPodMetadata {
		if effectivePolicy(e.PatchPolicy) == appsv1beta1.SidecarSetRetainPatchPolicy {
			continue
		}
		for k := range e.Annotations {
			if theirs[k] != appsv1beta1.SidecarSetOverwritePatchPolicy {
				theirs[k] = e.PatchPolicy
			}
		}
	}
	var out []conflict
	for i, e := range entries {
		mine := effectivePolicy(e.PatchPolicy)
		if mine == appsv1beta1.SidecarSetRetainPatchPolicy {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(e.Annotations)) {
			other, shared := theirs[k]
			if !shared || (mine != appsv1beta1.SidecarSetOverwritePatchPolicy && other != appsv1beta1.SidecarSetOverwritePatchPolicy) {
				continue
			}
			out = append(out, conflict{
				key: o.Name + "/annotation/" + k,
				err: field.Invalid(path.Index(i).Child("annotations").Key(k), k, fmt.Sprintf(
					"annotation %q is patched with %s here and with %s by SidecarSet %q, which can select the same pods, "+
						"so the pods' value would depend on which one is applied last; keep the key in one SidecarSet, "+
						"use Retain or MergePatchJson on both, or make their selectors disjoint", k, mine, other, o.Name)),
			})
		}
	}
	return out
}

func effectivePolicy(p appsv1beta1.SidecarSetPatchPolicyType) appsv1beta1.SidecarSetPatchPolicyType {
	if p == "" {
		return appsv1beta1.SidecarSetRetainPatchPolicy
	}
	return p
}
