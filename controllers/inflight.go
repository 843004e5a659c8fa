package controllers

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// inFlight remembers, per SidecarSet, the pods the controller patched and
// has not yet seen with their new hash (the planner waits for them instead
// of trusting a cache that may lag its own writes). Entries are keyed by pod
// UID, forgotten when the planner reports them done (observed, pod gone, or
// expired after rollout.InFlightTimeout) and when the pod is deleted, so a
// vanished pod cannot stall a rollout. The store belongs to the reconciler;
// nothing survives a restart, which is fine: the pods' annotations record
// what was done.
type inFlight struct {
	mu   sync.Mutex
	sets map[string]map[types.UID]rollout.InFlight
	pods map[types.UID]string // pod UID -> SidecarSet name
}

func newInFlight() *inFlight {
	return &inFlight{sets: map[string]map[types.UID]rollout.InFlight{}, pods: map[types.UID]string{}}
}

// snapshot returns a copy of a SidecarSet's entries.
func (f *inFlight) snapshot(set string) map[types.UID]rollout.InFlight {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[types.UID]rollout.InFlight, len(f.sets[set]))
	maps.Copy(out, f.sets[set])
	return out
}

// expect records a pod the controller patched or resized.
func (f *inFlight) expect(set string, uid types.UID, e rollout.InFlight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	put(f.sets, set, uid, e)
	f.pods[uid] = set
}

// put sets an entry of a SidecarSet's map of pods, creating the map.
func put[V any](m map[string]map[types.UID]V, set string, uid types.UID, v V) {
	if m[set] == nil {
		m[set] = map[types.UID]V{}
	}
	m[set][uid] = v
}

// forget drops entries of a SidecarSet.
func (f *inFlight) forget(set string, uids ...types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, uid := range uids {
		delete(f.sets[set], uid)
		delete(f.pods, uid)
	}
	if len(f.sets[set]) == 0 {
		delete(f.sets, set)
	}
}

// forgetPod drops a deleted pod's entry and returns its SidecarSet.
func (f *inFlight) forgetPod(uid types.UID) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	set, ok := f.pods[uid]
	if !ok {
		return ""
	}
	delete(f.pods, uid)
	delete(f.sets[set], uid)
	if len(f.sets[set]) == 0 {
		delete(f.sets, set)
	}
	return set
}

// forgetSet drops every entry of a deleted SidecarSet.
func (f *inFlight) forgetSet(set string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid := range f.sets[set] {
		delete(f.pods, uid)
	}
	delete(f.sets, set)
}

// oldest is the age of the oldest entry, for the metric.
func (f *inFlight) oldest(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var age time.Duration
	for _, entries := range f.sets {
		for _, e := range entries {
			if d := now.Sub(e.Since); d > age {
				age = d
			}
		}
	}
	return age
}
