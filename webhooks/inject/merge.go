package inject

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// owner is what holds a container name in the pod being admitted.
type owner struct {
	// desc names it in warnings.
	desc string
	// fromPod: one of the pod's own containers (not another SidecarSet's
	// sidecar of this admission).
	fromPod bool
	// injected: a container of the pod marked IS_INJECTED=true, injected by
	// an earlier admission (this webhook invoked again, or a pod created
	// from an injected pod's manifest).
	injected bool
}

// existingContainerNames maps the names of the pod's containers (all kinds
// share one namespace) to their owner.
func existingContainerNames(pod *corev1.Pod) map[string]owner {
	names := make(map[string]owner, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	add := func(c *corev1.Container, kind string) {
		names[c.Name] = owner{desc: fmt.Sprintf("the pod's %s %q", kind, c.Name), fromPod: true, injected: isInjected(c)}
	}
	for i := range pod.Spec.InitContainers {
		add(&pod.Spec.InitContainers[i], "init container")
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], "container")
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names[c.Name] = owner{desc: fmt.Sprintf("the pod's ephemeral container %q", c.Name), fromPod: true}
	}
	return names
}

// selectSidecars decides which sidecars of a SidecarSet version go into the
// pod, by what the pod contains (never by its annotations, which its author
// controls):
//
//   - a sidecar the pod already has, injected (a container of its name
//     marked IS_INJECTED=true), is not injected again;
//   - a sidecar named like one of the pod's own containers is not injected:
//     the pod's container is kept as it is, and a warning says so;
//   - a sidecar named like one an earlier SidecarSet of this admission
//     injects is not injected either, with a warning.
//
// For a hot-upgrade sidecar, either twin's name counts. The version returned
// carries only the sidecars to inject, whose names are then reserved; it is
// nil when none is left, with the reason in skip: AlreadyInjected when the
// pod has every sidecar already (this webhook invoked again, or a pod
// created from an injected pod's manifest), NameConflict otherwise.
func selectSidecars(v *version, names map[string]owner) (*version, *Skip, []string) {
	var warnings []string
	var initContainers, containers []appsv1beta1.SidecarContainer
	total, present := 0, 0
	for _, list := range []struct {
		containers []appsv1beta1.SidecarContainer
		isInit     bool
		out        *[]appsv1beta1.SidecarContainer
	}{{v.set.Spec.InitContainers, true, &initContainers}, {v.set.Spec.Containers, false, &containers}} {
		for i := range list.containers {
			sc := &list.containers[i]
			total++
			taken, isTaken := owner{}, false
			for _, n := range appsv1beta1.InjectedNames(sc, list.isInit) {
				if taken, isTaken = names[n]; isTaken {
					break
				}
			}
			switch {
			case !isTaken:
				*list.out = append(*list.out, *sc)
				for _, n := range appsv1beta1.InjectedNames(sc, list.isInit) {
					names[n] = owner{desc: fmt.Sprintf("sidecar %q of SidecarSet %q", n, v.name)}
				}
			case taken.injected:
				present++
			case taken.fromPod:
				warnings = append(warnings, fmt.Sprintf("SidecarSet %q: sidecar %q was not injected: %s has that name and is kept as it is",
					v.name, sc.Name, taken.desc))
			default:
				warnings = append(warnings, fmt.Sprintf("SidecarSet %q: sidecar %q was not injected: its name is taken by %s", v.name, sc.Name, taken.desc))
			}
		}
	}
	switch {
	case len(initContainers)+len(containers) == total:
		return v, nil, nil
	case len(initContainers)+len(containers) > 0:
		reduced := *v
		reduced.set = v.set.DeepCopy()
		reduced.set.Spec.InitContainers, reduced.set.Spec.Containers = initContainers, containers
		return &reduced, nil, warnings
	case present == total:
		return nil, &Skip{SidecarSet: v.name, Reason: ReasonAlreadyInjected,
			Message: "the pod already has each of its sidecars, injected"}, nil
	default:
		return nil, &Skip{SidecarSet: v.name, Reason: ReasonNameConflict,
			Message: "none of its sidecars was injected: their names are taken"}, warnings
	}
}

// merged is where the built sidecars, volumes and pull secrets go.
type merged struct {
	initBefore, initAfter []corev1.Container
	before, after         []corev1.Container
	volumes               []corev1.Volume
	// dupSecrets are the indexes, in the pod's imagePullSecrets, of repeated
	// names, removed when secrets are added.
	dupSecrets  []int
	pullSecrets []corev1.LocalObjectReference
	warnings    []string
	// restricted is what sidecars were not given, reach what the given
	// needs, per SidecarSet (authority.go).
	restricted []Restriction
	reach      map[string]authority.Verbs
}

