package detect

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// state is everything the detector holds: the pods each SidecarSet misses
// and why, whether it has looked at every pod, and where it tells the
// SidecarSet controller of a change. It is safe for concurrent use.
type state struct {
	mu    sync.Mutex
	bySet map[string]map[types.NamespacedName]string // SidecarSet -> pod -> reason
	byPod map[types.NamespacedName][]string          // pod -> the SidecarSets it misses
	// synced: every pod of the first list has been looked at.
	synced bool
	// controller is the SidecarSet controller's queue, once its watch of
	// the changes started; until then pending holds the changes (after
	// synced: none is told before).
	controller workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending    map[string]bool
}

func newState() *state {
	return &state{bySet: map[string]map[types.NamespacedName]string{}, byPod: map[types.NamespacedName][]string{}}
}

// record sets the SidecarSets a pod misses, with the reasons, and returns
// the SidecarSets whose pods changed.
func (s *state) record(pod types.NamespacedName, missing map[string]string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed []string
	var now []string
	for name, reason := range missing {
		now = append(now, name)
		if s.bySet[name] == nil {
			s.bySet[name] = map[types.NamespacedName]string{}
		}
		if s.bySet[name][pod] != reason {
			s.bySet[name][pod] = reason
			changed = append(changed, name)
		}
	}
	for _, name := range s.byPod[pod] {
		if _, still := missing[name]; !still {
			s.unfileLocked(name, pod)
			changed = append(changed, name)
		}
	}
	if len(now) == 0 {
		delete(s.byPod, pod)
	} else {
		s.byPod[pod] = now
	}
	return changed
}

// forget drops a pod that is gone, and returns the SidecarSets it missed.
func (s *state) forget(pod types.NamespacedName) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.byPod[pod]
	for _, name := range changed {
		s.unfileLocked(name, pod)
	}
	delete(s.byPod, pod)
	return changed
}

// forgetSidecarSet drops a SidecarSet that is gone.
func (s *state) forgetSidecarSet(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pod := range s.bySet[name] {
		s.byPod[pod] = slices.DeleteFunc(s.byPod[pod], func(n string) bool { return n == name })
		if len(s.byPod[pod]) == 0 {
			delete(s.byPod, pod)
		}
	}
	delete(s.bySet, name)
}

// unfileLocked removes a pod from a SidecarSet's pods that miss it, and
// the SidecarSet's map once empty: a Go map keeps the room it grew to, and
// the thousands of pods a SidecarSet once missed (an admission test, a
// rollout) would otherwise stay in memory as empty room.
func (s *state) unfileLocked(name string, pod types.NamespacedName) {
	delete(s.bySet[name], pod)
	if len(s.bySet[name]) == 0 {
		delete(s.bySet, name)
	}
}

// tracks reports whether a pod misses some SidecarSet.
func (s *state) tracks(pod types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byPod[pod]
	return ok
}

// podsOf returns the pods that miss a SidecarSet.
func (s *state) podsOf(name string) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(s.bySet[name]))
	for pod := range s.bySet[name] {
		out = append(out, pod)
	}
	return out
}

// notInjected returns the pods that miss a SidecarSet and why, sorted.
func (s *state) notInjected(name string) []NotInjectedPod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NotInjectedPod, 0, len(s.bySet[name]))
	for pod, reason := range s.bySet[name] {
		out = append(out, NotInjectedPod{Pod: pod, Reason: reason})
	}
	slices.SortFunc(out, func(a, b NotInjectedPod) int {
		return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
	})
	return out
}

func (s *state) isSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// markSynced records that every pod has been looked at, and tells the
// controller of every SidecarSet named: each gets its first count, zero
// included.
func (s *state) markSynced(every []string) {
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	s.tell(every)
}

// tell asks the SidecarSet controller to reconcile the SidecarSets, after
// notifyDelay; before synced, it tells nothing (markSynced tells them
// all).
func (s *state) tell(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.synced {
		return
	}
	for _, name := range names {
		if s.controller == nil {
			if s.pending == nil {
				s.pending = map[string]bool{}
			}
			s.pending[name] = true
			continue
		}
		s.controller.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, notifyDelay)
	}
}

// attach is the start of the SidecarSet controller's watch of the changes:
// the pending ones go to its queue, and the next ones.
func (s *state) attach(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.controller = q
	for name := range s.pending {
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, notifyDelay)
	}
	s.pending = nil
}
