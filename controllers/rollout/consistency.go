package rollout

import (
	"strings"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Completion of an in-place update.
//
// When the planner changes a container's image it records, in the pod's
// kruise.io/sidecarset-inplace-update-state entry for the SidecarSet, the
// imageID the container reported just before (lastContainerStatuses). A
// container's update is complete when:
//
//   - it has no recorded entry: this SidecarSet never changed it in place
//     (the webhook injected it as it is), so nothing is in flight; or
//   - its spec image is digest-pinned (repo@sha256:…) and its status imageID
//     carries that digest, whatever the runtime reports as status image; or
//   - its status image names the spec image once both are normalized
//     (nginx:1.25 == docker.io/library/nginx:1.25, a missing tag is :latest),
//     its status imageID is not empty, and either that imageID differs from
//     the recorded one or the container is running.
//
// The last rule is the fix of OpenKruise's "the imageID must change": a
// re-tag of the same digest (nginx -> nginx:1.23) restarts the container on
// the same imageID, and completes once the restarted container runs and
// reports the new name. An image that cannot be pulled keeps the container
// waiting (it then reports the old image, or the new name with the old
// imageID), and stays incomplete. The old container, still running before
// the kubelet restarts it, reports the old image name, so it is not taken for
// the new one unless both names normalize to the same reference, in which
// case nothing changes in the container anyway.
//
// Native sidecars (init containers with restartPolicy Always) follow the
// same rule: since Kubernetes 1.33 the kubelet restarts a native sidecar
// whose image changed, and its entry of status.initContainerStatuses then
// reports the new image and imageID, like a container's. Plain init
// containers ran once: the planner never changes nor checks them.
//
// A pod is consistent when the update of every one of the SidecarSet's
// containers and native sidecars in it (both twins of a hot-upgrade
// sidecar) is complete.

// Crashes after an in-place update.
//
// A sidecar whose new image crashes at once is Running, and Ready when it
// has no readiness probe, for a moment after each start: a kubelet starts
// it again at once, then after a growing back-off, in which it waits in
// CrashLoopBackOff. Running, it is judged by the min-ready time (guard.go:
// it must run that long to count). Not running, an instance started after
// the update that terminated (the current state, or the last one: the
// in-place restart itself leaves the old instance there, which started
// before) says the update made it crash, and the pod fails the failure
// budget at once. Times have whole seconds: an instance started in the
// second of the update is taken for the old one (a new one that crashes is
// then seen at its next crash). Only a complete update's crash counts: a
// sidecar rolled back from a crashing image reports the old image's crashes
// until the kubelet restarts it on the restored one, and one running again
// is not failed for the crash before.

// crashedAfterUpdate returns the instance of a container started after its
// in-place update at since that terminated, when the container does not
// run now; nil otherwise.
func crashedAfterUpdate(st *corev1.ContainerStatus, since time.Time) *corev1.ContainerStateTerminated {
	if st == nil || st.State.Running != nil {
		return nil
	}
	t := st.State.Terminated
	if t == nil {
		t = st.LastTerminationState.Terminated
	}
	if t == nil || !t.StartedAt.After(since.Truncate(time.Second)) {
		return nil
	}
	return t
}

// sameImage reports whether two image references name the same image:
// equal strings, or equal once normalized (docker.io/library prefix,
// :latest when no tag is given).
func sameImage(a, b string) bool {
	if a == b {
		return true
	}
	na, ok := normalizeImage(a)
	if !ok {
		return false
	}
	nb, ok := normalizeImage(b)
	return ok && na == nb
}

func normalizeImage(image string) (string, bool) {
	p := parseImage(image)
	return p.normalized, p.normalized != ""
}

// pinnedDigest returns the digest of a digest-pinned image reference, or ""
// for a reference by tag.
func pinnedDigest(image string) string { return parseImage(image).digest }

// parsedImage is what the planner reads of an image reference, or of a
// status imageID.
type parsedImage struct {
	// normalized is the image's name normalized, with :latest when no tag
	// is given ("" when it does not parse as a name).
	normalized string
	// digest is the digest it pins ("" when none).
	digest string
}

// parsedImages memoizes the parses of image references and imageIDs: a plan
// compares the images of every pod, a handful of distinct strings across
// thousands of pods, and parsing one (distribution/reference's regular
// expressions) cost more than the rest of a plan together. Bounded: least
// recently used first out.
var parsedImages = lru.New(4096)

// imageKey and imageIDKey key parsedImages.
type (
	imageKey   string
	imageIDKey string
)

func parseImage(image string) parsedImage {
	if v, ok := parsedImages.Get(imageKey(image)); ok {
		return v.(parsedImage)
	}
	var p parsedImage
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		p.normalized = reference.TagNameOnly(named).String()
		if d, ok := named.(reference.Digested); ok {
			p.digest = d.Digest().String()
		}
	}
	parsedImages.Add(imageKey(image), p)
	return p
}

