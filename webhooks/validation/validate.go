// Package validation is the pure core of the SidecarSet validating admission
// webhook: given a defaulted SidecarSet, its previous version on update and
// the other SidecarSets of the cluster, it returns the field errors that
// reject the request and the warnings that accompany it. It does no I/O: the
// webhook shell reads the cache, resolves the pinned revision and passes the
// results in.
//
// What the CRD schema and the compiled CEL rules of package policy already
// enforce is not checked again here.
package validation

import (
	"cmp"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Options are the inputs of ValidateSidecarSet that the webhook shell reads
// from the cluster.
type Options struct {
	// Others are the other SidecarSets in the cluster (from the cache), used
	// for conflict checks and to find the base of a canary. The SidecarSet
	// being validated may be among them; it is skipped by name.
	Others []*appsv1beta1.SidecarSet
	// PinnedRevisionError is the shell's result of resolving
	// spec.injectionStrategy.revision (nil = found or not pinned).
	PinnedRevisionError error
	// Namespace is the operator's namespace, where ControllerRevisions live
	// (named in messages; default kruise-system).
	Namespace string
}

// operatorNamespace is the namespace of the ControllerRevisions, for
// messages.
func (o Options) operatorNamespace() string {
	if o.Namespace == "" {
		return "kruise-system"
	}
	return o.Namespace
}

// ValidateSidecarSet validates a defaulted SidecarSet on create (old == nil)
// or update. It returns the field errors, sorted by field path then message,
// and the warnings, sorted; each warning starts with its field path.
//
// Conflicts with other SidecarSets are checked only when the selectors are
// valid. On update, a conflict that the old object already had with the same
// SidecarSet is reported as a warning instead of an error, so that objects
// created under laxer rules (OpenKruise's) can still be edited.
func ValidateSidecarSet(s, old *appsv1beta1.SidecarSet, o Options) (field.ErrorList, []string) {
	if s == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("no SidecarSet to validate"))}, nil
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings []string

	if old == nil {
		// Names are immutable: checking them on create is enough, and an
		// object created before this rule stays editable.
		errs = append(errs, validateName(s.Name, field.NewPath("metadata", "name"))...)
	}
	errs = append(errs, validateCanary(s, old, o.Others)...)
	errs = append(errs, validateFailurePolicy(s.Annotations, field.NewPath("metadata", "annotations"))...)
	recreateErrs, recreateWarnings := validateRecreate(s, old, field.NewPath("metadata", "annotations"))
	errs = append(errs, recreateErrs...)
	warnings = append(warnings, recreateWarnings...)
	guardErrs, guardWarnings := validateRolloutGuards(s.Annotations, field.NewPath("metadata", "annotations"))
	errs = append(errs, guardErrs...)
	warnings = append(warnings, guardWarnings...)

	selectorErrs := validateSelectors(&s.Spec, spec)
	errs = append(errs, selectorErrs...)
	errs = append(errs, validateSidecarContainers(s.Spec.InitContainers, true, spec.Child("initContainers"))...)
	errs = append(errs, validateSidecarContainers(s.Spec.Containers, false, spec.Child("containers"))...)
	errs = append(errs, validateVolumes(s.Spec.Volumes, spec.Child("volumes"))...)
	errs = append(errs, validatePinnedRevision(s, o, spec.Child("injectionStrategy", "revision"))...)
	errs = append(errs, validatePatchPodMetadata(s.Spec.PatchPodMetadata, spec.Child("patchPodMetadata"))...)
	warnings = append(warnings, patchPodMetadataWarnings(s.Spec.PatchPodMetadata, spec.Child("patchPodMetadata"))...)
	warnings = append(warnings, strategyWarnings(&s.Spec.UpdateStrategy, spec.Child("updateStrategy"))...)
	warnings = append(warnings, historyLimitWarnings(&s.Spec, spec.Child("revisionHistoryLimit"))...)
	errs = append(errs, validateSize(s, old, o.operatorNamespace(), spec)...)

	if len(selectorErrs) == 0 {
		conflictErrs, conflictWarnings := validateConflicts(s, old, o.Others, spec)
		errs = append(errs, conflictErrs...)
		warnings = append(warnings, conflictWarnings...)
	}
	if old != nil {
		warnings = append(warnings, updateWarnings(s, old, spec)...)
	}

	sortErrors(errs)
	slices.Sort(warnings)
	return errs, warnings
}

// sortErrors orders errors by field path, then by the rest of the message.
func sortErrors(errs field.ErrorList) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.ErrorBody(), b.ErrorBody()))
	})
}

// withDetail sets the detail of an error whose constructor takes none
// (field.Duplicate, field.NotFound), so it can say what to do.
func withDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}
