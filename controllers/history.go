package controllers

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
)

// historyPlan is what to do with a SidecarSet's ControllerRevisions.
type historyPlan struct {
	// Latest describes the current spec: an existing revision, or one to
	// create when Create is set.
	Latest *appsv1.ControllerRevision
	// Create creates Latest.
	Create bool
	// Renumber gives Latest this revision number (a rollback to an older
	// revision makes it the newest); 0 means no change.
	Renumber int64
	// Relabel sets the custom-version label on Latest.
	Relabel string
	// Delete names the revisions beyond the history limit.
	Delete []string
}

// planHistory decides, from the SidecarSet's existing revisions (those
// labelled with its name that it controls, revision.OwnedBy), how the history
// records the current spec. It follows OpenKruise: an identical existing
// revision is reused (and renumbered as the newest on a rollback), else a
// new one is created; the history is cut to revisionHistoryLimit (at least
// 1 and, unlike OpenKruise, at most revision.MaxHistoryLimit), oldest
// first, never deleting the latest revision or an active one (a revision a
// pod records, or the pinned one). The active revisions (active, which
// reads every pod) are asked for only when the history is cut, at most
// once: a history within its limit leaves the pods unread.
func planHistory(s *appsv1beta1.SidecarSet, namespace string, existing []appsv1.ControllerRevision, active func() sets.Set[string], collisionCount int32) (historyPlan, error) {
	revs := make([]*appsv1.ControllerRevision, 0, len(existing))
	for i := range existing {
		r := &existing[i]
		if revision.OwnedBy(r, s) {
			revs = append(revs, r)
		}
	}
	slices.SortFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
	next := int64(1)
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision + 1
	}
	candidate, err := revision.New(s, namespace, next, &collisionCount)
	if err != nil {
		return historyPlan{}, err
	}

	var plan historyPlan
	var equal *appsv1.ControllerRevision
	for _, r := range revs {
		if bytes.Equal(r.Data.Raw, candidate.Data.Raw) {
			equal = r // the newest identical one
		}
	}
	switch {
	case equal != nil && equal == revs[len(revs)-1]:
		plan.Latest = equal
	case equal != nil:
		plan.Latest = equal
		plan.Renumber = next
	default:
		plan.Latest = candidate
		plan.Create = true
	}
	plan.Relabel = customVersionToLabel(s, plan.Latest)

	limit := revision.HistoryLimit(s)
	count := len(revs)
	if plan.Create {
		count++
	}
	var keep sets.Set[string]
	for _, r := range revs {
		if count <= limit {
			break
		}
		if keep == nil {
			keep = active()
		}
		if r == plan.Latest || keep.Has(r.Name) {
			continue
		}
		plan.Delete = append(plan.Delete, r.Name)
		count--
	}
	return plan, nil
}

// customVersionToLabel returns the SidecarSet's custom version when a
// revision does not carry it yet, else "".
func customVersionToLabel(s *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) string {
	if v := s.Spec.CustomVersion; v != "" && rev.Labels[appsv1beta1.SidecarSetCustomVersionLabel] != v {
		return v
	}
	return ""
}

// activeRevisions are the revisions that must survive truncation: those the
// pods record, the pinned revisionName, and the revision the pinned
// customVersion resolves to, exactly as the pod webhook resolves it
// (revision.NewestWithCustomVersion: the newest one this SidecarSet owns).
func activeRevisions(s *appsv1beta1.SidecarSet, podRevisions sets.Set[string], existing []appsv1.ControllerRevision) sets.Set[string] {
	active := podRevisions.Clone()
	pin := s.Spec.InjectionStrategy.Revision
	if pin == nil {
		return active
	}
	if pin.RevisionName != nil {
		active.Insert(*pin.RevisionName)
	}
	if pin.CustomVersion != nil {
		if newest := revision.NewestWithCustomVersion(s, *pin.CustomVersion, existing); newest != nil {
			active.Insert(newest.Name)
		}
	}
	return active
}