// imageIDDigest returns the digest a status imageID carries, in any of the
// forms runtimes report: docker-pullable://nginx@sha256:…,
// docker.io/library/nginx@sha256:…, or a bare sha256:….
func imageIDDigest(imageID string) string {
	if v, ok := parsedImages.Get(imageIDKey(imageID)); ok {
		return v.(parsedImage).digest
	}
	var p parsedImage
	id := imageID
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+len("://"):]
	}
	if ref, err := reference.ParseAnyReference(id); err == nil {
		if d, ok := ref.(reference.Digested); ok {
			p.digest = d.Digest().String()
		}
	}
	parsedImages.Add(imageIDKey(imageID), p)
	return p.digest
}

// updateComplete reports whether a container's in-place update took effect
// (see the rule at the top of this file). specImage is the image in the pod
// spec, st the container's status (nil if the pod reports none), and
// recorded the container's entry in the in-place update state (nil if the
// SidecarSet never changed it in place).
func updateComplete(specImage string, st *corev1.ContainerStatus, recorded *podstate.ContainerStatus) bool {
	if recorded == nil {
		return true
	}
	if st == nil || st.ImageID == "" {
		return false
	}
	if d := pinnedDigest(specImage); d != "" {
		return imageIDDigest(st.ImageID) == d
	}
	if !sameImage(st.Image, specImage) {
		return false
	}
	return st.ImageID != recorded.ImageID || st.State.Running != nil
}

// specContainer returns the pod's long-running container of that name: a
// container of spec.containers, or a native sidecar (an init container with
// restartPolicy Always) of spec.initContainers. It returns nil for a plain
// init container, which ran once and cannot be upgraded, and for a missing
// name. Names are unique across both lists in a pod.
func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			if appsv1beta1.IsNativeSidecar(c) {
				return c
			}
			return nil
		}
	}
	return nil
}

// containerStatus returns the pod's status of the container of that name,
// from status.containerStatuses or status.initContainerStatuses, or nil.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// longRunningNames returns the names of the pod's containers and native
// sidecars, in spec order (native sidecars first, as they start first).
func longRunningNames(pod *corev1.Pod) []string {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		if appsv1beta1.IsNativeSidecar(&pod.Spec.InitContainers[i]) {
			names = append(names, pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range pod.Spec.Containers {
		names = append(names, pod.Spec.Containers[i].Name)
	}
	return names
}

// containerComplete reports whether the in-place update of one of the
// SidecarSet's containers in a pod is complete, given the SidecarSet's entry
// of the pod's in-place update state (nil if none).
func containerComplete(pod *corev1.Pod, name string, state *podstate.InPlaceUpdateState) bool {
	var recorded *podstate.ContainerStatus
	if state != nil {
		if r, ok := state.LastContainerStatuses[name]; ok {
			recorded = &r
		}
	}
	if recorded == nil {
		return true
	}
	c := specContainer(pod, name)
	if c == nil {
		return true // the container is gone from the pod: nothing can be in flight
	}
	return updateComplete(c.Image, containerStatus(pod, name), recorded)
}

// podRunningAndReady reports whether a pod runs, passes its Ready condition
// and is not terminating.
func podRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && podReadyCondition(pod)
}

// podReadyCondition reports whether the pod's Ready condition is True.
func podReadyCondition(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// containerStatusReady reports whether the named container reports ready.
func containerStatusReady(pod *corev1.Pod, name string) bool {
	st := containerStatus(pod, name)
	return st != nil && st.Ready
}
