// Package crdwatch follows the SidecarSet informer's watches, so that the
// manager knows when its view of the SidecarSets is live again after a
// write of the CRD replaced its storage.
package crdwatch

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// storageReplaceTimeout bounds how long the manager waits for the API server
// to end the SidecarSet watch after a write of the CRD's spec: if the watch
// outlives it (an API server that keeps its storage), the manager is ready
// anyway.
const storageReplaceTimeout = 30 * time.Second

// SidecarSetWatches follows the SidecarSet informer's watches, so that the
// manager knows when its view of the SidecarSets is live again after it wrote
// the CRD's conversion webhook.
//
// A write of a CRD's spec makes the API server replace the CRD's storage:
// about a second later it ends every watch opened on the old one, and the
// informer's new watch succeeds once the new storage is ready (two to three
// seconds after the write, in the dev cluster). A SidecarSet created
// meanwhile reaches neither the pod webhooks' scope nor the injector's
// registry until then: a pod created right after it would be admitted
// without its sidecars. The first start of a fresh install writes the CRD
// (the self-managed CA is new), so a user following the manual right after
// the install would meet it. crdconversion.ConversionConfig's ready check
// waits, after its write, until every watch opened before the write has
// ended and a newer one is open.
type SidecarSetWatches struct {
	mu         sync.Mutex
	opened     uint64              // watches opened so far, numbered from 1
	open       map[uint64]struct{} // watches whose stream has not ended
	stale      uint64              // watches up to this number were opened before the write
	replacedAt time.Time           // when the CRD was written; zero: never
	blind      bool                // Wrap met a ListerWatcher it cannot follow: Live never waits
}

// NewSidecarSetWatches returns a tracker with no watch yet.
func NewSidecarSetWatches() *SidecarSetWatches {
	return &SidecarSetWatches{open: map[uint64]struct{}{}}
}

// Wrap returns the informer's ListerWatcher with its watches followed.
// controller-runtime's informers pass a *toolscache.ListWatch with a
// context-aware watch function; it is copied whole (its list semantics are
// kept), only that function wrapped. Any other ListerWatcher is returned as
// is and the tracker never waits.
func (s *SidecarSetWatches) Wrap(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	in, ok := lw.(*toolscache.ListWatch)
	if !ok || in.WatchFuncWithContext == nil {
		s.mu.Lock()
		s.blind = true
		s.mu.Unlock()
		return lw
	}
	out := *in
	out.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return s.track(in.WatchFuncWithContext(ctx, opts))
	}
	return &out
}

// track numbers a watch that opened and follows its stream to its end.
func (s *SidecarSetWatches) track(w watch.Interface, err error) (watch.Interface, error) {
	if err != nil {
		return w, err
	}
	s.mu.Lock()
	s.opened++
	id := s.opened
	s.open[id] = struct{}{}
	s.mu.Unlock()
	t := &trackedWatch{Interface: w, out: make(chan watch.Event), done: make(chan struct{})}
	go t.forward(func() {
		s.mu.Lock()
		delete(s.open, id)
		s.mu.Unlock()
	})
	return t, nil
}

// StorageReplaced records that the CRD's spec was just written: every watch
// opened so far is on the storage the API server is about to replace.
func (s *SidecarSetWatches) StorageReplaced(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale, s.replacedAt = s.opened, now
}

// Live reports whether the SidecarSet watch is on the CRD's current storage:
// nothing was written, or every watch opened before the last write has ended
// and a newer one is open, or storageReplaceTimeout has passed since the
// write. waited is how long since the write.
func (s *SidecarSetWatches) Live(now time.Time) (live bool, waited time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replacedAt.IsZero() || s.blind {
		return true, 0
	}
	waited = now.Sub(s.replacedAt)
	if waited >= storageReplaceTimeout {
		return true, waited
	}
	fresh := false
	for id := range s.open {
		if id <= s.stale {
			return false, waited
		}
		fresh = true
	}
	return fresh, waited
}

// trackedWatch passes a watch's events on and says when its stream ends.
type trackedWatch struct {
	watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func (t *trackedWatch) ResultChan() <-chan watch.Event { return t.out }

// Stop stops the watch; an event being passed on is dropped (the reader
// stopped reading).
func (t *trackedWatch) Stop() {
	t.once.Do(func() { close(t.done) })
	t.Interface.Stop()
}

func (t *trackedWatch) forward(ended func()) {
	defer close(t.out)
	defer ended()
	for ev := range t.Interface.ResultChan() {
		select {
		case t.out <- ev:
		case <-t.done:
			return
		}
	}
}
