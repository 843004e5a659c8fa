package rollout

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Memo keeps, between the plans of one SidecarSet, what the planner read
// of each pod that depends only on the pod and the SidecarSet's spec
// (classified): a rollout plans again each time its pods move, and most of
// its pods have not changed since the last plan. A pod is read again when
// its resourceVersion changes, and every pod when the SidecarSet's spec,
// hashes, update selector or authority do (setKey). What depends on the
// time, the shell's records (in flight, evictions, refusals) or the
// SidecarSet's revisions is decided in every plan, as is the whole path of
// a pod that needs more than new images (paths.go).
//
// A Memo serves one SidecarSet's plans, one plan at a time (Input.Memo);
// the zero value is ready to use. It holds one entry per pod of the last
// plan, and each entry the pod's view, which the next plan fills again
// instead of allocating another: no view outlives its plan.
type Memo struct {
	set     setKey
	entries map[types.UID]*memoEntry
	// round counts the plans; an entry not used in the last one is dropped.
	round uint32
	// size is the number of pods the last plan ordered (sorted).
	size int
}

// setKey is what of the SidecarSet the classification reads: its spec (the
// generation, and the hashes for an object that has none), its
// updateStrategy.selector, the authority its last author recorded, and its
// min-ready time (classified.upgradeSettled).
type setKey struct {
	uid        types.UID
	generation int64
	hashes     appsv1beta1.Hashes
	selector   string
	authority  authority.Verbs
	minReady   time.Duration
}

type memoEntry struct {
	resourceVersion string
	round           uint32
	// rank is the pod's place in the last plan's order (sorted).
	rank int
	c    classified
	view podView
}

// classified is what classify reads of a pod from the pod alone and the
// SidecarSet's spec.
type classified struct {
	// state is the pod's SidecarSet annotations, decoded.
	state podstate.State
	// beyondAuthority is set when what the SidecarSet's sidecars reach in
	// the pod is not covered by its authority any more (authority.go): the
	// pod is not upgraded in place, and is reported as blocked.
	beyondAuthority error
	// err is set when the pod's SidecarSet annotations cannot be decoded:
	// the pod is counted as matched and otherwise left alone.
	err error
	// updated: the pod records the SidecarSet's current hash.
	updated bool
	// selected: updateStrategy.selector selects the pod.
	selected bool
	// upgradable: the pod's without-image hash equals the SidecarSet's, so
	// the difference, if any, is images only (in a plan's view, the resize
	// path sets it too: paths.go).
	upgradable bool
	// consistent: every in-place update of the SidecarSet's containers and
	// native sidecars is complete (consistency.go).
	consistent bool
	// finishing: a container that reports ready has not completed its last
	// in-place update (to an older version): skip the pod this round.
	finishing bool
	// ready is the status definition: running, Ready, not terminating, and
	// every hot-upgrade sidecar's idle twin has the empty image.
	ready bool
	// upgradeSettled: the pod's upgrade to the current revision is
	// complete and its sidecars have run ready for the min-ready time. Set
	// by the guards (upgradedPod) once they find it so, which then stays
	// true while the pod does not change: time only moves on.
	upgradeSettled bool
}

func (s *setView) key() setKey {
	k := setKey{uid: s.obj.UID, generation: s.obj.Generation, hashes: s.hashes, authority: s.authority, minReady: s.minReady}
	if s.selector != nil {
		k.selector = s.selector.String()
	}
	return k
}

// begin starts a plan of s: the entries of another spec are dropped.
func (m *Memo) begin(s *setView) {
	if m == nil {
		return
	}
	if k := s.key(); m.set != k {
		m.set, m.entries = k, nil
	}
	if m.entries == nil {
		m.entries = map[types.UID]*memoEntry{}
	}
	m.round++
}

// sorted returns the pods sorted by namespace and name (sortedPods). When
// the last plan saw every one of them, their ranks in its order sort them
// without a comparison: a pod's namespace and name never change, and the
// pods the last plan saw and this one does not only leave gaps.
func (m *Memo) sorted(pods []*corev1.Pod) []*corev1.Pod {
	if m == nil {
		return sortedPods(pods)
	}
	out := m.byRank(pods)
	if out == nil {
		out = sortedPods(pods)
	}
	m.size = len(out)
	return out
}

// byRank places the pods at their ranks of the last plan, nil when one of
// them has none.
func (m *Memo) byRank(pods []*corev1.Pod) []*corev1.Pod {
	if len(m.entries) == 0 {
		return nil
	}
	out := make([]*corev1.Pod, m.size)
	for _, pod := range pods {
		e := m.entries[pod.UID]
		if e == nil || e.round != m.round-1 || e.rank >= len(out) || out[e.rank] != nil {
			return nil
		}
		out[e.rank] = pod
	}
	return slices.DeleteFunc(out, func(pod *corev1.Pod) bool { return pod == nil })
}

// view returns the view to fill of the pod at rank in the plan's order, and
// its entry, whose classification holds when the pod has not changed since
// it was recorded (ok). Without a memo, or for a pod without a
// resourceVersion, the view is new and there is no entry.
func (m *Memo) view(pod *corev1.Pod, rank int) (v *podView, e *memoEntry, ok bool) {
	if m == nil || pod.ResourceVersion == "" {
		return &podView{}, nil, false
	}
	e = m.entries[pod.UID]
	switch {
	case e == nil:
		e = &memoEntry{}
		m.entries[pod.UID] = e
	case e.resourceVersion == pod.ResourceVersion:
		ok = true
	}
	e.resourceVersion, e.round, e.rank = pod.ResourceVersion, m.round, rank
	e.view = podView{}
	return &e.view, e, ok
}

// State returns the pod's SidecarSet annotations as the last plan decoded
// them (podstate.Read), when the pod has not changed since and they could
// be decoded; ok is false otherwise, and on a nil memo. What the
// annotations hold does not depend on the SidecarSet's spec: an entry of
// an older spec serves too.
func (m *Memo) State(pod *corev1.Pod) (_ podstate.State, ok bool) {
	if m == nil || pod.ResourceVersion == "" {
		return podstate.State{}, false
	}
	e := m.entries[pod.UID]
	if e == nil || e.resourceVersion != pod.ResourceVersion || e.c.err != nil {
		return podstate.State{}, false
	}
	return e.c.state, true
}

// end drops the entries of the pods the plan did not look at.
func (m *Memo) end() {
	if m == nil {
		return
	}
	for uid, e := range m.entries {
		if e.round != m.round {
			delete(m.entries, uid)
		}
	}
}

// settleUpgrade records that the pod's upgrade settled (upgradeSettled),
// for this plan and, in the memo, for the next ones.
func (v *podView) settleUpgrade() {
	v.upgradeSettled = true
	if v.entry != nil {
		v.entry.c.upgradeSettled = true
	}
}
