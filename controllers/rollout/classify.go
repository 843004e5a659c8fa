package rollout

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	"github.com/sidecarset-operator/sidecarset-operator/api/upgrade"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// setView is the SidecarSet as the planner uses it, derived once per plan.
type setView struct {
	obj    *appsv1beta1.SidecarSet
	name   string
	hashes appsv1beta1.Hashes
	// names are the SidecarSet's container and native-sidecar names in a
	// pod, both twins of a hot-upgrade sidecar included: consistency is
	// checked over them.
	names []string
	// cold and hot split the upgradable sidecars (spec.containers and the
	// native sidecars of spec.initContainers) by upgrade type.
	cold []*appsv1beta1.SidecarContainer
	hot  []hotSidecar
	// sidecarList is the sorted list recorded in the hash annotation
	// (podstate.SidecarList).
	sidecarList []string
	// selector is updateStrategy.selector compiled; selectorErr is set
	// when it is invalid, and then it selects no pod.
	selector    labels.Selector
	selectorErr error
	// whitelist decides the keys the re-applied patchPodMetadata may write.
	whitelist podmeta.Whitelist
	// pullPolicyHashes caches the without-image hashes computed with the
	// pull policies of pods (upgradableButPullPolicy), by policyKey.
	pullPolicyHashes map[string]string
	// revisions are the specs of the SidecarSet's revisions by
	// without-image hash (Input.Revisions); diffs caches their comparison
	// with the current spec.
	revisions map[string]*appsv1beta1.SidecarSetSpec
	diffs     map[string]upgrade.Diff
	// policies are the current spec's compiled resourcesPolicies.
	policies resources.Policies
	// resizeUnsupported: the cluster does not serve pods/resize;
	// resizeRefused are the pods whose resize the API server refused.
	resizeUnsupported bool
	resizeRefused     map[types.UID]string
	// recreate and recreateJobs are the SidecarSet's recreate opt-ins.
	recreate, recreateJobs bool
	// authority is the authority its last author recorded on it
	// (authority.go).
	authority authority.Verbs
	// now is the round's time.
	now time.Time
	// minReady is how long an upgraded sidecar must run ready to count
	// (appsv1beta1.RolloutGuards).
	minReady time.Duration
	// memo keeps what the last plans read of the pods (Input.Memo); nil
	// when the caller keeps none.
	memo *Memo
}

// hotSidecar is a hot-upgrade sidecar and its twins.
type hotSidecar struct {
	name, twin1, twin2 string
	image, emptyImage  string
}

func newSetView(s *appsv1beta1.SidecarSet, hashes appsv1beta1.Hashes) *setView {
	v := &setView{obj: s, name: s.Name, hashes: hashes, sidecarList: podstate.SidecarList(&s.Spec)}
	for i := range s.Spec.InitContainers {
		if c := &s.Spec.InitContainers[i]; appsv1beta1.IsNativeSidecar(&c.Container) {
			v.addSidecar(c)
		}
	}
	for i := range s.Spec.Containers {
		v.addSidecar(&s.Spec.Containers[i])
	}
	v.selector, v.selectorErr = match.Compile(s.Spec.UpdateStrategy.Selector)
	v.recreate, v.recreateJobs = appsv1beta1.RecreatesPods(s), appsv1beta1.RecreatesJobPods(s)
	v.authority = authority.Of(s)
	return v
}

// addSidecar adds one upgradable sidecar: a container, or a native sidecar
// (an init container with restartPolicy Always). Plain init containers are
// never added: they ran once and are not upgraded in place.
func (s *setView) addSidecar(c *appsv1beta1.SidecarContainer) {
	if c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
		t1, t2 := appsv1beta1.HotUpgradeTwins(c.Name)
		s.hot = append(s.hot, hotSidecar{
			name: c.Name, twin1: t1, twin2: t2,
			image: c.Image, emptyImage: c.UpgradeStrategy.HotUpgradeEmptyImage,
		})
		s.names = append(s.names, t1, t2)
		return
	}
	s.cold = append(s.cold, c)
	s.names = append(s.names, c.Name)
}

// rolling reports whether the strategy lets the planner touch pods.
func (s *setView) rolling() bool {
	us := s.obj.Spec.UpdateStrategy
	return us.Type != appsv1beta1.NotUpdateSidecarSetStrategyType && !us.Paused
}

