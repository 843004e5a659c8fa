package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// A manifest that leaves imagePullPolicy out gets the default for its image
// (DefaultPullPolicy), and the hashes cover it. So a full replace (a GitOps
// tool, kubectl replace) that moves a tag to or from latest changes the
// without-image hash although only the image changed, and OpenKruise then
// reports every pod as not upgradable. The comparison below lets such a
// pull policy follow the pod's instead; the stored hashes stay OpenKruise's.

// WithoutImageHashWithPullPolicies returns the without-image hash of a
// defaulted spec in which every sidecar (container or init container)
// whose imagePullPolicy is the default for its image, and for which
// policyOf returns a policy, takes that policy instead. substituted reports
// whether any sidecar took one; when none did, no hash is computed and the
// spec's own without-image hash applies.
func WithoutImageHashWithPullPolicies(spec *SidecarSetSpec, policyOf func(name string) (corev1.PullPolicy, bool)) (hash string, substituted bool, err error) {
	containers, a := withPullPolicies(spec.Containers, policyOf)
	initContainers, b := withPullPolicies(spec.InitContainers, policyOf)
	if !a && !b {
		return "", false, nil
	}
	hash, err = hashContainers(containers, initContainers, true)
	return hash, true, err
}

// PullPolicyFollowsImage reports whether a sidecar's imagePullPolicy is the
// one a manifest without it would get: the default for its image.
func PullPolicyFollowsImage(c *corev1.Container) bool {
	return c.ImagePullPolicy == DefaultPullPolicy(c.Image)
}

// withPullPolicies returns the sidecars with the substituted pull policies
// (the input itself when none changes), and whether any changed.
func withPullPolicies(in []SidecarContainer, policyOf func(name string) (corev1.PullPolicy, bool)) ([]SidecarContainer, bool) {
	var out []SidecarContainer
	for i := range in {
		c := &in[i].Container
		p, ok := policyOf(c.Name)
		if !ok || p == "" || p == c.ImagePullPolicy || !PullPolicyFollowsImage(c) {
			continue
		}
		if out == nil {
			out = make([]SidecarContainer, len(in))
			copy(out, in)
		}
		out[i].ImagePullPolicy = p
	}
	if out == nil {
		return in, false
	}
	return out, true
}
