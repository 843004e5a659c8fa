package controllers

import (
	"sync"

	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// lastPlans remembers, per SidecarSet, what its last plan said that the
// pod handler and the next plan read: whether it was settled, and its
// progress clock. One plain map of small values: with thousands of
// SidecarSets, a sync.Map per fact cost two nodes and a boxed value per
// SidecarSet and fact.
type lastPlans struct {
	mu sync.RWMutex
	m  map[string]lastPlan
}

type lastPlan struct {
	settled  bool
	progress rollout.ProgressClock
}

// store records a SidecarSet's last plan.
func (l *lastPlans) store(name string, settled bool, progress rollout.ProgressClock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]lastPlan{}
	}
	l.m[name] = lastPlan{settled: settled, progress: progress}
}

// settled reports whether the SidecarSet's last plan was settled; one not
// planned yet is not.
func (l *lastPlans) settled(name string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.m[name].settled
}

// progress returns the progress clock of the SidecarSet's last plan (the
// zero clock if none).
func (l *lastPlans) progress(name string) rollout.ProgressClock {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.m[name].progress
}

// forget drops a deleted SidecarSet.
func (l *lastPlans) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, name)
}
