package policy

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// TestRules_StaticEstimates checks that every shipped expression has a
// bounded estimate, and that a SidecarSet at the declared bounds really
// evaluates within the request budget.
func TestRules_StaticEstimates(t *testing.T) {
	t.Parallel()
	rules := mustShippedRules(t)
	var total uint64
	for _, p := range rules.policies {
		// Each estimate includes the variables the expression reads, which
		// run at most once per request: the sum bounds a request.
		exprs := slices.Clone(p.matchConditions)
		for _, v := range p.variables {
			if v.expr.estimate.Max > StaticCostLimit {
				t.Errorf("%s: estimate %d > %d", v.expr.where, v.expr.estimate.Max, StaticCostLimit)
			}
		}
		for _, v := range append(append([]*compiledValidation{}, p.validations...), p.warnings...) {
			exprs = append(exprs, v.expr)
			if v.messageExpr != nil {
				exprs = append(exprs, v.messageExpr)
			}
			if v.fieldPathExpr != nil {
				exprs = append(exprs, v.fieldPathExpr)
			}
		}
		for _, e := range exprs {
			if e.estimate.Max > StaticCostLimit {
				t.Errorf("%s: estimate %d > %d", e.where, e.estimate.Max, StaticCostLimit)
			}
			total += e.estimate.Max
		}
	}
	if total > RuntimeCostBudget {
		t.Errorf("the estimates add up to %d, more than the request budget %d", total, RuntimeCostBudget)
	}

	res, err := rules.Evaluate(t.Context(), atTheBounds(), atTheBounds())
	if err != nil {
		t.Fatalf("Validate at the bounds: %v", err)
	}
	if len(res.Errors) != 0 || len(res.Warnings) != 0 {
		t.Errorf("Validate at the bounds: errors %v, warnings %v, want none", res.Errors, res.Warnings)
	}
	if res.Cost > int64(total) {
		t.Errorf("Validate at the bounds cost %d, more than the estimates (%d)", res.Cost, total)
	}
}

// atTheBounds is a valid SidecarSet with every list at the size the
// estimator assumes.
func atTheBounds() *appsv1beta1.SidecarSet {
	s := validSidecarSet()
	s.Spec.Volumes = nil
	for i := range maxVolumes {
		s.Spec.Volumes = append(s.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("volume-%d", i), VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"},
		}})
	}
	sidecar := func(prefix string, i int) appsv1beta1.SidecarContainer {
		c := container(fmt.Sprintf("%s-%d", prefix, i), "x:1")
		for j := range maxVolumeMounts {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: fmt.Sprintf("volume-%d", j), MountPath: fmt.Sprintf("/mnt/%d", j)})
		}
		for j := range maxVolumeDevices {
			c.VolumeDevices = append(c.VolumeDevices, corev1.VolumeDevice{Name: fmt.Sprintf("volume-%d", j), DevicePath: fmt.Sprintf("/dev/%d", j)})
		}
		return c
	}
	s.Spec.InitContainers, s.Spec.Containers = nil, nil
	for i := range maxSidecars {
		s.Spec.InitContainers = append(s.Spec.InitContainers, sidecar("init", i))
		s.Spec.Containers = append(s.Spec.Containers, sidecar("sidecar", i))
	}
	s.Spec.PatchPodMetadata = nil
	for i := range maxPatchEntries {
		annotations := map[string]string{}
		for j := range maxPatchAnnotations {
			annotations[fmt.Sprintf("example.com/key-%d-%d", i, j)] = "v"
		}
		s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, appsv1beta1.SidecarSetPatchPodMetadata{Annotations: annotations})
	}
	return s
}

func TestRules_FarBeyondTheBoundsRunsOutOfBudget(t *testing.T) {
	t.Parallel()
	s := validSidecarSet()
	for i := range 600 {
		s.Spec.Containers = append(s.Spec.Containers, container(fmt.Sprintf("c-%d", i), "x:1"))
	}
	_, err := mustShippedRules(t).Evaluate(t.Context(), s, nil)
	if !errors.Is(err, ErrOutOfBudget) {
		t.Fatalf("Validate with 600 containers: err = %v, want ErrOutOfBudget", err)
	}
}
