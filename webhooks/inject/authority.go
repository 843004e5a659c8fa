package inject

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Authority: a sidecar never gets more than its SidecarSet's author was
// allowed (policy/authority). Two checks, against the pod being created:
//
//   - what the version to inject defines itself (its sidecars' settings,
//     its volumes, a pinned revision) must be covered by the SidecarSet's
//     recorded authority, or the SidecarSet fails for this pod (a required
//     one denies it): that can only happen to a record written around the
//     authoring policy;
//   - what a sidecar reaches in the pod by name (a volume of the pod, or of
//     an earlier SidecarSet, that shadows the SidecarSet's own; the pod's
//     mounts and devices shared with it; the pod's ServiceAccount token) is
//     left out when its volume needs a verb the authority lacks: the
//     mount is not given (the token's path gets an empty directory, so the
//     API server does not mount the token either), and the pod records it
//     (appsv1beta1.RestrictedAnnotation), with a warning.
//
// The pod also records, per SidecarSet, the verbs what its sidecars were
// given needs (appsv1beta1.ReachAnnotation): the controller upgrades them in
// place only while the SidecarSet's authority still covers that.

// noTokenVolume is the empty directory mounted at the ServiceAccount token's
// path in a sidecar that may not read the token.
const noTokenVolume = "sidecarset-no-serviceaccount-token" //nolint:gosec // a volume's name, not a credential

// Restriction is one mount or device a sidecar was not given.
type Restriction struct {
	// SidecarSet and Container name the sidecar.
	SidecarSet, Container string
	// Message says what was left out and why.
	Message string
}

// checkAuthority returns an error when a version's own content needs a verb
// its SidecarSet's recorded authority lacks.
func checkAuthority(v *version) error {
	have := authority.Of(v.origin)
	if have == authority.All {
		return nil
	}
	for _, n := range authority.SpecNeeds(&v.set.Spec) {
		if missing := have.Missing(n.Verbs); missing != authority.None {
			return fmt.Errorf("SidecarSet %q: %s needs %s, which the SidecarSet's authority (%s, recorded from its author) does not hold",
				v.name, n.Path, missing, have)
		}
	}
	return nil
}

// restrict takes out of the merged sidecars the mounts and devices whose
// volume, as resolved in the pod, needs a verb their SidecarSet's authority
// lacks, and returns what was left out, and per SidecarSet the verbs what
// its sidecars keep needs (appsv1beta1.ReachAnnotation).
//
// Before admission (Options.BeforeAdmission), a pod that will get its token
// from the API server (automountServiceAccountToken not false, no token
// mounted yet) has it withheld from such sidecars too: they get the empty
// directory at its path now, which the API server then leaves alone.
func restrict(pod *corev1.Pod, m *merged, owners map[string]*version, beforeAdmission bool) ([]Restriction, map[string]authority.Verbs) {
	volumes := append(slices.Clip(pod.Spec.Volumes), m.volumes...)
	var out []Restriction
	reach := map[string]authority.Verbs{}
	noToken := false
	_, tokenMounted := serviceAccountTokenMount(pod)
	tokenLater := beforeAdmission && !tokenMounted &&
		(pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken)
	for _, list := range [][]corev1.Container{m.initBefore, m.initAfter, m.before, m.after} {
		for i := range list {
			v := owners[list[i].Name]
			if v == nil || v.origin == nil {
				continue
			}
			left, kept, emptyToken := restrictSidecar(&list[i], v, volumes, tokenLater)
			out = append(out, left...)
			reach[v.name] |= kept
			noToken = noToken || emptyToken
		}
	}
	if noToken && !slices.ContainsFunc(volumes, func(v corev1.Volume) bool { return v.Name == noTokenVolume }) {
		m.volumes = append(m.volumes, corev1.Volume{Name: noTokenVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	return out, reach
}

// noTokenMount mounts noTokenVolume at the ServiceAccount token's path.
var noTokenMount = corev1.VolumeMount{Name: noTokenVolume, MountPath: serviceAccountMountPath, ReadOnly: true}

// restrictSidecar is restrict for one sidecar of SidecarSet version v, in a
// pod with the volumes: it takes out the mounts and devices v's authority
// does not cover, and returns what was left out, the verbs what the sidecar
// keeps needs, and whether it was given noTokenVolume (the pod then needs
// the volume). tokenLater: the API server will mount the pod's token.
func restrictSidecar(c *corev1.Container, v *version, volumes []corev1.Volume, tokenLater bool) (out []Restriction, kept authority.Verbs, noToken bool) {
	have := authority.Of(v.origin)
	kept = authority.Sum(authority.SettingNeeds(c))
	var dropMounts, dropDevices []int
	for _, r := range authority.InPod(volumes, c) {
		missing := have.Missing(r.Verbs)
		if missing == authority.None {
			kept |= r.Verbs
			continue
		}
		what := fmt.Sprintf("volume %q (%s)", r.Volume, r.Type)
		if r.Mount >= 0 {
			dropMounts = append(dropMounts, r.Mount)
			if c.VolumeMounts[r.Mount].MountPath == serviceAccountMountPath {
				what = fmt.Sprintf("the pod's ServiceAccount token (volume %q)", r.Volume)
			}
		} else {
			dropDevices = append(dropDevices, r.Device)
		}
		out = append(out, Restriction{SidecarSet: v.name, Container: c.Name,
			Message: fmt.Sprintf("sidecar %q was not given %s: it needs %s, which SidecarSet %q's authority does not hold", c.Name, what, missing, v.name)})
	}
	if tokenLater && !have.Has(authority.Secrets) &&
		!slices.ContainsFunc(c.VolumeMounts, func(mnt corev1.VolumeMount) bool { return mnt.MountPath == serviceAccountMountPath }) {
		noToken = true
		c.VolumeMounts = append(slices.Clip(c.VolumeMounts), noTokenMount)
		out = append(out, Restriction{SidecarSet: v.name, Container: c.Name, Message: fmt.Sprintf(
			"sidecar %q was not given the pod's ServiceAccount token (which the API server mounts when the pod is created): it needs %s, which SidecarSet %q's authority does not hold",
			c.Name, authority.Secrets, v.name)})
	}
	if len(dropMounts) == 0 && len(dropDevices) == 0 {
		return out, kept, noToken
	}
	var mounts []corev1.VolumeMount
	for j, mnt := range c.VolumeMounts {
		switch {
		case !slices.Contains(dropMounts, j):
			mounts = append(mounts, mnt)
		case mnt.MountPath == serviceAccountMountPath:
			noToken = true
			mounts = append(mounts, noTokenMount)
		}
	}
	var devices []corev1.VolumeDevice
	for j, d := range c.VolumeDevices {
		if !slices.Contains(dropDevices, j) {
			devices = append(devices, d)
		}
	}
	c.VolumeMounts, c.VolumeDevices = mounts, devices
	return out, kept, noToken
}

// restrictedAnnotation is the RestrictedAnnotation value of restrictions
// (deterministic: sorted by SidecarSet, in order within one).
func restrictedAnnotation(rs []Restriction) map[string][]string {
	out := map[string][]string{}
	for _, r := range rs {
		out[r.SidecarSet] = append(out[r.SidecarSet], r.Message)
	}
	for k := range out {
		slices.SortStableFunc(out[k], strings.Compare)
	}
	return out
}
