package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// maxNameLength is the longest SidecarSet name: the name is copied into the
// label kruise.io/sidecarset-name of its ControllerRevisions, and label
// values are at most 63 characters.
const maxNameLength = 63

// nameFormat is a lowercase RFC 1123 label.
var nameFormat = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validateName checks metadata.name of a new SidecarSet.
func validateName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "a SidecarSet needs a name")}
	}
	var errs field.ErrorList
	if len(name) > maxNameLength {
		errs = append(errs, field.Invalid(path, name, fmt.Sprintf(
			"must be at most %d characters (it has %d): the name is copied into the label kruise.io/sidecarset-name "+
				"of the SidecarSet's ControllerRevisions, and label values are limited to %d characters",
			maxNameLength, len(name), maxNameLength)))
	}
	if !nameFormat.MatchString(name) {
		errs = append(errs, field.Invalid(path, name,
			"must consist of lowercase letters, digits and '-', and start and end with a letter or digit "+
				"(regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$), such as 'istio-proxy': the name is copied into label "+
				"values and pod annotations, which must stay valid"))
	}
	return errs
}

// validateFailurePolicy checks the failure policy annotation: Fail
// (required sidecars, the default) or Ignore (best-effort sidecars).
func validateFailurePolicy(annotations map[string]string, path *field.Path) field.ErrorList {
	v, ok := annotations[appsv1beta1.FailurePolicyAnnotation]
	if !ok || v == appsv1beta1.FailurePolicyFail || v == appsv1beta1.FailurePolicyIgnore {
		return nil
	}
	return field.ErrorList{field.NotSupported(path.Key(appsv1beta1.FailurePolicyAnnotation), v,
		[]string{appsv1beta1.FailurePolicyFail, appsv1beta1.FailurePolicyIgnore})}
}

// validateRecreate checks the recreate annotations' values ("true" or
// "false"), and warns when a SidecarSet starts recreating pods, or names a
// Job opt-in that has no effect.
func validateRecreate(s, old *appsv1beta1.SidecarSet, path *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	for _, key := range []string{appsv1beta1.RecreatePodsAnnotation, appsv1beta1.RecreateJobPodsAnnotation} {
		if v, ok := s.Annotations[key]; ok && v != "true" && v != "false" {
			errs = append(errs, field.NotSupported(path.Key(key), v, []string{"true", "false"}))
		}
	}
	var warnings []string
	if appsv1beta1.RecreatesPods(s) && (old == nil || !appsv1beta1.RecreatesPods(old)) {
		warnings = append(warnings, fmt.Sprintf("%s: running pods the SidecarSet selects that lack its sidecars, or that cannot "+
			"get its changes in place, are recreated: evicted through the Eviction API (their PodDisruptionBudgets apply), paced by "+
			"spec.updateStrategy, and only where their controller recreates them; kubectl sidecarset plan %s shows which",
			path.Key(appsv1beta1.RecreatePodsAnnotation), s.Name))
	}
	if s.Annotations[appsv1beta1.RecreateJobPodsAnnotation] == "true" && !appsv1beta1.RecreatesPods(s) {
		warnings = append(warnings, fmt.Sprintf("%s: has no effect without %s: \"true\"",
			path.Key(appsv1beta1.RecreateJobPodsAnnotation), appsv1beta1.RecreatePodsAnnotation))
	}
	return errs, warnings
}

// validateRolloutGuards checks the rollout guards' annotations: a value
// that cannot be read would silently turn its guard off. A failure window
// without a failure budget has no effect, and says so.
func validateRolloutGuards(annotations map[string]string, path *field.Path) (field.ErrorList, []string) {
	_, guardErrs := appsv1beta1.ParseRolloutGuards(annotations)
	var errs field.ErrorList
	for _, e := range guardErrs {
		errs = append(errs, field.Invalid(path.Key(e.Key), e.Value, e.Detail))
	}
	var warnings []string
	_, window := annotations[appsv1beta1.FailureWindowAnnotation]
	if _, budget := annotations[appsv1beta1.FailureBudgetAnnotation]; window && !budget {
		warnings = append(warnings, fmt.Sprintf("%s: has no effect without the annotation %s",
			path.Key(appsv1beta1.FailureWindowAnnotation), appsv1beta1.FailureBudgetAnnotation))
	}
	return errs, warnings
}

// validatePatchPodMetadata checks the annotations patched onto pods: keys and
// values must be valid pod annotations, a key may appear in only one entry,
// and a MergePatchJson value must be a JSON object.
func validatePatchPodMetadata(entries []appsv1beta1.SidecarSetPatchPodMetadata, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	firstEntry := map[string]int{} // annotation key -> index of the first entry that sets it
	for i, entry := range entries {
		annotations := path.Index(i).Child("annotations")
		errs = append(errs, apivalidation.ValidateAnnotations(entry.Annotations, annotations)...)
		for _, key := range slices.Sorted(maps.Keys(entry.Annotations)) {
			if first, seen := firstEntry[key]; seen {
				errs = append(errs, withDetail(field.Duplicate(annotations.Key(key), key), fmt.Sprintf(
					"spec.patchPodMetadata[%d] already sets this annotation: keep each key in one entry", first)))
			} else {
				firstEntry[key] = i
			}
			if entry.PatchPolicy == appsv1beta1.SidecarSetMergePatchJSONPatchPolicy && !isJSONObject(entry.Annotations[key]) {
				errs = append(errs, field.Invalid(annotations.Key(key), entry.Annotations[key],
					"must be a JSON object with patchPolicy MergePatchJson: it is merged into the pod's value as a JSON merge patch"))
			}
		}
	}
	return errs
}

func isJSONObject(s string) bool {
	var v map[string]any
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

// patchPodMetadataWarnings warns about the patchPodMetadata keys that hold
// SidecarSet state (podstate.Reserved: the operator's bookkeeping, every
// key of the sidecarset-operator.dev/ prefix among them). They are
// accepted, as OpenKruise accepts them, but never patched onto pods, at
// injection or at an upgrade (policy/podmeta).
func patchPodMetadataWarnings(entries []appsv1beta1.SidecarSetPatchPodMetadata, path *field.Path) []string {
	var warnings []string
	for i, entry := range entries {
		for _, key := range slices.Sorted(maps.Keys(entry.Annotations)) {
			if podstate.Reserved(key) {
				warnings = append(warnings, fmt.Sprintf("%s: holds SidecarSet state, which only the operator writes: it is never patched onto pods",
					path.Index(i).Child("annotations").Key(key)))
			}
		}
	}
	return warnings
}
