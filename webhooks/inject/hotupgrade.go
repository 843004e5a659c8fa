package inject

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// checkHotUpgrade rejects a hot-upgrade sidecar without an empty image:
// its idle twin would have no image and the API server would reject the
// pod with a message that does not name the SidecarSet.
func checkHotUpgrade(v *version) error {
	for _, list := range []struct {
		containers []appsv1beta1.SidecarContainer
		isInit     bool
	}{{v.set.Spec.InitContainers, true}, {v.set.Spec.Containers, false}} {
		for i := range list.containers {
			sc := &list.containers[i]
			if appsv1beta1.IsHotUpgrade(sc, list.isInit) && sc.UpgradeStrategy.HotUpgradeEmptyImage == "" {
				return fmt.Errorf("SidecarSet %q: container %q has upgradeType HotUpgrade but no "+
					"upgradeStrategy.hotUpgradeEmptyImage; pods matching it cannot be created until it is set",
					v.name, sc.Name)
			}
		}
	}
	return nil
}

// hotUpgradeTwins returns the two containers a hot-upgrade sidecar is
// injected as: <name>-1, the working twin with the real image, and
// <name>-2, the idle twin with the empty image. Each reads its version and
// the other's from the pod's annotations through the downward API.
func hotUpgradeTwins(c corev1.Container, emptyImage string) (corev1.Container, corev1.Container) {
	workingName, idleName := appsv1beta1.HotUpgradeTwins(c.Name)
	working := *c.DeepCopy()
	working.Name = workingName
	working.Env = withVersionEnv(working.Env, workingName)
	idle := *c.DeepCopy()
	idle.Name = idleName
	idle.Image = emptyImage
	idle.Env = withVersionEnv(idle.Env, idleName)
	return working, idle
}

// withVersionEnv appends SIDECARSET_VERSION and SIDECARSET_VERSION_ALT,
// read from the twin's version annotations. The twin protocol depends on
// them, so a definition of the same names in the sidecar's env is dropped.
func withVersionEnv(env []corev1.EnvVar, twin string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env)+2)
	for _, e := range env {
		if e.Name != appsv1beta1.SidecarEnvVersion && e.Name != appsv1beta1.SidecarEnvVersionAlt {
			out = append(out, e)
		}
	}
	return append(out,
		annotationEnv(appsv1beta1.SidecarEnvVersion, podstate.VersionKey(twin)),
		annotationEnv(appsv1beta1.SidecarEnvVersionAlt, podstate.VersionAltKey(twin)))
}

func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1",
		FieldPath:  fmt.Sprintf("metadata.annotations['%s']", annotation),
	}}}
}

// recordHotUpgrade writes the annotations of a freshly injected hot-upgrade
// sidecar: the working twin <base>-1 at version 1, the idle twin <base>-2 at
// version 0, and <base> -> <base>-1 in the working map.
func recordHotUpgrade(annotations, working map[string]string, base string) {
	w, idle := appsv1beta1.HotUpgradeTwins(base)
	annotations[podstate.VersionKey(w)] = "1"
	annotations[podstate.VersionAltKey(w)] = "0"
	annotations[podstate.VersionKey(idle)] = "0"
	annotations[podstate.VersionAltKey(idle)] = "1"
	working[base] = w
}
