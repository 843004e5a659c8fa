package controllers

import (
	"maps"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// memories are what the reconciler remembers of each SidecarSet between
// its reconciles: one record per SidecarSet (setMemory), which one forget
// drops when the SidecarSet is deleted. Nothing survives a restart, which
// is fine: the pods' annotations and the SidecarSet's status record what
// was done.
type memories struct {
	mu   sync.Mutex
	sets map[string]*setMemory
	// inflightSet is the SidecarSet of each pod in flight, by pod UID: a
	// deleted pod's entry goes at once.
	inflightSet map[types.UID]string
	// due is when the reconcile the pod handler last queued for each
	// SidecarSet is due, until that reconcile starts (reconcileDue).
	due map[string]time.Time
}

// setMemory is what the reconciler remembers of one SidecarSet.
type setMemory struct {
	// inflight are the pods the controller patched or resized and has not
	// yet seen with their new hash: the planner waits for them instead of
	// trusting a cache that may lag its own writes. An entry goes when the
	// planner reports it done (observed, pod gone, or expired after
	// rollout.InFlightTimeout) and when the pod is deleted, so that a
	// vanished pod cannot stall a rollout.
	inflight map[types.UID]rollout.InFlight
	// evicted are the pods the controller evicted and has not seen
	// replaced (gone when the planner reports them done); refused the
	// evictions the API server refused (gone with the pod, or the next
	// eviction).
	evicted map[types.UID]rollout.Eviction
	refused map[types.UID]rollout.Refusal
	// revisions are the specs the SidecarSet's ControllerRevisions record,
	// decoded, by revision name (revisionSpecs).
	revisions map[string]revisionSpec
	// notes is what the last events said, so that events are emitted on
	// transitions only (nil until the first).
	notes *noteState
	// settled and progress are what the last plan said: whether it was
	// settled (the pod handler then delays pod updates) and its progress
	// clock (passed to the next plan).
	settled  bool
	progress rollout.ProgressClock
	// classified is what the last plans read of the SidecarSet's pods,
	// which the next plan reads again only for the pods that changed, kept
	// while the rollout moves: a settled plan drops it (a settled
	// SidecarSet plans seldom, and the memo would only hold memory). One
	// reconcile of a SidecarSet runs at a time, and only it uses the memo.
	classified *rollout.Memo
	// statusAt is when the controller last wrote the status
	// (statusRefreshIn).
	statusAt time.Time
}

// set returns a SidecarSet's record, created if need be; m.mu is held.
func (m *memories) set(name string) *setMemory {
	if m.sets == nil {
		m.sets, m.inflightSet = map[string]*setMemory{}, map[types.UID]string{}
	}
	s := m.sets[name]
	if s == nil {
		s = &setMemory{}
		m.sets[name] = s
	}
	return s
}

// forget drops a deleted SidecarSet's record.
func (m *memories) forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sets[name]; s != nil {
		for uid := range s.inflight {
			delete(m.inflightSet, uid)
		}
	}
	delete(m.sets, name)
}

// reconcileDue reports whether a pod event must queue a reconcile of the
// SidecarSet name after delay, and if so remembers when it is due. It
// need not when a reconcile the pod handler queued has not started yet and
// is due by then: that reconcile reads every pod of the SidecarSet from the
// cache, which holds the event's pod before the handler sees the event. A
// queued reconcile past its due time is asked for again, whatever kept it.
func (m *memories) reconcileDue(name string, now time.Time, delay time.Duration) bool {
	at := now.Add(delay)
	m.mu.Lock()
	defer m.mu.Unlock()
	if due, ok := m.due[name]; ok && !now.After(due) && !due.After(at) {
		return false
	}
	if m.due == nil {
		m.due = map[string]time.Time{}
	}
	m.due[name] = at
	return true
}

// reconcileStarted is called as a reconcile of the SidecarSet name starts,
// before it reads the pods: the pod events from then on queue the next one.
func (m *memories) reconcileStarted(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.due, name)
}

// forgetPod drops a deleted pod's entries: in flight, and refused.
func (m *memories) forgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name, ok := m.inflightSet[uid]; ok {
		delete(m.sets[name].inflight, uid)
		delete(m.inflightSet, uid)
	}
	for _, s := range m.sets {
		delete(s.refused, uid)
	}
}

// inFlight returns a copy of a SidecarSet's pods in flight.
func (m *memories) inFlight(name string) map[types.UID]rollout.InFlight {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.UID]rollout.InFlight{}
	if s := m.sets[name]; s != nil {
		maps.Copy(out, s.inflight)
	}
	return out
}

// expect records a pod the controller patched or resized.
func (m *memories) expect(name string, uid types.UID, e rollout.InFlight) {
	m.mu.Lock()
	defer m.mu.Unlock()
	put(&m.set(name).inflight, uid, e)
	m.inflightSet[uid] = name
}

// landed forgets the pods in flight the planner reports done.
func (m *memories) landed(name string, uids ...types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	if s == nil {
		return
	}
	for _, uid := range uids {
		delete(s.inflight, uid)
		delete(m.inflightSet, uid)
	}
	if len(s.inflight) == 0 {
		s.inflight = nil
	}
}

