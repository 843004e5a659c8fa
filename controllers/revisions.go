package controllers

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// revisionSpecs memoises the specs the SidecarSets' ControllerRevisions
// record, decoded, defaulted and hashed once per revision version: the
// planner finds the revision a pod runs by its without-image hash, to tell
// a resize from a change that needs a new pod (rollout.Input.Revisions).
type revisionSpecs struct {
	mu sync.Mutex
	m  map[string]revisionSpec // revision name -> decoded
}

type revisionSpec struct {
	set             string
	resourceVersion string
	withoutImage    string
	spec            *appsv1beta1.SidecarSetSpec
}

func newRevisionSpecs() *revisionSpecs {
	return &revisionSpecs{m: map[string]revisionSpec{}}
}

// forSidecarSet returns the specs of a SidecarSet's revisions (the
// existing ones, as listRevisions lists them) by without-image hash. A
// revision that does not decode is left out: the pods that run it go the
// recreate path, or are reported.
//
// A SidecarSet without pods needs none: its entries are dropped, so that
// thousands of SidecarSets selecting nothing keep no decoded specs. The
// entries of revisions that no longer exist are dropped too.
func (c *revisionSpecs) forSidecarSet(s *appsv1beta1.SidecarSet, existing []appsv1.ControllerRevision, hasPods bool) map[string]*appsv1beta1.SidecarSetSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := make(map[string]bool, len(existing))
	if hasPods {
		for i := range existing {
			current[existing[i].Name] = true
		}
	}
	for name, e := range c.m {
		if e.set == s.Name && !current[name] {
			delete(c.m, name)
		}
	}
	if !hasPods {
		return nil
	}
	out := make(map[string]*appsv1beta1.SidecarSetSpec, len(existing))
	for i := range existing {
		rev := &existing[i]
		if !revision.OwnedBy(rev, s) {
			continue
		}
		e, ok := c.m[rev.Name]
		if !ok || e.resourceVersion != rev.ResourceVersion {
			e = decodeRevisionSpec(s, rev)
			e.set = s.Name
			c.m[rev.Name] = e
		}
		if e.spec != nil {
			out[e.withoutImage] = e.spec
		}
	}
	return out
}

// forget drops the entries of a deleted SidecarSet's revisions.
func (c *revisionSpecs) forget(set string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.m {
		if e.set == set {
			delete(c.m, name)
		}
	}
}

// decodeRevisionSpec decodes one revision (rollout.RevisionSpec).
func decodeRevisionSpec(live *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) revisionSpec {
	e := revisionSpec{resourceVersion: rev.ResourceVersion}
	e.withoutImage, e.spec, _ = rollout.RevisionSpec(live, rev)
	return e
}
