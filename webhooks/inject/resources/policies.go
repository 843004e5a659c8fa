package resources

import (
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Policies are the compiled resourcesPolicies of one SidecarSet object's
// sidecars, keyed by the sidecar (the object is immutable once compiled:
// the registry's copy, or a restored revision).
type Policies map[*appsv1beta1.SidecarContainer]*Policy

// CompileSpec compiles the resourcesPolicy of every sidecar of a spec that
// has one. The spec must not change afterwards.
func CompileSpec(spec *appsv1beta1.SidecarSetSpec) Policies {
	out := Policies{}
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.InitContainers, spec.Containers} {
		for i := range list {
			if sc := &list[i]; sc.ResourcesPolicy != nil {
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
