// Package upgrade is the one rule of how a change to a SidecarSet's sidecars
// reaches the pods that already run them. The validating webhook words it
// as admission warnings when a SidecarSet is updated; the rollout planner
// applies it to each pod, comparing the revision the pod runs with the
// current one. Both compare two defaulted specs with Compare.
//
// A running pod can take, in place:
//
//   - a new image of a container or native sidecar (the kubelet restarts
//     that container alone);
//   - new CPU and memory requests and limits of a container or native
//     sidecar, or a changed resourcesPolicy, through the pods/resize
//     subresource (Kubernetes 1.33 and later): the kubelet applies them
//     without a restart unless the container's resizePolicy asks for one.
//     Hot-upgrade sidecars are not resized: their twins share one
//     definition, and a resize would reach the idle twin too;
//   - a new image of a plain init container: it ran once, and the pod only
//     records the new hash.
//
// Anything else (env, command, mounts, probes, another resource, an added,
// removed or reordered sidecar, a sidecar-only field, any non-image field
// of a plain init container) needs a new pod.
package upgrade

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Path is how a change reaches a running pod; a larger value needs more.
type Path int

const (
	// PathNone means the pod needs nothing.
	PathNone Path = iota
	// PathInPlace means images are patched in place (and the pod records
	// the new hash).
	PathInPlace
	// PathResize means CPU and memory are resized in place through
	// pods/resize, images patched in place.
	PathResize
	// PathRecreate means only a new pod can get the change.
	PathRecreate
)

// String names the path.
func (p Path) String() string {
	switch p {
	case PathInPlace:
		return "in place"
	case PathResize:
		return "resize"
	case PathRecreate:
		return "recreate"
	default:
		return "none"
	}
}

// Change is what changed in one sidecar, by name.
type Change struct {
	// Name is the sidecar's name.
	Name string
	// Init is set for a sidecar of spec.initContainers; Plain for a plain
	// init container (not a native sidecar), which runs once.
	Init, Plain bool
	// Index is the sidecar's index in the new spec, -1 when removed.
	Index int
	// Added and Removed say the sidecar is new, or gone.
	Added, Removed bool
	// Image is set when the image changed.
	Image bool
	// Resources is set when the resources or the resourcesPolicy changed.
	Resources bool
	// PullPolicyFollowsTag is set when imagePullPolicy changed only because
	// it follows the new image's tag (a manifest without it moved the tag
	// to or from latest): running pods keep their own pull policy, which
	// Kubernetes does not let change, and this is no change for them.
	PullPolicyFollowsTag bool
	// PullPolicyBefore and PullPolicyAfter are the two pull policies.
	PullPolicyBefore, PullPolicyAfter corev1.PullPolicy
	// Fields are the JSON names of the changed fields other than the
	// image, in declaration order: the Kubernetes container fields, then
	// the sidecar fields (resources and resourcesPolicy among them).
	Fields []string
	// hot is set for a hot-upgrade sidecar.
	hot bool
}

// Path is how this sidecar's change reaches a running pod.
func (c Change) Path() Path {
	switch {
	case c.Added || c.Removed || c.beyondResources():
		return PathRecreate
	case c.Plain && c.Resources:
		return PathRecreate
	case c.Plain:
		if c.Image {
			return PathInPlace
		}
		return PathNone
	case c.Resources && c.hot:
		return PathRecreate
	case c.Resources:
		return PathResize
	case c.Image:
		return PathInPlace
	default:
		return PathNone
	}
}

// beyondResources reports whether a field other than the image, the
// resources and the resourcesPolicy changed.
func (c Change) beyondResources() bool {
	return slices.ContainsFunc(c.Fields, func(f string) bool { return !isResourceField(f) })
}

func isResourceField(name string) bool {
	return name == "resources" || name == "resourcesPolicy"
}

// Order is the order of a list of sidecars before and after, when it
// changed.
type Order struct {
	Before, After []string
}

// Diff is what changed between two versions of a SidecarSet's sidecars.
type Diff struct {
	// Changes lists the changed sidecars: init containers first, then
	// containers, each in the new spec's order, removed ones last.
	Changes []Change
	// InitOrder and Order are set when the order of the init containers
	// (when it is hashed: some init container is a native sidecar) or of
	// the containers changed.
	InitOrder, Order *Order
	// HashChanged is set when the without-image hash differs (a pull
	// policy that follows its tag is compared as the old one): only then
	// do running pods see the change at all. A plain init container's
	// changes are hashed only when some init container is a native sidecar.
	HashChanged bool
	// Path is how the whole change reaches a running pod: the largest of
	// the changes' paths, PathRecreate for a new order, and PathRecreate
	// for a hash change that no field explains.
	Path Path
}

