package builder

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentWrapper builds a Deployment.
type DeploymentWrapper struct {
	appsv1.Deployment
}

// MakeDeployment returns a Deployment of replicas pods selected by the
// label deployment=<name>, each with one container "main" (image
// busybox:1.36).
func MakeDeployment(name, namespace string, replicas int32) *DeploymentWrapper {
	labels := map[string]string{"deployment": name}
	return &DeploymentWrapper{appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"deployment": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
			},
		},
	}}
}

// Obj returns the Deployment.
func (w *DeploymentWrapper) Obj() *appsv1.Deployment {
	return &w.Deployment
}

// Clone returns an independent copy of the wrapper.
func (w *DeploymentWrapper) Clone() *DeploymentWrapper {
	return &DeploymentWrapper{*w.DeepCopy()}
}

// PodLabel sets a label of the pod template.
func (w *DeploymentWrapper) PodLabel(key, value string) *DeploymentWrapper {
	w.Spec.Template.Labels[key] = value
	return w
}

// Containers replaces the pod template's containers.
func (w *DeploymentWrapper) Containers(cs ...*ContainerWrapper) *DeploymentWrapper {
	w.Spec.Template.Spec.Containers = nil
	for _, c := range cs {
		w.Spec.Template.Spec.Containers = append(w.Spec.Template.Spec.Containers, c.Obj())
	}
	return w
}

// TerminationGracePeriod sets how long the kubelet waits for the pods'
// containers to stop before killing them (a sleep as PID 1 ignores
// SIGTERM: a real kubelet waits the whole period, 30 seconds by default).
func (w *DeploymentWrapper) TerminationGracePeriod(seconds int64) *DeploymentWrapper {
	w.Spec.Template.Spec.TerminationGracePeriodSeconds = &seconds
	return w
}
