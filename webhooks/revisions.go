package webhooks

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// findPinnedRevision returns the ControllerRevision a SidecarSet's
// injectionStrategy.revision names, from the cache of the operator's
// namespace. Unlike OpenKruise, a revisionName must belong to this
// SidecarSet (its kruise.io/sidecarset-name label).
func findPinnedRevision(ctx context.Context, reader client.Reader, namespace string, s *appsv1alpha1.SidecarSet) (*appsv1.ControllerRevision, error) {
	pin := s.Spec.InjectionStrategy.Revision
	switch {
	case pin == nil:
		return nil, nil
	case pin.RevisionName != nil:
		rev := &appsv1.ControllerRevision{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: *pin.RevisionName}, rev); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s/%s: %w", namespace, *pin.RevisionName, err)
		}
		if owner := rev.Labels[appsv1alpha1.SidecarSetNameLabel]; owner != s.Name {
			return nil, fmt.Errorf("ControllerRevision %s/%s belongs to SidecarSet %q, not %q", namespace, rev.Name, owner, s.Name)
		}
		return rev, nil
	case pin.CustomVersion != nil:
		list := &appsv1.ControllerRevisionList{}
		if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{fieldindex.RevisionBySidecarSet: s.Name}); err != nil {
			return nil, err
		}
		var newest *appsv1.ControllerRevision
		for i := range list.Items {
			rev := &list.Items[i]
			if !ownedBy(rev, s) {
				continue // left behind by an earlier SidecarSet of the same name
			}
			if rev.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] == *pin.CustomVersion && (newest == nil || rev.Revision > newest.Revision) {
				newest = rev
			}
		}
		if newest == nil {
			return nil, fmt.Errorf("no ControllerRevision of SidecarSet %q in %s has %s=%s", s.Name, namespace, appsv1alpha1.SidecarSetCustomVersionLabel, *pin.CustomVersion)
		}
		return newest, nil
	default:
		return nil, fmt.Errorf("injectionStrategy.revision names neither a revisionName nor a customVersion")
	}
}

// ownedBy reports whether a revision belongs to the SidecarSet: it has no
// controller owner, or the SidecarSet (by UID) is it, as the controller's
// history considers.
func ownedBy(rev *appsv1.ControllerRevision, s *appsv1alpha1.SidecarSet) bool {
	for _, o := range rev.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.UID == s.UID
		}
	}
	return true
}

// pinnedCache memoises restored revisions: restoring decodes the revision
// and recomputes hashes, which must not happen for every pod. Entries are
// keyed by the SidecarSet's and the revision's names, UIDs and resource
// versions, so any change to either makes a new entry (and objects read from
// files, which may have neither UID nor resource version, never share one);
// old ones are dropped when it is full.
type pinnedCache struct {
	mu      sync.Mutex
	entries map[string]*inject.Pinned
}

const pinnedCacheSize = 256

func (c *pinnedCache) restore(s *appsv1alpha1.SidecarSet, rev *appsv1.ControllerRevision) (*inject.Pinned, error) {
	key := s.Name + "/" + string(s.UID) + "/" + s.ResourceVersion + "/" + rev.Name + "/" + string(rev.UID) + "/" + rev.ResourceVersion
	c.mu.Lock()
	if p, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()

	restored, err := revision.Restore(s, rev)
	if err != nil {
		return nil, err
	}
	p := &inject.Pinned{
		SidecarSet: restored,
		Hashes: appsv1alpha1.Hashes{
			Hash:         restored.Annotations[appsv1alpha1.SidecarSetHashAnnotation],
			WithoutImage: restored.Annotations[appsv1alpha1.SidecarSetHashWithoutImageAnnotation],
		},
		RevisionName: rev.Name,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= pinnedCacheSize {
		c.entries = map[string]*inject.Pinned{}
	}
	c.entries[key] = p
	return p, nil
}
