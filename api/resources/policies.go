package resources

import (
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Policies are the compiled resourcesPolicies of one SidecarSet object's
// sidecars, keyed by the sidecar (the object is immutable once compiled:
// the registry's copy, or a restored revision).
type Policies map[*appsv1beta1.SidecarContainer]*Policy

// CompileSpec compiles the resourcesPolicy of every sidecar of a spec that
// has one. The spec must not change afterwards.
func CompileSpec(spec *appsv1beta1.SidecarSetSpec) Policies {
	var out Policies // nil without policies: most SidecarSets have none
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.InitContainers, spec.Containers} {
		for i := range list {
			if sc := &list[i]; sc.ResourcesPolicy != nil {
				if out == nil {
					out = Policies{}
				}
				out[sc] = Compile(sc.ResourcesPolicy)
			}
		}
	}
	return out
}

// For returns a sidecar's compiled policy; a sidecar not compiled ahead
// (an object that did not come through CompileSpec) is compiled now.
func (p Policies) For(sc *appsv1beta1.SidecarContainer) *Policy {
	if c, ok := p[sc]; ok {
		return c
	}
	return Compile(sc.ResourcesPolicy)
}

// ForPod returns the resources a sidecar gets in a pod: computed by its
// resourcesPolicy from the pod's containers and init containers (exclude
// names the sidecars, which never count as the pod's own containers), or
// its own resources when it has no policy. Injection sets them at pod
// creation; the rollout resizes running pods to them.
func (p Policies) ForPod(sc *appsv1beta1.SidecarContainer, containers, initContainers []corev1.Container, exclude map[string]bool) (corev1.ResourceRequirements, error) {
	if sc.ResourcesPolicy == nil {
		return *sc.Resources.DeepCopy(), nil
	}
	return p.For(sc).Compute(containers, initContainers, exclude)
}
