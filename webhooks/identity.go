package webhooks

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
)

// identities are the records of the objects a SidecarSet was judged
// against when it was written (api/match): the UIDs of the namespaces it
// names that existed, and the UID of a canary's base. Empty strings: no
// record (no annotation).
type identities struct {
	namespaceUIDs string
	canaryBaseUID string
}

// identitiesOf reads a SidecarSet's records.
func identitiesOf(s *appsv1beta1.SidecarSet) identities {
	return identities{
		namespaceUIDs: s.Annotations[appsv1beta1.NamespaceUIDsAnnotation],
		canaryBaseUID: s.Annotations[appsv1beta1.CanaryBaseUIDAnnotation],
	}
}

// set writes the records on the object written, overwriting (or removing)
// whatever the request carried.
func (ids identities) set(meta *metav1.ObjectMeta) {
	for key, value := range map[string]string{
		appsv1beta1.NamespaceUIDsAnnotation: ids.namespaceUIDs,
		appsv1beta1.CanaryBaseUIDAnnotation: ids.canaryBaseUID,
	} {
		if value == "" {
			delete(meta.Annotations, key)
			continue
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[key] = value
	}
}

// bookkeepingOnly reports whether an update pauses the rollout
// (spec.updateStrategy.paused) or changes the finalizers or
// ownerReferences, and nothing else of the spec, labels and annotations:
// the operator's pause when a rollout spends its failure budget, and the
// garbage collector's writes. Such an update keeps the records: it may not
// be judged on the SidecarSet's reach (the authoring policy lets the
// operator pause without it), so it must not record the namespaces or the
// base as they are now. Any other update, one that changes nothing
// included, is the author's write and records them again. Both objects
// are compared defaulted, the records themselves ignored.
func bookkeepingOnly(s, old *appsv1beta1.SidecarSet) bool {
	pauses := s.Spec.UpdateStrategy.Paused && !old.Spec.UpdateStrategy.Paused
	if !pauses && equality.Semantic.DeepEqual(s.Finalizers, old.Finalizers) &&
		equality.Semantic.DeepEqual(s.OwnerReferences, old.OwnerReferences) {
		return false
	}
	a, b := s.DeepCopy(), old.DeepCopy()
	appsv1beta1.SetDefaults(a)
	appsv1beta1.SetDefaults(b)
	a.Spec.UpdateStrategy.Paused = b.Spec.UpdateStrategy.Paused
	for _, o := range []*appsv1beta1.SidecarSet{a, b} {
		delete(o.Annotations, appsv1beta1.NamespaceUIDsAnnotation)
		delete(o.Annotations, appsv1beta1.CanaryBaseUIDAnnotation)
		if len(o.Annotations) == 0 {
			o.Annotations = nil
		}
		if len(o.Labels) == 0 {
			o.Labels = nil
		}
	}
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

// identities returns the records the SidecarSet written gets. A create,
// and an update other than bookkeeping (bookkeepingOnly), records the
// objects as they are now: the UIDs of the namespaces it names one by one
// (match.IndexValues; a v1alpha1 spec.namespace arrives as such a
// selector) that exist, and the UID of a canary's base if it exists (the
// validating webhook refuses a canary whose base does not, and judges the
// base recorded). A bookkeeping update keeps the old object's records.
// Whatever the request carries is overwritten either way.
func (d SidecarSetDefaulter) identities(ctx context.Context, req admission.Request, s *appsv1beta1.SidecarSet) (identities, error) {
	if req.Operation == admissionv1.Update {
		old, _, _, err := DecodeSidecarSet(req.Kind.Version, req.OldObject.Raw)
		if err != nil {
			return identities{}, apierrors.NewBadRequest(err.Error())
		}
		if bookkeepingOnly(s, old) {
			return identitiesOf(old), nil
		}
	}
	var ids identities
	names := match.IndexValues(s)
	needsReader := match.CanaryBase(s) != "" || len(names) != 1 || names[0] != match.ClusterScope
	if needsReader && d.Reader == nil {
		return identities{}, apierrors.NewInternalError(errors.New("no reader to record the namespaces and the canary base the SidecarSet is written for"))
	}
	uids := map[string]types.UID{}
	for _, name := range names {
		if name == match.ClusterScope {
			continue
		}
		ns, err := lookup.Namespace(ctx, d.Reader, name)
		if apierrors.IsNotFound(err) && d.LiveReader != nil {
			// The cache may not have a namespace created just now.
			ns, err = lookup.Namespace(ctx, d.LiveReader, name)
		}
		switch {
		case apierrors.IsNotFound(err):
			// Not pinned: a namespace created later is matched by name.
			continue
		case err != nil:
			return identities{}, apierrors.NewInternalError(fmt.Errorf("reading namespace %s to record its UID: %w", name, err))
		}
		uids[name] = ns.GetUID()
	}
	ids.namespaceUIDs = match.FormatNamespaceUIDs(uids)
	if base := match.CanaryBase(s); base != "" {
		b := &appsv1beta1.SidecarSet{}
		err := d.Reader.Get(ctx, types.NamespacedName{Name: base}, b)
		switch {
		case apierrors.IsNotFound(err):
			// Refused by the validating webhook.
		case err != nil:
			return identities{}, apierrors.NewInternalError(fmt.Errorf("reading the canary's base SidecarSet %s: %w", base, err))
		default:
			ids.canaryBaseUID = string(b.UID)
		}
	}
	return ids, nil
}

// canaryJudged reports whether a write of a canary is judged against its
// base: a create, a new base, or a new record of the base (the base was
// deleted and created again since the canary was last written, or the
// canary, written by OpenKruise, had no record).
func canaryJudged(s, old *appsv1beta1.SidecarSet) bool {
	return old == nil || match.CanaryBase(old) != match.CanaryBase(s) || match.CanaryBaseUID(old) != match.CanaryBaseUID(s)
}

// checkRecordedBase refuses a canary whose record is not the base judged:
// the base was deleted and created again between the mutating webhook's
// record and this check.
func checkRecordedBase(canary, base *appsv1beta1.SidecarSet) error {
	if recorded := match.CanaryBaseUID(canary); recorded != base.UID {
		return apierrors.NewConflict(sidecarSetsResource, canary.Name, fmt.Errorf(
			"%s: the canary was recorded against SidecarSet %q of UID %q, and the one now of that name has UID %q "+
				"(it was deleted and created again meanwhile); write the canary again",
			field.NewPath("metadata", "annotations").Key(appsv1beta1.CanaryBaseUIDAnnotation), base.Name, recorded, base.UID))
	}
	return nil
}
