package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// canaryBase returns the base of a canary SidecarSet: a SidecarSet is a
// canary when its annotation apps.kruise.io/sidecarset-canary is exactly
// "true" and apps.kruise.io/sidecarset-base is not empty.
func canaryBase(s *appsv1beta1.SidecarSet) (string, bool) {
	if s.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] != "true" {
		return "", false
	}
	base := s.Annotations[appsv1beta1.SidecarSetBaseAnnotation]
	return base, base != ""
}

// canaryPair reports whether one of the two SidecarSets is a canary of the
// other. A canary and its base usually declare the same sidecars on
// overlapping selectors; they are exempt from the conflict checks against
// each other, in both directions.
func canaryPair(a, b *appsv1beta1.SidecarSet) bool {
	if base, ok := canaryBase(a); ok && base == b.Name {
		return true
	}
	base, ok := canaryBase(b)
	return ok && base == a.Name
}

// validateCanary checks the canary annotations: the base exists among the
// others, is not the canary itself, is not a canary, and does not change on
// update; the canary itself must use the NotUpdate strategy.
func validateCanary(s, old *appsv1beta1.SidecarSet, others []*appsv1beta1.SidecarSet) field.ErrorList {
	base, ok := canaryBase(s)
	if !ok {
		return nil
	}
	basePath := field.NewPath("metadata", "annotations").Key(appsv1beta1.SidecarSetBaseAnnotation)
	var errs field.ErrorList
	if s.Spec.UpdateStrategy.Type != appsv1beta1.NotUpdateSidecarSetStrategyType {
		errs = append(errs, field.Invalid(field.NewPath("spec", "updateStrategy", "type"), s.Spec.UpdateStrategy.Type,
			"a canary SidecarSet must use NotUpdate: it only injects its sidecars into new pods, and its base "+
				"keeps upgrading existing ones; set updateStrategy.type to NotUpdate"))
	}
	if old != nil {
		switch oldBase := old.Annotations[appsv1beta1.SidecarSetBaseAnnotation]; {
		case oldBase == "":
			errs = append(errs, field.Invalid(basePath, base,
				"is immutable: an existing SidecarSet cannot become a canary by an update; "+
					"create a new SidecarSet with the canary annotations instead"))
		case oldBase != base:
			errs = append(errs, field.Invalid(basePath, base, fmt.Sprintf(
				"is immutable (it was %q): a canary SidecarSet keeps the base it was created with; "+
					"create a new canary SidecarSet to test against another base", oldBase)))
		}
	}
	if base == s.Name {
		return append(errs, field.Invalid(basePath, base,
			"a canary SidecarSet cannot be its own base: name the SidecarSet it tests a new version of"))
	}
	var found *appsv1beta1.SidecarSet
	for _, other := range others {
		if other != nil && other.Name == base {
			found = other
			break
		}
	}
	switch {
	case found == nil:
		errs = append(errs, withDetail(field.NotFound(basePath, base), fmt.Sprintf(
			"no SidecarSet named %q exists: create the base first, or remove the canary annotations", base)))
	case isCanary(found):
		errs = append(errs, field.Invalid(basePath, base, fmt.Sprintf(
			"SidecarSet %q is itself a canary: the base of a canary must be a SidecarSet that is not a canary", base)))
	}
	return errs
}

func isCanary(s *appsv1beta1.SidecarSet) bool {
	_, ok := canaryBase(s)
	return ok
}
