package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// historyLimitWarnings warns when revisionHistoryLimit is above the
// maximum the controller keeps: the value is accepted (OpenKruise has no
// maximum, and SidecarSets it wrote must stay writable) and clamped.
func historyLimitWarnings(spec *appsv1beta1.SidecarSetSpec, path *field.Path) []string {
	l := spec.RevisionHistoryLimit
	if l == nil || *l <= revision.MaxHistoryLimit {
		return nil
	}
	return []string{fmt.Sprintf("%s: %d is above the maximum of %d: the controller keeps at most %d ControllerRevisions "+
		"of this SidecarSet (the value is clamped to %d)", path, *l, revision.MaxHistoryLimit, revision.MaxHistoryLimit, revision.MaxHistoryLimit)}
}

// operatorRecords are the annotations the defaulting webhook writes on a
// SidecarSet, whatever its author wrote: the hashes, the authority record
// and the identities of its namespaces and canary base. They are bounded
// by the operator, so they do not count when an update of a SidecarSet
// above the size bound is judged: the first update of an OpenKruise
// SidecarSet that changes its content adds them.
var operatorRecords = []string{
	appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation, authority.Annotation,
	appsv1beta1.NamespaceUIDsAnnotation, appsv1beta1.CanaryBaseUIDAnnotation,
}

// authorSize is revision.RecordedSize of the SidecarSet without the
// operator's records.
func authorSize(s *appsv1beta1.SidecarSet) (int, error) {
	c := s.DeepCopy()
	for _, k := range operatorRecords {
		delete(c.Annotations, k)
	}
	return revision.RecordedSize(c)
}

// validateSize refuses a SidecarSet whose revisions would weigh more than
// revision.MaxRecordedSize (revision.RecordedSize) on create, and on an
// update that makes it larger (the operator's records aside). An existing
// larger SidecarSet (written by OpenKruise, or before the bound) stays
// editable by updates that do not grow it, and deletable.
func validateSize(s, old *appsv1beta1.SidecarSet, namespace string, path *field.Path) field.ErrorList {
	size, err := revision.RecordedSize(s)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	if size <= revision.MaxRecordedSize {
		return nil
	}
	var before int
	if old != nil {
		if before, err = revision.RecordedSize(old); err != nil {
			return field.ErrorList{field.InternalError(path, err)}
		}
		authorNow, err := authorSize(s)
		if err != nil {
			return field.ErrorList{field.InternalError(path, err)}
		}
		authorBefore, err := authorSize(old)
		if err != nil {
			return field.ErrorList{field.InternalError(path, err)}
		}
		if authorNow <= authorBefore {
			return nil
		}
	}
	detail := fmt.Sprintf("the SidecarSet weighs %d bytes as each of its ControllerRevisions records it (its spec, labels and annotations), "+
		"more than the bound of %d bytes (%d KiB): every change of it is kept as a ControllerRevision in %s and held in memory "+
		"by every operator replica; keep large configuration in a ConfigMap the sidecar mounts",
		size, revision.MaxRecordedSize, revision.MaxRecordedSize>>10, namespace)
	if old != nil {
		detail += fmt.Sprintf(" (this update makes it larger: it weighed %d bytes)", before)
	}
	return field.ErrorList{field.Forbidden(path, detail)}
}
