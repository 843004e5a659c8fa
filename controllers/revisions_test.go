package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The decoded specs of a SidecarSet's revisions are kept while it has pods
// that may run them, and only for revisions that still exist: thousands of
// SidecarSets selecting nothing keep none.
func TestRevisionSpecs_KeepsOnlyWhatPodsMayRun(t *testing.T) {
	t.Parallel()
	s := proxySet("envoy:v1")
	s.UID = "uid-1"
	older := proxySet("envoy:v1")
	older.UID = s.UID
	older.Spec.Containers[0].Args = []string{"--older"} // another without-image hash
	var revs []appsv1.ControllerRevision
	for i, spec := range []*appsv1beta1.SidecarSet{older, s} {
		rev, err := revision.New(spec, "kruise-system", int64(i+1), new(int32))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, *rev)
	}
	c := newRevisionSpecs()
	if got := c.forSidecarSet(s, revs, true); len(got) != 2 || len(c.m) != 2 {
		t.Fatalf("with pods: %d specs returned, %d kept; want 2 and 2", len(got), len(c.m))
	}
	if got := c.forSidecarSet(s, revs[1:], true); len(got) != 1 || len(c.m) != 1 {
		t.Fatalf("a revision deleted: %d specs returned, %d kept; want 1 and 1", len(got), len(c.m))
	}
	if got := c.forSidecarSet(s, revs[1:], false); got != nil || len(c.m) != 0 {
		t.Fatalf("without pods: %d specs returned, %d kept; want none", len(got), len(c.m))
	}
}