// merge places the built sidecars around the pod's own containers.
//
//   - Init containers are sorted by name across SidecarSets (stable), then
//     BeforeAppContainer ones go before the pod's init containers and the
//     others (the default) after them.
//   - Containers keep SidecarSet name order then spec order (or are sorted
//     by name with Options.SortContainersByName); BeforeAppContainer ones
//     (the default) go before the pod's containers as a block, the others
//     after.
//   - Volumes follow the pod's; a name the pod or an earlier SidecarSet
//     already defines is not added again (a warning says so when the
//     definitions differ).
//   - imagePullSecrets follow the pod's, deduplicated by name.
//   - Each sidecar gets the ServiceAccount token mount the API server's
//     admission plugin would give it (see serviceaccount.go).
//   - A sidecar is not given the mounts, devices or token its SidecarSet's
//     authority does not cover (see authority.go).
func merge(pod *corev1.Pod, plans []*plan, opts Options) merged {
	var m merged
	var inits, conts []sidecar
	for _, p := range plans {
		inits = append(inits, p.initContainers...)
		conts = append(conts, p.containers...)
	}
	byName := func(a, b sidecar) int { return strings.Compare(a.container.Name, b.container.Name) }
	slices.SortStableFunc(inits, byName)
	if opts.SortContainersByName {
		slices.SortStableFunc(conts, byName)
	}
	for _, s := range inits {
		if s.policy == appsv1beta1.BeforeAppContainerType {
			m.initBefore = append(m.initBefore, s.container)
		} else {
			m.initAfter = append(m.initAfter, s.container)
		}
	}
	for _, s := range conts {
		if s.policy == appsv1beta1.BeforeAppContainerType || s.policy == "" {
			m.before = append(m.before, s.container)
		} else {
			m.after = append(m.after, s.container)
		}
	}
	m.volumes, m.warnings = mergeVolumes(pod.Spec.Volumes, plans)
	mountServiceAccountToken(pod, &m)
	owners := map[string]*version{}
	for _, p := range plans {
		for _, s := range append(slices.Clip(p.initContainers), p.containers...) {
			owners[s.container.Name] = p.v
		}
	}
	m.restricted, m.reach = restrict(pod, &m, owners, opts.BeforeAdmission)
	m.dupSecrets, m.pullSecrets = mergePullSecrets(pod.Spec.ImagePullSecrets, plans)
	return m
}

func mergeVolumes(podVolumes []corev1.Volume, plans []*plan) ([]corev1.Volume, []string) {
	type definition struct {
		owner  string
		volume corev1.Volume
	}
	defined := make(map[string]definition, len(podVolumes))
	for _, v := range podVolumes {
		defined[v.Name] = definition{owner: "the pod", volume: v}
	}
	var added []corev1.Volume
	var warnings []string
	for _, p := range plans {
		for _, v := range p.volumes {
			d, ok := defined[v.Name]
			if !ok {
				defined[v.Name] = definition{owner: fmt.Sprintf("SidecarSet %q", p.v.name), volume: v}
				added = append(added, v)
				continue
			}
			if !sameVolumeSource(d.volume, v) {
				warnings = append(warnings, fmt.Sprintf(
					"SidecarSet %q: volume %q is also defined, differently, by %s; the sidecars use that definition",
					p.v.name, v.Name, d.owner))
			}
		}
	}
	return added, warnings
}

// sameVolumeSource compares two volumes once defaulted, so that a pod
// volume defaulted by the API server equals the SidecarSet's definition.
func sameVolumeSource(a, b corev1.Volume) bool {
	vols := []corev1.Volume{*a.DeepCopy(), *b.DeepCopy()}
	appsv1beta1.SetVolumeDefaults(vols)
	return apiequality.Semantic.DeepEqual(vols[0].VolumeSource, vols[1].VolumeSource)
}

