package controllers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// The decoded specs of a SidecarSet's revisions are kept while it has pods
// that may run them, and only for revisions that still exist: thousands of
// SidecarSets selecting nothing keep none.
func TestMemories_RevisionSpecsKeepOnlyWhatPodsMayRun(t *testing.T) {
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
	var m memories
	kept := func() int { return len(m.sets[s.Name].revisions) }
	if got := m.revisionSpecs(s, revs, true); len(got) != 2 || kept() != 2 {
		t.Fatalf("with pods: %d specs returned, %d kept; want 2 and 2", len(got), kept())
	}
	if got := m.revisionSpecs(s, revs[1:], true); len(got) != 1 || kept() != 1 {
		t.Fatalf("a revision deleted: %d specs returned, %d kept; want 1 and 1", len(got), kept())
	}
	if got := m.revisionSpecs(s, revs[1:], false); got != nil || kept() != 0 {
		t.Fatalf("without pods: %d specs returned, %d kept; want none", len(got), kept())
	}
}

// A replacement credited to an eviction is noted on its record, which
// stays until the planner forgets it.
func TestMemories_NoteTheReplacement(t *testing.T) {
	t.Parallel()
	var m memories
	m.evicted("mesh", "uid-a", rollout.Eviction{Owner: "rs-1", Since: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)})
	m.evictionsDone("mesh", nil, map[types.UID]types.UID{"uid-a": "uid-a2", "uid-gone": "uid-x"})
	evicted, _ := m.recreations("mesh")
	if len(evicted) != 1 || evicted["uid-a"].ReplacedBy != "uid-a2" {
		t.Errorf("records %+v, want a replaced by a2 and nothing else", evicted)
	}
	m.evictionsDone("mesh", []types.UID{"uid-a"}, nil)
	if evicted, _ := m.recreations("mesh"); len(evicted) != 0 {
		t.Errorf("records %+v after done", evicted)
	}
}

// A deleted pod's entries go at once; a deleted SidecarSet's record goes
// whole, with the pod index of its entries in flight.
func TestMemories_Forget(t *testing.T) {
	t.Parallel()
	var m memories
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	m.expect("mesh", "uid-a", rollout.InFlight{Hash: "h", Since: now})
	m.expect("mesh", "uid-b", rollout.InFlight{Hash: "h", Since: now})
	m.refused("mesh", "uid-c", rollout.Refusal{Message: "budget", At: now})
	m.storePlan("mesh", true, rollout.ProgressClock{Generation: 2, Since: now})
	m.storeNotes("mesh", noteState{rollingTo: "h"})

	m.forgetPod("uid-a")
	m.forgetPod("uid-c")
	if got := m.inFlight("mesh"); len(got) != 1 {
		t.Errorf("in flight after the pod's deletion: %v, want uid-b only", got)
	}
	if _, refused := m.recreations("mesh"); len(refused) != 0 {
		t.Errorf("refusals after the pod's deletion: %v", refused)
	}

	m.forget("mesh")
	if len(m.sets) != 0 || len(m.inflightSet) != 0 {
		t.Errorf("after the SidecarSet's deletion, %d records and %d pods in flight remain", len(m.sets), len(m.inflightSet))
	}
	if m.settled("mesh") || m.progress("mesh") != (rollout.ProgressClock{}) || m.notes("mesh") != (noteState{}) {
		t.Error("a forgotten SidecarSet's plan or notes remain")
	}
}

// A SidecarSet's plans share a memo while its rollout moves; a settled plan
// drops it, and the plans after a settled one have none.
func TestMemories_ClassifiedWhileTheRolloutMoves(t *testing.T) {
	t.Parallel()
	var m memories
	first := m.classified("mesh")
	if first == nil || m.classified("mesh") != first {
		t.Fatal("the plans of a moving rollout do not share one memo")
	}
	m.storePlan("mesh", true, rollout.ProgressClock{})
	if m.sets["mesh"].classified != nil {
		t.Error("a settled plan keeps the memo")
	}
	if m.classified("mesh") != nil {
		t.Error("a plan after a settled one gets a memo")
	}
	m.storePlan("mesh", false, rollout.ProgressClock{})
	if next := m.classified("mesh"); next == nil || next == first {
		t.Errorf("the plan after a moving one gets memo %p, want a new one", next)
	}
}