// podView is one matched pod, its annotations decoded once, classified.
type podView struct {
	pod *corev1.Pod
	key types.NamespacedName
	// classified is what the plan read of the pod from the pod and the
	// SidecarSet's spec (Memo); entry is the pod's entry in the memo (nil
	// without one).
	classified
	entry *memoEntry
	// settledAt is when the pod's sidecars upgraded in place will have run
	// ready for the min-ready time, when that is later than now: until
	// then the pod takes a share of maxUnavailable (zero otherwise).
	settledAt time.Time
	// inFlight: the shell patched the pod and has not observed it yet;
	// inFlightHash is the hash it was patched to.
	inFlight     bool
	inFlightHash string
	// kind is what the rollout does to the pod, when it is not updated
	// (paths.go): kindInPlace for the image path, the other kinds for the
	// resize and recreate paths.
	kind kind
	// why says what the pod needs beyond images (the resize and recreate
	// paths), or why the rollout cannot reach it (kindBlocked).
	why string
	// resize is the pod's resize (kinds kindResize to kindResized), and
	// changesImages says whether its patch after the resize changes images.
	resize        *resizeView
	changesImages bool
	// notInjected: a pod the SidecarSet selects that lacks its sidecars
	// (Input.NotInjected), which only a recreation reaches.
	notInjected bool
	// evicting: the shell evicted the pod and the cache still shows it.
	evicting bool
	// notRecreatable: the pod needs a recreation no controller of its
	// would make.
	notRecreatable bool
	// refusedUntil is when an eviction refused by a PodDisruptionBudget
	// may be tried again; refusal is the API server's message.
	refusedUntil time.Time
	refusal      string
	// scopeUntil is when a pod that lacks the sidecars may be recreated:
	// until then the API server may not send its replacement to the pod
	// webhooks (Input.NotInjectedFrom).
	scopeUntil time.Time
}

// inPlace returns the SidecarSet's entry of the pod's in-place update state.
func (v *podView) inPlace(set string) *podstate.InPlaceUpdateState {
	return v.state.InPlace[set]
}

// unavailable reports whether the pod takes a share of maxUnavailable: it
// was patched and not yet observed, an in-place update is not complete, it
// is updated and not ready, its resize is being applied, or it is being
// evicted.
func (v *podView) unavailable() bool {
	if v.err != nil {
		return false
	}
	return v.inFlight || !v.consistent || (v.updated && (!v.ready || !v.settledAt.IsZero())) || v.kind == kindResizing || v.evicting
}

// done reports whether the pod runs, or was patched or resized towards, the
// current hash: the partition counts it among the pods on the new version.
func (v *podView) done(hash string) bool {
	return v.updated || (v.inFlight && v.inFlightHash == hash) || v.committed()
}

// committed reports whether the pod's sidecars already have the current
// revision's resources, its hash not yet written: the rest of its upgrade
// takes no new share of the partition.
func (v *podView) committed() bool {
	return !v.updated && (v.kind == kindResizing || v.kind == kindResizePending || v.kind == kindResized)
}

// waiting reports whether the rollout can act on the pod this round (an
// in-place patch, a resize, the patch after a resize, an eviction), before
// ordering and budget.
func (v *podView) waiting() bool {
	return v.err == nil && v.beyondAuthority == nil && v.selected && !v.updated && !v.inFlight && !v.finishing && !v.evicting && v.kind.acts()
}

// notUpgradable reports whether the pod needs the upgrade but the rollout
// cannot reach it: a change beyond images and resources without the
// recreate path, a pod no controller recreates, a resize it cannot make.
func (v *podView) notUpgradable() bool {
	return v.err == nil && v.selected && !v.updated && !v.inFlight && v.kind == kindBlocked
}

// inRollout reports whether the rollout can reach the pod: selected and on
// a path the rollout takes, or already updated. Scatter spreads over these
// pods and the conditions count them; the partition counts every matched
// pod.
func (v *podView) inRollout(hash string) bool {
	return v.err == nil && v.selected && (v.done(hash) || v.kind != kindBlocked)
}

// classify decodes and classifies one pod, at rank in the plan's order.
// active reports whether the shell has an unexpired in-flight entry for it.
func (s *setView) classify(pod *corev1.Pod, rank int, inflight InFlight, active bool) *podView {
	v, e, ok := s.memo.view(pod, rank)
	var c classified
	switch {
	case ok:
		c = e.c
	case e != nil:
		c = s.read(pod)
		e.c = c
	default:
		c = s.read(pod)
	}
	v.pod, v.key = pod, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	v.classified, v.entry = c, e
	if v.err != nil {
		return v
	}
	v.inFlight = active && !v.updated
	if v.inFlight {
		v.inFlightHash = inflight.Hash
	}
	if !v.updated && !v.upgradable {
		s.choosePath(v)
	}
	if v.updated {
		v.settledAt = s.settledAt(pod, v.inPlace(s.name))
	}
	return v
}