// listRevisions lists the ControllerRevisions labelled with the
// SidecarSet's name, from the cache, as copies syncHistory may write back.
func (r *SidecarSetReconciler) listRevisions(ctx context.Context, s *appsv1beta1.SidecarSet) ([]appsv1.ControllerRevision, error) {
	return fieldindex.ListRevisions(ctx, r.Client, r.Namespace, s.Name)
}

// syncHistory records the current spec as a ControllerRevision, given the
// existing revisions (listRevisions; those it renumbers or relabels are
// updated in place), and returns its name and the collision count to
// persist. A name collision with a different revision bumps the count and
// asks for a retry. podRevisions returns the revisions the pods record,
// asked for only when the history is cut.
func (r *SidecarSetReconciler) syncHistory(ctx context.Context, s *appsv1beta1.SidecarSet, existing []appsv1.ControllerRevision, podRevisions func() sets.Set[string]) (string, int32, error) {
	var collisions int32
	if s.Status.CollisionCount != nil {
		collisions = *s.Status.CollisionCount
	}
	active := func() sets.Set[string] { return activeRevisions(s, podRevisions(), existing) }
	plan, err := planHistory(s, r.Namespace, existing, active, collisions)
	if err != nil {
		return "", collisions, err
	}
	latest := plan.Latest
	switch {
	case plan.Create:
		err := r.Client.Create(ctx, latest)
		if apierrors.IsAlreadyExists(err) {
			existing := &appsv1.ControllerRevision{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(latest), existing); err != nil {
				return "", collisions, err
			}
			if !bytes.Equal(existing.Data.Raw, latest.Data.Raw) {
				return "", collisions + 1, fmt.Errorf("revision name %s collides with a different revision: retrying with collision count %d", latest.Name, collisions+1)
			}
			// The existing revision (left by an earlier SidecarSet of the
			// same name, or not yet in the cache) may lack the custom
			// version the candidate carries, and may still belong to the
			// deleted SidecarSet (garbage collection has not reached it):
			// adopt it, so that it is ours and goes away with us.
			latest = existing
			plan.Relabel = customVersionToLabel(s, existing)
			if revision.ControllerUID(existing) != s.UID {
				patch := client.MergeFrom(existing.DeepCopy())
				existing.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1beta1.GroupVersion.WithKind("SidecarSet"))}
				if err := r.Client.Patch(ctx, existing, patch); err != nil {
					return "", collisions, fmt.Errorf("adopting revision %s: %w", existing.Name, err)
				}
			}
		} else if err != nil {
			return "", collisions, fmt.Errorf("creating revision %s: %w", latest.Name, err)
		}
	case plan.Renumber > 0:
		patch := client.MergeFrom(latest.DeepCopy())
		latest.Revision = plan.Renumber
		if err := r.Client.Patch(ctx, latest, patch); err != nil {
			return "", collisions, fmt.Errorf("renumbering revision %s: %w", latest.Name, err)
		}
	}
	if plan.Relabel != "" {
		patch := client.MergeFrom(latest.DeepCopy())
		if latest.Labels == nil {
			latest.Labels = map[string]string{}
		}
		latest.Labels[appsv1beta1.SidecarSetCustomVersionLabel] = plan.Relabel
		if err := r.Client.Patch(ctx, latest, patch); err != nil {
			return "", collisions, fmt.Errorf("labelling revision %s: %w", latest.Name, err)
		}
	}
	for _, name := range plan.Delete {
		rev := &appsv1.ControllerRevision{}
		rev.Namespace, rev.Name = r.Namespace, name
		if err := r.Client.Delete(ctx, rev); client.IgnoreNotFound(err) != nil {
			return "", collisions, fmt.Errorf("deleting old revision %s: %w", name, err)
		}
	}
	return latest.Name, collisions, nil
}
