package revision

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ControllerUID is the UID of a revision's controller owner, or "" if it
// has none.
func ControllerUID(rev *appsv1.ControllerRevision) types.UID {
	for _, o := range rev.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.UID
		}
	}
	return ""
}

// OwnedBy reports whether a revision belongs to a SidecarSet: CheckOwned
// finds nothing wrong with it. Only a revision the SidecarSet controls, by
// UID, is its history. One without a controller is not trusted, whatever its
// label says: anyone who can write ControllerRevisions in the operator's
// namespace could have planted it, and a customVersion pin, the history's
// numbering or a rollout undo would otherwise pick its content (OpenKruise
// 1.8 and 1.9 write every revision with the SidecarSet as controller, so a
// takeover keeps them all; a revision loses its controller only when its
// SidecarSet is deleted with --cascade=orphan). A revision controlled by
// another UID was left by an earlier SidecarSet of the same name that
// garbage collection has not reached yet; it is not this SidecarSet's
// history either.
func OwnedBy(rev *appsv1.ControllerRevision, s *appsv1beta1.SidecarSet) bool {
	return CheckOwned(rev, s) == nil
}

// CheckOwned returns an error unless a revision is the SidecarSet's own: it
// carries the kruise.io/sidecarset-name label of the SidecarSet and the
// SidecarSet, by UID, controls it. A revisionName pin may only name such a
// revision: not another SidecarSet's, and not one left by an earlier
// SidecarSet of the same name (its content was written, and judged, under
// another author's authority). A SidecarSet without a UID (read from a
// file, by the kubectl plugin) is checked by the label only.
func CheckOwned(rev *appsv1.ControllerRevision, s *appsv1beta1.SidecarSet) error {
	if owner := rev.Labels[appsv1beta1.SidecarSetNameLabel]; owner != s.Name {
		return fmt.Errorf("ControllerRevision %s/%s belongs to SidecarSet %q, not %q", rev.Namespace, rev.Name, owner, s.Name)
	}
	if s.UID == "" {
		return nil
	}
	switch uid := ControllerUID(rev); uid {
	case s.UID:
		return nil
	case "":
		return fmt.Errorf("ControllerRevision %s/%s has no controller: SidecarSet %q does not own it", rev.Namespace, rev.Name, s.Name)
	default:
		return fmt.Errorf("ControllerRevision %s/%s is controlled by %s, an earlier SidecarSet named %q, not by this one (%s)",
			rev.Namespace, rev.Name, uid, s.Name, s.UID)
	}
}

// NewestWithCustomVersion returns the revision a customVersion pin resolves
// to: among the revisions labelled with the SidecarSet's name and owned by
// it (OwnedBy: controlled by its UID), the one with the highest revision
// number carrying the custom-version label (the name breaks ties); nil if
// there is none. The pod webhook injects it, and the controller's history
// keeps it.
func NewestWithCustomVersion(s *appsv1beta1.SidecarSet, version string, revs []appsv1.ControllerRevision) *appsv1.ControllerRevision {
	var newest *appsv1.ControllerRevision
	for i := range revs {
		r := &revs[i]
		if r.Labels[appsv1beta1.SidecarSetNameLabel] != s.Name || !OwnedBy(r, s) ||
			r.Labels[appsv1beta1.SidecarSetCustomVersionLabel] != version {
			continue
		}
		if newest == nil || r.Revision > newest.Revision || (r.Revision == newest.Revision && r.Name > newest.Name) {
			newest = r
		}
	}
	return newest
}
