// Package scopestate carries, from the writer of the pod webhooks' scope to
// the SidecarSet controller, which SidecarSets the scope could not express
// (webhooks/scope, Level Degraded) and why: the controller turns that into
// the SidecarSets' ScopeDegraded condition and event. It also carries when
// each SidecarSet's generation reached the webhook configurations, so that
// pods created before a SidecarSet are recreated only once the API server
// has had time to send their replacements to the webhook.
package scopestate

import (
	"maps"
	"sync"
	"time"
)

// State is the last scope's degraded SidecarSets, and when each
// SidecarSet's generation was written. Its zero value is empty and ready;
// it is safe for concurrent use.
type State struct {
	mu       sync.Mutex
	degraded map[string]string // SidecarSet name -> message
	written  map[string]written
	notify   func(name string)
}

// written is when a generation of a SidecarSet was in the scope written.
type written struct {
	generation int64
	at         time.Time // zero when no write was needed
}

// OnChange registers the function called, outside the lock, with the name
// of each SidecarSet whose entry Set adds, changes or removes.
func (s *State) OnChange(f func(name string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = f
}

// Set replaces the degraded SidecarSets: name -> why.
func (s *State) Set(degraded map[string]string) {
	s.mu.Lock()
	var changed []string
	for name, msg := range degraded {
		if old, ok := s.degraded[name]; !ok || old != msg {
			changed = append(changed, name)
		}
	}
	for name := range s.degraded {
		if _, ok := degraded[name]; !ok {
			changed = append(changed, name)
		}
	}
	s.degraded = maps.Clone(degraded)
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		for _, name := range changed {
			notify(name)
		}
	}
}

// Degraded returns why a SidecarSet is left out of the scope, if it is.
func (s *State) Degraded(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg, ok := s.degraded[name]
	return msg, ok
}

// Written records the SidecarSets a scope was computed from, name ->
// generation, and when the webhook configurations last changed (the zero
// time when they never did, or none is installed). A generation keeps the
// time it was first recorded with; SidecarSets absent from generations are
// forgotten.
func (s *State) Written(generations map[string]int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]written, len(generations))
	for name, gen := range generations {
		if w, ok := s.written[name]; ok && w.generation == gen {
			next[name] = w
			continue
		}
		next[name] = written{generation: gen, at: at}
	}
	s.written = next
}

// WrittenAt returns when the scope holding a SidecarSet's generation was
// written (the zero time when no write was needed), and false while no
// scope computed from that generation was written yet.
func (s *State) WrittenAt(name string, generation int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[name]
	if !ok || w.generation != generation {
		return time.Time{}, false
	}
	return w.at, true
}
