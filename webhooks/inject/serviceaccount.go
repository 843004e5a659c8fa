package inject

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The API server's ServiceAccount admission plugin runs before the webhooks:
// it gives the pod a projected token volume named kube-api-access-<random>
// and mounts it, read-only at the path below, into every container that has
// nothing mounted there. When a webhook changes the pod, the in-tree
// plugins run again, and the plugin mounts the token into the sidecars just
// added. That second change makes the API server call every webhook with
// reinvocationPolicy IfNeeded (ours included) a second time: a whole extra
// admission round trip per injected pod, for nothing.
//
// Mounting the token into the sidecars the way the plugin would leaves it
// nothing to change, so the pod is admitted in one call, and the stored pod
// is the same as if the plugin had done it. When the pod shows no sign of
// the plugin's work (automounting is off, or the plugin is disabled), the
// sidecars are left alone; if the prediction is ever wrong, the cost is the
// second call, never a different pod.
const (
	serviceAccountVolumePrefix = "kube-api-access-"
	serviceAccountMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// serviceAccountTokenMount returns the mount the ServiceAccount admission
// plugin would add to a new container of the pod, and whether it would add
// one at all: the pod has the plugin's token volume (the first volume with
// its prefix, as the plugin picks it) and one of the pod's containers has it
// mounted as the plugin mounts it.
func serviceAccountTokenMount(pod *corev1.Pod) (corev1.VolumeMount, bool) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, serviceAccountVolumePrefix) {
			name = v.Name
			break
		}
	}
	if name == "" {
		return corev1.VolumeMount{}, false
	}
	want := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: serviceAccountMountPath}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, m := range c.VolumeMounts {
				if m.Name == want.Name && m.MountPath == want.MountPath && m.ReadOnly && m.SubPath == "" && m.SubPathExpr == "" {
					return want, true
				}
			}
		}
	}
	return corev1.VolumeMount{}, false
}

// mountServiceAccountToken adds the plugin's mount to each sidecar that has
// nothing mounted at its path, at the end of its mounts, as the plugin does.
func mountServiceAccountToken(pod *corev1.Pod, m *merged) {
	mount, ok := serviceAccountTokenMount(pod)
	if !ok {
		return
	}
	for _, list := range [][]corev1.Container{m.initBefore, m.initAfter, m.before, m.after} {
		for i := range list {
			c := &list[i]
			taken := false
			for _, existing := range c.VolumeMounts {
				if existing.MountPath == serviceAccountMountPath {
					taken = true
					break
				}
			}
			if !taken {
				// Clip: twins of a hot-upgrade sidecar may share the array.
				c.VolumeMounts = append(slices.Clip(c.VolumeMounts), mount)
			}
		}
	}
}
