package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestCompileSpec_CompilesEachPolicyOnce(t *testing.T) {
	t.Parallel()
	spec := &appsv1beta1.SidecarSetSpec{
		InitContainers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "init"},
			ResourcesPolicy: policy(appsv1beta1.TargetContainerModeSum, "", exprs{requests: req("cpu*50%", "")})}},
		Containers: []appsv1beta1.SidecarContainer{
			{Container: corev1.Container{Name: "plain"}},
			{Container: corev1.Container{Name: "bad"},
				ResourcesPolicy: policy(appsv1beta1.TargetContainerModeSum, "[", exprs{limits: lim("cpu*", "")})},
		},
	}
	compiled := CompileSpec(spec)
	if len(compiled) != 2 {
		t.Fatalf("compiled %d policies, want 2 (the sidecars with a resourcesPolicy)", len(compiled))
	}
	first := compiled.For(&spec.InitContainers[0])
	if first == nil || first != compiled.For(&spec.InitContainers[0]) {
		t.Errorf("For returns %p then another policy, want the one compiled ahead", first)
	}
	if got := compiled.For(&spec.Containers[0]); got != nil {
		t.Errorf("a sidecar without resourcesPolicy compiles to %+v, want nil", got)
	}
	// A policy that does not compile is kept, and denies at Compute with the
	// same error as before.
	_, err := compiled.For(&spec.Containers[1]).Compute([]corev1.Container{container("app", res{limCPU: "1"})}, nil, nil)
	want := "invalid targetContainersNameRegex \"[\": error parsing regexp: missing closing ]: `[`"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	// A sidecar of another object (not compiled ahead) is compiled on demand.
	other := spec.InitContainers[0]
	if got := compiled.For(&other); got == nil || got == first {
		t.Errorf("a sidecar not compiled ahead gets %p, want a fresh compilation", got)
	}
}
