package rollout

import (
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
}

// setKey is what of the SidecarSet the classification reads: its spec (the
// generation, and the hashes for an object that has none), its
// updateStrategy.selector, and the authority its last author recorded.
type setKey struct {
	uid        types.UID
	generation int64
	hashes     appsv1beta1.Hashes
	selector   string
	authority  authority.Verbs
}

type memoEntry struct {
	resourceVersion string
	round           uint32
	c               classified
	view            podView
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
}

func (s *setView) key() setKey {
	k := setKey{uid: s.obj.UID, generation: s.obj.Generation, hashes: s.hashes, authority: s.authority}
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

// view returns the pod's view to fill and its entry, whose classification
// holds when the pod has not changed since it was recorded (ok). Without a
// memo, or for a pod without a resourceVersion, the view is new and there
// is no entry.
func (m *Memo) view(pod *corev1.Pod) (v *podView, e *memoEntry, ok bool) {
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
	e.resourceVersion, e.round = pod.ResourceVersion, m.round
	e.view = podView{}
	return &e.view, e, ok
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
