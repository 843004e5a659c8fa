package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ContainerWrapper builds a container: a pod's own container (Obj) or a
// SidecarSet sidecar (Sidecar).
type ContainerWrapper struct {
	appsv1beta1.SidecarContainer
}

// MakeContainer returns a container with a name and an image.
func MakeContainer(name, image string) *ContainerWrapper {
	return &ContainerWrapper{appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: image}}}
}

// Obj returns the Kubernetes container (the sidecar fields are dropped).
func (w *ContainerWrapper) Obj() corev1.Container {
	return *w.Container.DeepCopy()
}

// Sidecar returns the SidecarSet sidecar.
func (w *ContainerWrapper) Sidecar() appsv1beta1.SidecarContainer {
	return *w.DeepCopy()
}

// Clone returns an independent copy of the wrapper.
func (w *ContainerWrapper) Clone() *ContainerWrapper {
	return &ContainerWrapper{*w.DeepCopy()}
}

// Command sets the command.
func (w *ContainerWrapper) Command(args ...string) *ContainerWrapper {
	w.Container.Command = args
	return w
}

// Env appends a plain environment variable.
func (w *ContainerWrapper) Env(name, value string) *ContainerWrapper {
	w.Container.Env = append(w.Container.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// SecretEnv appends an environment variable read from a Secret's key.
func (w *ContainerWrapper) SecretEnv(name, secret, key string) *ContainerWrapper {
	w.Container.Env = append(w.Container.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}})
	return w
}

// Privileged runs the container privileged.
func (w *ContainerWrapper) Privileged() *ContainerWrapper {
	if w.SecurityContext == nil {
		w.SecurityContext = &corev1.SecurityContext{}
	}
	w.SecurityContext.Privileged = new(true)
	return w
}

// HostPort appends a container port bound to the same port of the node.
func (w *ContainerWrapper) HostPort(port int32) *ContainerWrapper {
	w.Ports = append(w.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	return w
}

// Mount appends a volume mount.
func (w *ContainerWrapper) Mount(volume, path string) *ContainerWrapper {
	w.VolumeMounts = append(w.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path})
	return w
}

// MountSubPathExpr appends a volume mount with a subPathExpr.
func (w *ContainerWrapper) MountSubPathExpr(volume, path, expr string) *ContainerWrapper {
	w.VolumeMounts = append(w.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path, SubPathExpr: expr})
	return w
}

// Device appends a volume device.
func (w *ContainerWrapper) Device(volume, path string) *ContainerWrapper {
	w.VolumeDevices = append(w.VolumeDevices, corev1.VolumeDevice{Name: volume, DevicePath: path})
	return w
}

// RestartAlways makes an init container a native sidecar.
func (w *ContainerWrapper) RestartAlways() *ContainerWrapper {
	always := corev1.ContainerRestartPolicyAlways
	w.RestartPolicy = &always
	return w
}

// InjectPolicy sets podInjectPolicy.
func (w *ContainerWrapper) InjectPolicy(p appsv1beta1.PodInjectPolicyType) *ContainerWrapper {
	w.PodInjectPolicy = p
	return w
}

// ShareVolumes sets shareVolumePolicy.type to enabled.
func (w *ContainerWrapper) ShareVolumes() *ContainerWrapper {
	w.ShareVolumePolicy.Type = appsv1beta1.ShareVolumePolicyEnabled
	return w
}

// ShareDevices sets shareVolumeDevicePolicy.type to enabled.
func (w *ContainerWrapper) ShareDevices() *ContainerWrapper {
	w.ShareVolumeDevicePolicy = &appsv1beta1.ShareVolumePolicy{Type: appsv1beta1.ShareVolumePolicyEnabled}
	return w
}

// TransferEnvFrom appends a transferEnv entry copying envs from a named
// container: envName is the first name, envNames the rest.
func (w *ContainerWrapper) TransferEnvFrom(container string, names ...string) *ContainerWrapper {
	w.TransferEnv = append(w.TransferEnv, transferEntry(names, appsv1beta1.TransferEnvVar{SourceContainerName: container}))
	return w
}

// TransferEnvFromField appends a transferEnv entry whose source container
// name is read from the pod (fieldPath such as metadata.labels['k']).
func (w *ContainerWrapper) TransferEnvFromField(fieldPath string, names ...string) *ContainerWrapper {
	w.TransferEnv = append(w.TransferEnv, transferEntry(names, appsv1beta1.TransferEnvVar{
		SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath},
		},
	}))
	return w
}

func transferEntry(names []string, t appsv1beta1.TransferEnvVar) appsv1beta1.TransferEnvVar {
	if len(names) > 0 {
		t.EnvName = names[0]
	}
	if len(names) > 1 {
		t.EnvNames = names[1:]
	}
	return t
}

// HotUpgrade makes the sidecar hot-upgraded with the given empty image.
func (w *ContainerWrapper) HotUpgrade(emptyImage string) *ContainerWrapper {
	w.UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
		UpgradeType:          appsv1beta1.SidecarContainerHotUpgrade,
		HotUpgradeEmptyImage: emptyImage,
	}
	return w
}

// Requests sets the CPU and memory requests ("" leaves one out).
func (w *ContainerWrapper) Requests(cpu, memory string) *ContainerWrapper {
	w.Resources.Requests = cpuMemory(cpu, memory)
	return w
}

// Limits sets the CPU and memory limits ("" leaves one out).
func (w *ContainerWrapper) Limits(cpu, memory string) *ContainerWrapper {
	w.Resources.Limits = cpuMemory(cpu, memory)
	return w
}

// ResizePolicy sets whether an in-place resize of the CPU and of the
// memory restarts the container.
func (w *ContainerWrapper) ResizePolicy(cpu, memory corev1.ResourceResizeRestartPolicy) *ContainerWrapper {
	w.Container.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: cpu},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: memory},
	}
	return w
}

func cpuMemory(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}