// oldestInFlight is the age of the oldest pod in flight, for the metric.
func (m *memories) oldestInFlight(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var age time.Duration
	for _, s := range m.sets {
		for _, e := range s.inflight {
			age = max(age, now.Sub(e.Since))
		}
	}
	return age
}

// recreations returns copies of a SidecarSet's evictions and refusals.
func (m *memories) recreations(name string) (map[types.UID]rollout.Eviction, map[types.UID]rollout.Refusal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	if s == nil {
		return nil, nil
	}
	return maps.Clone(s.evicted), maps.Clone(s.refused)
}

// evicted records an eviction the API server accepted.
func (m *memories) evicted(name string, uid types.UID, e rollout.Eviction) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.set(name)
	put(&s.evicted, uid, e)
	delete(s.refused, uid)
}

// refused records an eviction the API server refused.
func (m *memories) refused(name string, uid types.UID, f rollout.Refusal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	put(&m.set(name).refused, uid, f)
}

// put records a pod's entry in a map of a SidecarSet's record, made on its
// first entry (a SidecarSet with nothing in flight keeps no map).
func put[V any](m *map[types.UID]V, uid types.UID, v V) {
	if *m == nil {
		*m = map[types.UID]V{}
	}
	(*m)[uid] = v
}

// evictionsDone forgets the evictions the planner settled, and notes the
// replacement credited to each eviction whose record stays
// (rollout.Eviction.ReplacedBy).
func (m *memories) evictionsDone(name string, done []types.UID, replacedBy map[types.UID]types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	if s == nil {
		return
	}
	for _, uid := range done {
		delete(s.evicted, uid)
	}
	for uid, replacement := range replacedBy {
		if e, ok := s.evicted[uid]; ok {
			e.ReplacedBy = replacement
			s.evicted[uid] = e
		}
	}
	if len(s.evicted) == 0 {
		s.evicted = nil
	}
}

// revisionSpecs returns the specs of a SidecarSet's revisions (the
// existing ones, as listRevisions lists them) by without-image hash,
// decoding, defaulting and hashing each revision version once: the planner
// finds the revision a pod runs by its without-image hash, to tell a
// resize from a change that needs a new pod (rollout.Input.Revisions). A
// revision that does not decode is left out: the pods that run it go the
// recreate path, or are reported.
//
// A SidecarSet without pods needs none: its entries are dropped, so that
// thousands of SidecarSets selecting nothing keep no decoded specs. The
// entries of revisions that no longer exist are dropped too.
func (m *memories) revisionSpecs(s *appsv1beta1.SidecarSet, existing []appsv1.ControllerRevision, hasPods bool) map[string]*appsv1beta1.SidecarSetSpec {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !hasPods {
		if mem := m.sets[s.Name]; mem != nil {
			mem.revisions = nil
		}
		return nil
	}
	mem := m.set(s.Name)
	kept := make(map[string]revisionSpec, len(existing))
	out := make(map[string]*appsv1beta1.SidecarSetSpec, len(existing))
	for i := range existing {
		rev := &existing[i]
		if !revision.OwnedBy(rev, s) {
			continue
		}
		e, ok := mem.revisions[rev.Name]
		if !ok || e.resourceVersion != rev.ResourceVersion {
			e = decodeRevisionSpec(s, rev)
		}
		kept[rev.Name] = e
		if e.spec != nil {
			out[e.withoutImage] = e.spec
		}
	}
	mem.revisions = kept
	return out
}

// notes returns what the last events of a SidecarSet said.
func (m *memories) notes(name string) noteState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sets[name]; s != nil && s.notes != nil {
		return *s.notes
	}
	return noteState{}
}

// storeNotes records what the events of a SidecarSet said.
func (m *memories) storeNotes(name string, n noteState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set(name).notes = &n
}

// storePlan records what a SidecarSet's last plan said.
func (m *memories) storePlan(name string, settled bool, progress rollout.ProgressClock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.set(name)
	s.settled, s.progress = settled, progress
	if settled {
		s.classified = nil
	}
}

// settled reports whether the SidecarSet's last plan was settled; one not
// planned yet is not.
func (m *memories) settled(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	return s != nil && s.settled
}

// progress returns the progress clock of the SidecarSet's last plan (the
// zero clock if none).
func (m *memories) progress(name string) rollout.ProgressClock {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sets[name]; s != nil {
		return s.progress
	}
	return rollout.ProgressClock{}
}

// statusWritten records that the SidecarSet's status was written at now.
func (m *memories) statusWritten(name string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set(name).statusAt = now
}

// statusRefreshIn is how long a status that changed only its progress
// waits before it is written (statusRefreshInterval after the last write;
// 0: now).
func (m *memories) statusRefreshIn(name string, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	if s == nil || s.statusAt.IsZero() {
		return 0
	}
	return max(s.statusAt.Add(statusRefreshInterval).Sub(now), 0)
}

// classified returns the memo of a SidecarSet's plans (rollout.Memo), nil
// when its last plan was settled.
func (m *memories) classified(name string) *rollout.Memo {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.set(name)
	if s.settled {
		return nil
	}
	if s.classified == nil {
		s.classified = &rollout.Memo{}
	}
	return s.classified
}
