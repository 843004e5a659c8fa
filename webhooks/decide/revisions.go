package decide

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

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

func (c *pinnedCache) restore(s *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) (*inject.Pinned, error) {
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
		Hashes: appsv1beta1.Hashes{
			Hash:         restored.Annotations[appsv1beta1.SidecarSetHashAnnotation],
			WithoutImage: restored.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation],
		},
		RevisionName: rev.Name,
		Resources:    resources.CompileSpec(&restored.Spec),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= pinnedCacheSize {
		c.entries = map[string]*inject.Pinned{}
	}
	c.entries[key] = p
	return p, nil
}
