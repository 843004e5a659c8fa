package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// change accumulates what one pod patch changes: images of containers and
// native sidecars (by name, unique across both lists in a pod) and
// annotations.
type change struct {
	v      *podView
	images map[string]string
	anns   map[string]string
}

func newChange(v *podView) *change {
	return &change{v: v, images: map[string]string{}, anns: map[string]string{}}
}

func (c *change) setImage(container, image string) {
	c.images[container] = image
}

// annotation returns an annotation as the pod will have it.
func (c *change) annotation(key string) string {
	if v, ok := c.anns[key]; ok {
		return v
	}
	return c.v.pod.Annotations[key]
}

// recordImageIDs records, in the SidecarSet's in-place update state entry,
// the imageID each changed container reports now (in containerStatuses or,
// for a native sidecar, initContainerStatuses), creating the entry (with
// revision and timestamp) if it is missing.
func (c *change) recordImageIDs(set, revision string, now time.Time) {
	if len(c.images) == 0 {
		return
	}
	entry := podstate.InPlaceUpdateState{Revision: revision, UpdateTimestamp: metav1.NewTime(now.Truncate(time.Second))}
	if old := c.v.state.InPlace[set]; old != nil {
		entry = *old
		entry.LastContainerStatuses = maps.Clone(old.LastContainerStatuses)
	}
	if entry.LastContainerStatuses == nil {
		entry.LastContainerStatuses = map[string]podstate.ContainerStatus{}
	}
	for name := range c.images {
		var id string
		if st := containerStatus(c.v.pod, name); st != nil {
			id = st.ImageID
		}
		entry.LastContainerStatuses[name] = podstate.ContainerStatus{ImageID: id}
	}
	state := maps.Clone(c.v.state.InPlace)
	if state == nil {
		state = map[string]*podstate.InPlaceUpdateState{}
	}
	state[set] = &entry
	c.anns[appsv1beta1.InPlaceUpdateStateAnnotation] = podstate.EncodeInPlaceState(state)
}

// imageList returns the strategic-merge list (by container name) of the
// changed images of one of the pod's container lists, in pod order. Only
// containers and native sidecars are ever set (specContainer), so a plain
// init container never appears.
func (c *change) imageList(list []corev1.Container) []map[string]string {
	var out []map[string]string
	for i := range list {
		if image, ok := c.images[list[i].Name]; ok {
			out = append(out, map[string]string{"name": list[i].Name, "image": image})
		}
	}
	return out
}

// podUpdate encodes the change as one strategic-merge patch carrying the
// pod's resourceVersion, so that the API server rejects it if the pod
// changed since it was read. Changed images go to spec.containers or
// spec.initContainers, wherever the container is.
func (c *change) podUpdate(hash string) PodUpdate {
	pod := c.v.pod
	meta := map[string]any{"resourceVersion": pod.ResourceVersion}
	if len(c.anns) > 0 {
		meta["annotations"] = c.anns
	}
	doc := map[string]any{"metadata": meta}
	spec := map[string]any{}
	if l := c.imageList(pod.Spec.Containers); len(l) > 0 {
		spec["containers"] = l
	}
	if l := c.imageList(pod.Spec.InitContainers); len(l) > 0 {
		spec["initContainers"] = l
	}
	if len(spec) > 0 {
		doc["spec"] = spec
	}
	patch, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("rollout: encoding a patch of strings: %v", err)) // maps of strings always encode
	}
	return PodUpdate{Pod: c.v.key, UID: pod.UID, ResourceVersion: pod.ResourceVersion, Patch: patch, Hash: hash}
}