func mergePullSecrets(podSecrets []corev1.LocalObjectReference, plans []*plan) ([]int, []corev1.LocalObjectReference) {
	var wanted []corev1.LocalObjectReference
	for _, p := range plans {
		wanted = append(wanted, p.pullSecrets...)
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	seen := make(map[string]bool, len(podSecrets)+len(wanted))
	var dups []int
	for i, s := range podSecrets {
		if seen[s.Name] {
			dups = append(dups, i)
		}
		seen[s.Name] = true
	}
	var added []corev1.LocalObjectReference
	for _, s := range wanted {
		if !seen[s.Name] {
			seen[s.Name] = true
			added = append(added, s)
		}
	}
	return dups, added
}

// apply returns the minimal JSON patch that turns the pod into the injected
// one (one op per added container, volume, pull secret and annotation, a
// whole list or map when the pod had none, never a re-serialization of
// fields injection does not touch) and, withPod, the injected pod.
func apply(pod *corev1.Pod, m merged, annotations map[string]string, withPod bool) (*corev1.Pod, []jsonpatch.Operation) {
	// The injected pod's lists are built from its own copy, so that it
	// shares nothing with the input; the ops are the same either way.
	src := pod
	if withPod {
		src = pod.DeepCopy()
	}
	annots, annOps := annotationOps(pod.Annotations, annotations)
	inits, initOps := placeList("/spec/initContainers", src.Spec.InitContainers, m.initBefore, m.initAfter)
	containers, containerOps := placeList("/spec/containers", src.Spec.Containers, m.before, m.after)
	volumes, volumeOps := placeList("/spec/volumes", src.Spec.Volumes, nil, m.volumes)
	secrets, secretOps := pullSecretOps(src.Spec.ImagePullSecrets, m.dupSecrets, m.pullSecrets)
	ops := slices.Concat(annOps, initOps, containerOps, volumeOps, secretOps)
	if !withPod {
		return nil, ops
	}
	src.Annotations, src.Spec.InitContainers, src.Spec.Containers, src.Spec.Volumes, src.Spec.ImagePullSecrets =
		annots, inits, containers, volumes, secrets
	return src, ops
}

// annotationOps returns the final annotations and the ops writing the
// changed keys, in key order.
func annotationOps(original, final map[string]string) (map[string]string, []jsonpatch.Operation) {
	var changed []string
	for k, v := range final {
		if old, ok := original[k]; !ok || old != v {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return maps.Clone(original), nil
	}
	if len(original) == 0 {
		return maps.Clone(final), []jsonpatch.Operation{jsonpatch.NewOperation("add", "/metadata/annotations", maps.Clone(final))}
	}
	slices.Sort(changed)
	ops := make([]jsonpatch.Operation, 0, len(changed))
	for _, k := range changed {
		op := "add"
		if _, ok := original[k]; ok {
			op = "replace"
		}
		ops = append(ops, jsonpatch.NewOperation(op, "/metadata/annotations/"+escapePointer(k), final[k]))
	}
	return maps.Clone(final), ops
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// placeList returns before + existing + after, and the ops that insert the
// new items: the before block at indexes 0..n-1, the after ones appended,
// or the whole list when the pod had none.
func placeList[T any](path string, existing, before, after []T) ([]T, []jsonpatch.Operation) {
	if len(before) == 0 && len(after) == 0 {
		return existing, nil
	}
	result := make([]T, 0, len(before)+len(existing)+len(after))
	result = append(append(append(result, before...), existing...), after...)
	if len(existing) == 0 {
		return result, []jsonpatch.Operation{jsonpatch.NewOperation("add", path, result)}
	}
	ops := make([]jsonpatch.Operation, 0, len(before)+len(after))
	for i, item := range before {
		ops = append(ops, jsonpatch.NewOperation("add", path+"/"+strconv.Itoa(i), item))
	}
	for _, item := range after {
		ops = append(ops, jsonpatch.NewOperation("add", path+"/-", item))
	}
	return result, ops
}

// pullSecretOps removes the pod's repeated pull secrets (highest index
// first, so the indexes stay valid) and appends the new ones.
func pullSecretOps(existing []corev1.LocalObjectReference, dups []int, added []corev1.LocalObjectReference) ([]corev1.LocalObjectReference, []jsonpatch.Operation) {
	if len(added) == 0 && len(dups) == 0 {
		return existing, nil
	}
	const path = "/spec/imagePullSecrets"
	kept := make([]corev1.LocalObjectReference, 0, len(existing)+len(added))
	for i, s := range existing {
		if !slices.Contains(dups, i) {
			kept = append(kept, s)
		}
	}
	var ops []jsonpatch.Operation
	for _, dup := range slices.Backward(dups) {
		ops = append(ops, jsonpatch.NewOperation("remove", path+"/"+strconv.Itoa(dup), nil))
	}
	result, addOps := placeList(path, kept, nil, added)
	if len(kept) == 0 {
		// Only when the pod had no secrets (duplicates always keep one).
		return result, addOps
	}
	return result, append(ops, addOps...)
}
