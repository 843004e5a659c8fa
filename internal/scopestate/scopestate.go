// Package scopestate carries, from the writer of the pod webhooks' scope to
// the SidecarSet controller, which SidecarSets the scope could not express
// (webhooks/scope, Level Degraded) and why: the controller turns that into
// the SidecarSets' ScopeDegraded condition and event.
package scopestate

import (
	"maps"
	"sync"
)

// State is the last scope's degraded SidecarSets. Its zero value is empty
// and ready; it is safe for concurrent use.
type State struct {
	mu       sync.Mutex
	degraded map[string]string // SidecarSet name -> message
	notify   func(name string)
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