// Compare compares two defaulted versions of a SidecarSet spec
// (appsv1beta1.SetDefaults): the one a pod runs, and the current one.
func Compare(before, after *appsv1beta1.SidecarSetSpec) Diff {
	var d Diff
	d.HashChanged = hashChanged(before, after)
	var initOrder, order *Order
	d.Changes, initOrder = compareList(before.InitContainers, after.InitContainers, true)
	var changes []Change
	changes, order = compareList(before.Containers, after.Containers, false)
	d.Changes = append(d.Changes, changes...)
	if initOrder != nil && (appsv1beta1.HasNativeSidecar(before.InitContainers) || appsv1beta1.HasNativeSidecar(after.InitContainers)) {
		d.InitOrder = initOrder
	}
	d.Order = order
	for _, c := range d.Changes {
		d.Path = max(d.Path, c.Path())
	}
	if d.InitOrder != nil || d.Order != nil {
		d.Path = PathRecreate
	}
	if d.HashChanged && d.Path < PathResize {
		// Only images changed field by field, yet the hash differs: a
		// change the comparison cannot name.
		d.Path = PathRecreate
	}
	return d
}

// hashChanged reports whether the without-image hashes differ, the new
// spec's pull policies that follow their tags taken as the old ones.
func hashChanged(before, after *appsv1beta1.SidecarSetSpec) bool {
	b, errB := appsv1beta1.ComputeHashes(before)
	a, errA := appsv1beta1.ComputeHashes(after)
	if errA != nil || errB != nil {
		return true
	}
	if a.WithoutImage == b.WithoutImage {
		return false
	}
	h, substituted, err := appsv1beta1.WithoutImageHashWithPullPolicies(after, pullPolicies(before))
	return err != nil || !substituted || h != b.WithoutImage
}

// compareList compares one list of sidecars by name.
func compareList(before, after []appsv1beta1.SidecarContainer, init bool) ([]Change, *Order) {
	beforeByName := make(map[string]*appsv1beta1.SidecarContainer, len(before))
	for i := range before {
		beforeByName[before[i].Name] = &before[i]
	}
	var changes []Change
	afterNames := make(map[string]bool, len(after))
	var afterOrder, beforeOrder []string
	for i := range after {
		c := &after[i]
		afterNames[c.Name] = true
		ch := Change{Name: c.Name, Init: init, Plain: init && !appsv1beta1.IsNativeSidecar(&c.Container), Index: i,
			hot: c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade}
		prev, existed := beforeByName[c.Name]
		if !existed {
			ch.Added = true
			changes = append(changes, ch)
			continue
		}
		afterOrder = append(afterOrder, c.Name)
		compareSidecar(&ch, prev, c)
		if ch.Image || ch.Resources || ch.PullPolicyFollowsTag || len(ch.Fields) > 0 {
			changes = append(changes, ch)
		}
	}
	for i := range before {
		c := &before[i]
		if afterNames[c.Name] {
			beforeOrder = append(beforeOrder, c.Name)
			continue
		}
		changes = append(changes, Change{Name: c.Name, Init: init, Plain: init && !appsv1beta1.IsNativeSidecar(&c.Container),
			Index: -1, Removed: true})
	}
	if slices.Equal(afterOrder, beforeOrder) {
		return changes, nil
	}
	return changes, &Order{Before: beforeOrder, After: afterOrder}
}

// compareSidecar fills the change of a sidecar present in both versions.
func compareSidecar(ch *Change, before, after *appsv1beta1.SidecarContainer) {
	ch.Image = before.Image != after.Image
	ch.PullPolicyBefore, ch.PullPolicyAfter = before.ImagePullPolicy, after.ImagePullPolicy
	if !ch.Plain && before.ImagePullPolicy != after.ImagePullPolicy && appsv1beta1.PullPolicyFollowsImage(&after.Container) {
		ch.PullPolicyFollowsTag = true
		same := before.DeepCopy()
		same.ImagePullPolicy = after.ImagePullPolicy
		before = same
	}
	changed, err := appsv1beta1.HashedFieldChanges(after, before)
	if err != nil {
		// Not seen in practice: these types always encode. A sidecar the
		// hash cannot see is taken as changed beyond in-place changes.
		changed = []string{err.Error()}
	}
	for _, name := range changed {
		switch {
		case name == "image":
		case isResourceField(name):
			ch.Resources = true
			ch.Fields = append(ch.Fields, name)
		default:
			ch.Fields = append(ch.Fields, name)
		}
	}
}

// pullPolicies returns the pull policy of each of a spec's sidecars by name.
func pullPolicies(spec *appsv1beta1.SidecarSetSpec) func(string) (corev1.PullPolicy, bool) {
	byName := map[string]corev1.PullPolicy{}
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.Containers, spec.InitContainers} {
		for i := range list {
			byName[list[i].Name] = list[i].ImagePullPolicy
		}
	}
	return func(name string) (corev1.PullPolicy, bool) {
		p, ok := byName[name]
		return p, ok
	}
}