// read is what classify reads of a pod from the pod alone and the
// SidecarSet's spec (Memo).
func (s *setView) read(pod *corev1.Pod) classified {
	var c classified
	c.state, c.err = podstate.Read(pod.Annotations)
	if c.err != nil {
		return c
	}
	c.updated = c.state.Hashes[s.name].Hash == s.hashes.Hash
	if !c.updated {
		c.beyondAuthority = s.checkAuthority(pod)
	}
	if s.selectorErr == nil {
		c.selected = s.selector.Matches(labels.Set(pod.Labels))
	}
	c.upgradable = c.updated || c.state.HashesWithoutImage[s.name].Hash == s.hashes.WithoutImage ||
		s.upgradableButPullPolicy(pod, c.state)

	state := c.state.InPlace[s.name]
	c.consistent = true
	for _, name := range s.names {
		if containerComplete(pod, name, state) {
			continue
		}
		c.consistent = false
		if containerStatusReady(pod, name) {
			c.finishing = true
		}
	}
	c.ready = podRunningAndReady(pod)
	for _, h := range s.hot {
		_, idle := s.twins(c.state, h)
		if sc := specContainer(pod, idle); sc != nil && sc.Image != h.emptyImage {
			c.ready = false
		}
	}
	return c
}

// settledAt returns when the sidecars the SidecarSet's last in-place update
// changed will have run for the min-ready time, if that is after now; the
// zero time otherwise (settled, not running, or no min-ready).
func (s *setView) settledAt(pod *corev1.Pod, state *podstate.InPlaceUpdateState) time.Time {
	var at time.Time
	if state == nil || s.minReady <= 0 {
		return at
	}
	for _, name := range s.names {
		if _, changed := state.LastContainerStatuses[name]; !changed {
			continue
		}
		st := containerStatus(pod, name)
		if st == nil || st.State.Running == nil {
			continue
		}
		if t := st.State.Running.StartedAt.Add(s.minReady); t.After(s.now) && t.After(at) {
			at = t
		}
	}
	return at
}

// twins returns the working and the idle twin of a hot-upgrade sidecar in a
// pod, per the working-container annotation (the first twin when unset).
func (s *setView) twins(state podstate.State, h hotSidecar) (working, idle string) {
	if state.WorkingHotUpgrade[h.name] == h.twin2 {
		return h.twin2, h.twin1
	}
	return h.twin1, h.twin2
}

// settleInFlight sorts the shell's in-flight entries: those to forget (the
// pod is gone, shows the hash it was patched to, or the entry expired), the
// expired subset, and the still active ones. byUID holds the pods that have
// an entry.
func (s *setView) settleInFlight(in Input, byUID map[types.UID]*corev1.Pod) (forget, expired []types.UID, active map[types.UID]InFlight) {
	active = map[types.UID]InFlight{}
	for uid, e := range in.InFlight {
		pod, ok := byUID[uid]
		switch {
		case !ok:
			forget = append(forget, uid)
		case s.observedHash(pod) == e.Hash:
			forget = append(forget, uid)
		case e.Resize && pod.Generation > e.Generation && kubeletObserved(pod):
			// The resize is in the cache and the kubelet took it up: its
			// conditions and statuses tell the rest (resize.go).
			forget = append(forget, uid)
		case in.Now.Sub(e.Since) >= InFlightTimeout:
			forget = append(forget, uid)
			expired = append(expired, uid)
		default:
			active[uid] = e
		}
	}
	slices.Sort(forget)
	slices.Sort(expired)
	return forget, expired, active
}

// kubeletObserved reports whether the kubelet has seen the pod's current
// generation, or reports a resize of it.
func kubeletObserved(pod *corev1.Pod) bool {
	return pod.Status.ObservedGeneration >= pod.Generation ||
		findPodCondition(pod, corev1.PodResizePending) != nil || findPodCondition(pod, corev1.PodResizeInProgress) != nil
}

// observedHash is the hash a pod records for the SidecarSet ("" if none or
// unreadable).
func (s *setView) observedHash(pod *corev1.Pod) string {
	state, err := podstate.Read(pod.Annotations)
	if err != nil {
		return ""
	}
	return state.Hashes[s.name].Hash
}

// nextExpiry returns how long until the first active in-flight entry
// expires, or 0 if none is active.
func nextExpiry(now time.Time, active map[types.UID]InFlight) time.Duration {
	var next time.Duration
	for _, e := range active {
		next = earliest(next, e.Since.Add(InFlightTimeout).Sub(now))
	}
	return next
}
