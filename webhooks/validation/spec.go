package validation

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// validateSelectors checks that every label selector of the spec is a valid
// label selector (keys, values, operators). Emptiness is the schema's job.
func validateSelectors(spec *appsv1beta1.SidecarSetSpec, path *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, opts, path.Child("selector"))...)
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
	strategy := path.Child("updateStrategy")
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.UpdateStrategy.Selector, opts, strategy.Child("selector"))...)
	if p := spec.UpdateStrategy.PriorityStrategy; p != nil {
		for i := range p.WeightPriority {
			errs = append(errs, metav1validation.ValidateLabelSelector(&p.WeightPriority[i].MatchSelector, opts,
				strategy.Child("priorityStrategy", "weightPriority").Index(i).Child("matchSelector"))...)
		}
	}
	return errs
}

// validatePinnedRevision turns the shell's failure to resolve
// injectionStrategy.revision into a field error: while the revision is
// missing, every pod matching the SidecarSet would be rejected at creation.
func validatePinnedRevision(s *appsv1beta1.SidecarSet, o Options, path *field.Path) field.ErrorList {
	r, resolveErr := s.Spec.InjectionStrategy.Revision, o.PinnedRevisionError
	if r == nil || resolveErr == nil {
		return nil
	}
	namespace := o.operatorNamespace()
	consequence := "pods matching this SidecarSet would be rejected at creation while it is missing; " +
		"pin an existing revision (kubectl get controllerrevisions -n " + namespace + " -l kruise.io/sidecarset-name=" + s.Name + ") " +
		"or remove injectionStrategy.revision"
	if r.RevisionName != nil {
		return field.ErrorList{field.Invalid(path.Child("revisionName"), *r.RevisionName, fmt.Sprintf(
			"ControllerRevision %q cannot be resolved (%v): %s", *r.RevisionName, resolveErr, consequence))}
	}
	if r.CustomVersion != nil {
		return field.ErrorList{field.Invalid(path.Child("customVersion"), *r.CustomVersion, fmt.Sprintf(
			"no ControllerRevision with custom version %q can be resolved (%v): %s", *r.CustomVersion, resolveErr, consequence))}
	}
	return nil
}

// strategyWarnings flags rolling-update settings that are accepted but stop
// the rollout: a maxUnavailable of 0 and a partition of 100%.
func strategyWarnings(u *appsv1beta1.SidecarSetUpdateStrategy, path *field.Path) []string {
	if u.Type == appsv1beta1.NotUpdateSidecarSetStrategyType {
		return nil
	}
	var warnings []string
	if m := u.MaxUnavailable; m != nil {
		if v, ok := intOrPercent(m); ok && v == 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %s lets no upgraded pod be unavailable, so the rollout will not progress: "+
				"only pods that are already unavailable get upgraded; set it to at least 1 (a percentage is rounded up, never to 0)",
				path.Child("maxUnavailable"), m.String()))
		}
	}
	if p := u.Partition; p != nil && p.Type == intstr.String {
		if v, ok := intOrPercent(p); ok && v >= 100 {
			warnings = append(warnings, fmt.Sprintf("%s: %s holds back every pod, so nothing is upgraded in place; "+
				"lower it to start the rollout", path.Child("partition"), p.String()))
		}
	}
	return warnings
}

// intOrPercent returns the integer, or the number of a percentage
// (appsv1beta1.ParsePercent).
func intOrPercent(v *intstr.IntOrString) (int, bool) {
	if v.Type == intstr.Int {
		return int(v.IntVal), true
	}
	n, err := appsv1beta1.ParsePercent(v.StrVal)
	return n, err == nil
}
