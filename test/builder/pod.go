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
