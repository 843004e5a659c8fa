package revision

import (
	"encoding/json"
	"fmt"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// MaxHistoryLimit is the most revisions the controller keeps for one
// SidecarSet, whatever its revisionHistoryLimit says (OpenKruise has no
// maximum; docs/revisions.md says why 100). Every replica of the operator
// holds every revision in memory, so the history of one SidecarSet is
// bounded by MaxHistoryLimit × MaxRecordedSize.
const MaxHistoryLimit = 100

// MaxRecordedSize is the most bytes the validating webhook lets a
// SidecarSet grow to, measured as RecordedSize (docs/revisions.md says why
// 128 KiB).
const MaxRecordedSize = 128 << 10

// HistoryLimit is how many revisions the controller keeps for a
// SidecarSet: its revisionHistoryLimit, at least 1 (the latest) and at
// most MaxHistoryLimit; 1 when unset (the defaulting webhook sets 10).
// Revisions that pods record or a pin names are kept beyond it.
func HistoryLimit(s *appsv1beta1.SidecarSet) int {
	l := s.Spec.RevisionHistoryLimit
	switch {
	case l == nil || *l < 1:
		return 1
	case *l > MaxHistoryLimit:
		return MaxHistoryLimit
	default:
		return int(*l)
	}
}

// RecordedSize is how many bytes a ControllerRevision recording the
// SidecarSet weighs, serialized as JSON: its data (the sidecars, volumes,
// pull secrets and patchPodMetadata), the SidecarSet's labels and
// annotations it copies, and its own metadata. Every change of the
// SidecarSet stores one such revision.
func RecordedSize(s *appsv1beta1.SidecarSet) (int, error) {
	rev, err := New(s, "", 1, nil)
	if err != nil {
		return 0, err
	}
	raw, err := json.Marshal(rev)
	if err != nil {
		return 0, fmt.Errorf("encoding the revision: %w", err)
	}
	return len(raw), nil
}
