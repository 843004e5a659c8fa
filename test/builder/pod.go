package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodWrapper builds a Pod.
type PodWrapper struct {
	corev1.Pod
}

// MakePod returns a pod named by generateName prefix "<prefix>-" in a
// namespace, with one container "main" (image busybox:1.36).
func MakePod(prefix, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Namespace: namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}}
}

// Obj returns the pod.
func (w *PodWrapper) Obj() *corev1.Pod {
	return &w.Pod
}

// Clone returns an independent copy of the wrapper.
func (w *PodWrapper) Clone() *PodWrapper {
	return &PodWrapper{*w.DeepCopy()}
}

// Name sets a fixed name instead of the generated one.
func (w *PodWrapper) Name(name string) *PodWrapper {
	w.ObjectMeta.Name, w.GenerateName = name, ""
	return w
}

// Label sets a label.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

// Annotation sets an annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Containers replaces the pod's containers.
func (w *PodWrapper) Containers(cs ...*ContainerWrapper) *PodWrapper {
	w.Spec.Containers = nil
	for _, c := range cs {
		w.Spec.Containers = append(w.Spec.Containers, c.Obj())
	}
	return w
}

// InitContainers appends init containers.
func (w *PodWrapper) InitContainers(cs ...*ContainerWrapper) *PodWrapper {
	for _, c := range cs {
		w.Spec.InitContainers = append(w.Spec.InitContainers, c.Obj())
	}
	return w
}

// Volumes appends volumes.
func (w *PodWrapper) Volumes(vs ...corev1.Volume) *PodWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, vs...)
	return w
}

// ImagePullSecrets appends image pull secrets by name.
func (w *PodWrapper) ImagePullSecrets(names ...string) *PodWrapper {
	for _, n := range names {
		w.Spec.ImagePullSecrets = append(w.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return w
}

// TerminationGracePeriod sets how long the kubelet waits for the
// containers to stop before killing them.
func (w *PodWrapper) TerminationGracePeriod(seconds int64) *PodWrapper {
	w.Spec.TerminationGracePeriodSeconds = &seconds
	return w
}

// RunningPod is a running, ready pod ns/p (resourceVersion 1, node-1) with
// an init container, an app container and one injected sidecar, envoy
// (recorded as the SidecarSet proxy's), as the manager's cache holds one.
func RunningPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", ResourceVersion: "1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"kruise.io/sidecarset-injected-list": "proxy"},
		},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			InitContainers: []corev1.Container{{Name: "setup", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "app:1"}, {Name: "envoy", Image: "envoy:1"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Image: "app:1", ImageID: "id-app-1", Ready: true},
				{Name: "envoy", Image: "envoy:1", ImageID: "id-envoy-1", Ready: true},
			},
		},
	}
}
