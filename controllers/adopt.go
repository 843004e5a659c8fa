package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

// OpenKruise's ControllerRevisions name their SidecarSet as an
// apps.kruise.io/v1beta1 owner. This operator serves v1alpha1 only, so after
// a takeover the garbage collector cannot resolve that owner reference and
// would keep the revisions after the SidecarSet is deleted. The history
// adopts them: the owner reference of the same UID is rewritten to the
// version served.

// staleOwner reports whether a revision's controller is the SidecarSet
// (same UID) under another API version than the one served.
func staleOwner(s *appsv1alpha1.SidecarSet, r *appsv1.ControllerRevision) bool {
	for _, o := range r.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.UID == s.UID {
			return o.APIVersion != appsv1alpha1.GroupVersion.String()
		}
	}
	return false
}

// adoptRevisions rewrites the owner reference of the SidecarSet's
// revisions that name it under another API version.
func (r *SidecarSetReconciler) adoptRevisions(ctx context.Context, s *appsv1alpha1.SidecarSet, revs []appsv1.ControllerRevision) error {
	for i := range revs {
		rev := &revs[i]
		if !staleOwner(s, rev) {
			continue
		}
		patch := client.MergeFrom(rev.DeepCopy())
		refs := []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1alpha1.GroupVersion.WithKind("SidecarSet"))}
		for _, o := range rev.OwnerReferences {
			if o.UID != s.UID {
				refs = append(refs, o)
			}
		}
		rev.OwnerReferences = refs
		if err := r.Client.Patch(ctx, rev, patch); err != nil {
			return fmt.Errorf("adopting revision %s: %w", rev.Name, err)
		}
	}
	return nil
}
