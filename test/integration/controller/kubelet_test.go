package controller_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The simulated kubelet follows the kwok stages of the e2e suite
// (test/cluster/stages): a running pod reports each container with its
// image as the runtime names it (fully qualified) and an image ID derived
// from the image. When the controller changes an image in place, the
// container restarts: it reports the new image and image ID, and its
// restartCount grows by one. Every container reports its CPU and memory
// (resources, allocatedResources) and the pod its observed generation, so
// that a resize (pods/resize) is applied when the kubelet next runs.
// Nothing happens until a test calls runKubelet: the test decides when a
// restart or a resize completes. An image whose tag ends in "invalid"
// cannot be pulled: the container waits with reason ErrImagePull, keeps its
// old image ID and the pod is not ready, as with the kwok stages.

// qualified is an image as a container runtime reports it.
func qualified(image string) string {
	name := image
	if !strings.Contains(name, "/") {
		name = "docker.io/library/" + name
	}
	if !strings.Contains(name, "@") && !strings.Contains(path.Base(name), ":") {
		name += ":latest"
	}
	return name
}

// imageIDOf is the image ID a runtime reports for an image.
func imageIDOf(image string) string {
	q := qualified(image)
	repo := q[:strings.LastIndexAny(q, ":@")]
	return fmt.Sprintf("%s@sha256:%x", repo, sha256.Sum256([]byte(q)))
}

// unpullable reports whether an image cannot be pulled: its tag ends in
// "invalid".
func unpullable(image string) bool {
	return strings.HasSuffix(image, "invalid") && strings.Contains(path.Base(image), ":")
}

// containerStatus is what the kubelet reports for a container given its
// previous status (nil for a new pod). A running container whose image is
// unchanged keeps its status.
func containerStatus(c *corev1.Container, old *corev1.ContainerStatus, longRunning bool, now metav1.Time) corev1.ContainerStatus {
	if old != nil && old.Image == qualified(c.Image) {
		st := *old
		st.Resources, st.AllocatedResources = reportedResources(c)
		return st
	}
	if unpullable(c.Image) {
		st := corev1.ContainerStatus{Name: c.Name, Image: qualified(c.Image), State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to pull image " + c.Image + ": not found"},
		}}
		if old != nil {
			st.ImageID, st.RestartCount = old.ImageID, old.RestartCount
		}
		return st
	}
	st := newContainerStatus(c, old, longRunning, now)
	st.Resources, st.AllocatedResources = reportedResources(c)
	return st
}

// reportedResources are a container's CPU and memory as a kubelet reports
// them: requests and limits, and the requests allocated.
func reportedResources(c *corev1.Container) (*corev1.ResourceRequirements, corev1.ResourceList) {
	pick := func(l corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[name]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q
			}
		}
		return out
	}
	r := &corev1.ResourceRequirements{Requests: pick(c.Resources.Requests), Limits: pick(c.Resources.Limits)}
	return r, pick(c.Resources.Requests)
}

// newContainerStatus is a container's status after it started or restarted.
func newContainerStatus(c *corev1.Container, old *corev1.ContainerStatus, longRunning bool, now metav1.Time) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: c.Name, Image: qualified(c.Image), ImageID: imageIDOf(c.Image), Ready: longRunning}
	if old != nil {
		st.RestartCount = old.RestartCount + 1
		st.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: now}}
	}
	if longRunning {
		st.Started = new(true)
		st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	} else {
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}}
	}
	return st
}

// kubeletStatus is the status the kubelet reports for a pod now.
func kubeletStatus(pod *corev1.Pod) corev1.PodStatus {
	now := metav1.Now()
	old := func(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	st := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: pod.Status.StartTime, ObservedGeneration: pod.Generation,
		QOSClass: pod.Status.QOSClass}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		native := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c, old(pod.Status.InitContainerStatuses, c.Name), native, now))
	}
	ready := corev1.ConditionTrue
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c, old(pod.Status.ContainerStatuses, c.Name), true, now))
		if unpullable(c.Image) {
			ready = corev1.ConditionFalse
		}
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		c := corev1.PodCondition{Type: t, Status: ready, LastTransitionTime: now}
		for _, prev := range pod.Status.Conditions {
			if prev.Type == t && prev.Status == ready {
				c.LastTransitionTime = prev.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	// Conditions the kubelet does not own (the controller's
	// SidecarSetUpgradable) are kept.
	for _, prev := range pod.Status.Conditions {
		if prev.Type != corev1.PodReady && prev.Type != corev1.ContainersReady {
			st.Conditions = append(st.Conditions, prev)
		}
	}
	return st
}

// runKubelet brings the status of every pod of a namespace in line with its
// spec as it is when runKubelet starts: new pods start, containers whose
// image changed restart. A change the controller makes meanwhile waits for
// the next run, so that a test sees every step of a rollout.
func runKubelet(ctx context.Context, ns string) {
	pods := &corev1.PodList{}
	gomega.ExpectWithOffset(1, k8s.List(ctx, pods, client.InNamespace(ns))).To(gomega.Succeed())
	for i := range pods.Items {
		syncPod(ctx, &pods.Items[i])
	}
}

// syncPod writes the kubelet status of a pod's spec as listed onto the
// pod's latest status (which may have a newer condition), retrying on
// conflicts with the controller's writes.
func syncPod(ctx context.Context, listed *corev1.Pod) {
	gomega.EventuallyWithOffset(2, func(g gomega.Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(listed), pod)).To(gomega.Succeed())
		status := kubeletStatus(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: listed.Generation}, Spec: listed.Spec, Status: pod.Status})
		if equality.Semantic.DeepEqual(status, pod.Status) {
			return
		}
		pod.Status = status
		g.Expect(k8s.Status().Update(ctx, pod)).To(gomega.Succeed())
	}).WithContext(ctx).Should(gomega.Succeed())
}