// buildUpdate builds the in-place upgrade of one pod to the current hash:
//
//   - each cold sidecar (a container or a native sidecar) whose pod image
//     differs gets the SidecarSet's image; plain init containers are never
//     touched, even when their image changed (they ran once; a pod whose
//     only difference is there gets its hash rewritten and nothing else);
//   - each hot sidecar gets the image on one twin (hotupgrade.go);
//   - the SidecarSet's hash entry is rewritten (timestamp, hash, sidecar
//     list, controllerRevision), even if no image changed;
//   - the in-place update state records the changed containers' imageIDs;
//   - the SidecarSet's patchPodMetadata is applied again, under the rule
//     injection applies (policy/podmeta): keys holding SidecarSet state,
//     and keys the whitelist in force does not allow, are not written; the
//     returned skips say which.
//
// Only the sidecars the pod records as injected (the sidecarList of its
// hash entry) are upgraded, and the list is kept: a sidecar left out at
// injection because the pod has a container of its name is that container,
// the pod's own, and never gets the SidecarSet's image.
//
// A pod whose resize was applied (resize.go) also gets the current
// revision's without-image entry. Nothing else (env, mounts, resources) is
// touched.
func (s *setView) buildUpdate(v *podView, now time.Time, latestRevision string) (PodUpdate, []podmeta.Skip, error) {
	c := newChange(v)
	for _, sc := range s.cold {
		if pc := specContainer(v.pod, sc.Name); pc != nil && pc.Image != sc.Image && s.injectedInto(v, sc.Name) {
			c.setImage(sc.Name, sc.Image)
		}
	}
	s.upgradeHot(c)

	hashes := maps.Clone(v.state.Hashes)
	if hashes == nil {
		hashes = podstate.Hashes{}
	}
	list := s.sidecarList
	if recorded := v.state.Hashes[s.name].SidecarList; len(recorded) > 0 {
		list = recorded
	}
	var withoutImage podstate.HashEntry
	hashes[s.name], withoutImage = podstate.Version{
		SidecarSet: s.name, Hashes: s.hashes, SidecarList: list, ControllerRevision: latestRevision,
	}.Entries(now)
	c.anns[appsv1beta1.SidecarSetHashAnnotation] = hashes.Encode()
	if v.kind == kindResized {
		// The resize made the pod's sidecars the current revision's but
		// for images: it records that revision in both annotations, as
		// injection would have.
		without := maps.Clone(v.state.HashesWithoutImage)
		if without == nil {
			without = podstate.Hashes{}
		}
		without[s.name] = withoutImage
		c.anns[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = without.Encode()
	}
	c.recordImageIDs(s.name, s.hashes.Hash, now)

	var skipped []podmeta.Skip
	if len(s.obj.Spec.PatchPodMetadata) > 0 {
		current := maps.Clone(v.pod.Annotations)
		if current == nil {
			current = map[string]string{}
		}
		maps.Copy(current, c.anns)
		res, err := podmeta.Apply(current, s.obj, s.whitelist)
		if err != nil {
			return PodUpdate{}, nil, fmt.Errorf("applying patchPodMetadata: %w", err)
		}
		maps.Copy(c.anns, res.Changed)
		skipped = res.Skipped
	}
	return c.podUpdate(s.hashes.Hash), skipped, nil
}

// changesImages reports whether the in-place patch of a pod changes an
// image (imageChanges).
func (s *setView) changesImages(v *podView) bool {
	return len(s.imageChanges(v)) > 0
}

// imageChanges says which images the in-place patch of a pod changes: a
// cold sidecar's ("agent old→new"), or a hot-upgrade sidecar's that neither
// twin has ("envoy (hot upgrade) →new").
func (s *setView) imageChanges(v *podView) []string {
	var images []string
	for _, sc := range s.cold {
		if pc := specContainer(v.pod, sc.Name); pc != nil && pc.Image != sc.Image && s.injectedInto(v, sc.Name) {
			images = append(images, fmt.Sprintf("%s %s→%s", sc.Name, pc.Image, sc.Image))
		}
	}
	for _, h := range s.hot {
		c1, c2 := specContainer(v.pod, h.twin1), specContainer(v.pod, h.twin2)
		if c1 != nil && c2 != nil && c1.Image != h.image && c2.Image != h.image && s.injectedInto(v, h.name) {
			images = append(images, fmt.Sprintf("%s (hot upgrade) →%s", h.name, h.image))
		}
	}
	return images
}

// injectedInto reports whether the pod records a sidecar as injected by the
// SidecarSet: listed in its hash entry's sidecarList, or any sidecar when the
// entry has no list (OpenKruise's legacy format).
func (s *setView) injectedInto(v *podView, sidecar string) bool {
	recorded := v.state.Hashes[s.name].SidecarList
	return len(recorded) == 0 || slices.Contains(recorded, sidecar)
}
