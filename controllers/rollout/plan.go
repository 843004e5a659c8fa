// Package rollout is the pure planner of SidecarSet in-place upgrades.
//
// Given a SidecarSet, its hashes, its matched pods and the shell's record of
// pods it patched but has not yet seen updated, Compute decides the status
// to write, which pods to upgrade now (each as one strategic-merge patch
// with a resourceVersion precondition), which hot-upgrade twins to reset,
// which pods cannot be upgraded in place, and which SidecarSetUpgradable pod
// conditions change. It reads no cache, calls no API and reads no clock: the
// reconciler around it does the I/O.
//
// The upgradable sidecars are the SidecarSet's containers and its native
// sidecars (init containers with restartPolicy Always, which the kubelet
// restarts on an image change since Kubernetes 1.33); both upgrade alike,
// cold or hot. Plain init containers ran once and are never changed.
//
// The files follow the decision: classify.go (what each pod is),
// consistency.go (when an in-place update is complete), order.go and
// scatter.go (upgrade order), budget.go (partition and maxUnavailable),
// update.go and hotupgrade.go (the patches), upgradable.go (the pod
// condition), status.go (status counts and conditions), guard.go (the
// failure budget and the progress deadline).
package rollout

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// InFlightTimeout is how long the planner waits for a patched pod to show
// the hash it was patched to. After that it gives up on the entry and plans
// the pod from what it observes, so a pod that vanished or was changed
// behind the controller's back cannot stall the rollout.
const InFlightTimeout = 5 * time.Minute

// Input is everything the planner decides from.
type Input struct {
	// SidecarSet is the SidecarSet, defaulted (appsv1beta1.SetDefaults).
	// Its status conditions are the previous ones, kept where unchanged.
	SidecarSet *appsv1beta1.SidecarSet
	// Hashes are ComputeHashes of its spec; the planner trusts these, not
	// the SidecarSet's hash annotations.
	Hashes appsv1beta1.Hashes
	// LatestRevision names the ControllerRevision of the current spec; it is
	// recorded in upgraded pods' hash entries.
	LatestRevision string
	// Pods are the active pods matching the selector and namespace that list
	// the SidecarSet in kruise.io/sidecarset-injected-list and contain its
	// containers.
	Pods []*corev1.Pod
	// InFlight are the pods the shell patched and has not yet seen updated.
	InFlight map[types.UID]InFlight
	// Now is the current time.
	Now time.Time
	// Whitelist decides the keys the re-applied patchPodMetadata may write.
	Whitelist podmeta.Whitelist
	// Guards are the SidecarSet's rollout guards
	// (appsv1beta1.ParseRolloutGuards); the zero value sets none.
	Guards appsv1beta1.RolloutGuards
	// Progress is the progress clock the last plan of this SidecarSet
	// returned (Plan.Progress); the zero value when there was none.
	Progress ProgressClock
	// Revisions are the specs of the SidecarSet's recorded revisions,
	// defaulted, by their without-image hash: the planner compares the one
	// a pod runs with the current spec (paths.go).
	Revisions map[string]*appsv1beta1.SidecarSetSpec
	// ResizeUnsupported says that the API server does not serve
	// pods/resize (Kubernetes before 1.33).
	ResizeUnsupported bool
	// ResizeRefused are the pods whose resize to the current hash the API
	// server refused, with its message: they are not resized again.
	ResizeRefused map[types.UID]string
	// NotInjected are the active pods the SidecarSet selects that lack its
	// sidecars and would get them from a recreation (created before it, or
	// admitted without it); the planner recreates them when the SidecarSet
	// allows it (recreate.go).
	NotInjected []*corev1.Pod
	// NotInjectedFrom is when the pods of NotInjected may be recreated:
	// once the pod webhooks' scope holding the SidecarSet's generation has
	// reached the API server (ScopeSettle after its write), so that their
	// replacements are not admitted without the sidecars. Zero: now.
	NotInjectedFrom time.Time
	// Evictions are the pods the shell evicted and has not seen replaced.
	Evictions map[types.UID]Eviction
	// Refused are the pods whose last eviction the API server refused.
	Refused map[types.UID]Refusal
	// CollisionCount is the collision count of the SidecarSet's revision
	// names, which the status records.
	CollisionCount int32
	// Detected are the pods the SidecarSet selects that run without its
	// sidecars, as the detector knows them, sorted; DetectorSynced says
	// that it has looked at every pod (until then the status keeps the
	// previous count and Injected condition).
	Detected       []NotInjectedPod
	DetectorSynced bool
	// ScopeDegraded says that the pod webhooks' scope leaves the
	// SidecarSet out, and ScopeWhy why.
	ScopeDegraded bool
	ScopeWhy      string
	// Explain asks for every pod's decision in Plan.Decisions (kubectl
	// sidecarset plan); without it only the blocked pods' and the refused
	// evictions' are there, which is what the controller announces.
	Explain bool
	// Memo is what the previous plans of this SidecarSet read of its pods,
	// which this plan reads again only for the pods that changed, and
	// updates (Memo). Nil: every pod is read.
	Memo *Memo
}

// InFlight is a pod upgrade the shell issued.
type InFlight struct {
	// Hash is the hash the pod was patched to.
	Hash string
	// Since is when the patch was issued.
	Since time.Time
	// Resize is set for a pods/resize patch, which is observed once the
	// pod's generation is larger than Generation, the one it had.
	Resize     bool
	Generation int64
}

// Plan is what the shell must do this round.
type Plan struct {
	// Status is the SidecarSet's whole status for this round, to write as
	// it is (once the pause, if any, is written: Pause).
	Status appsv1beta1.SidecarSetStatus
	// Restricted are the pods injected without what the SidecarSet's
	// authority did not cover (the Restricted condition), sorted.
	Restricted []RestrictedPod
	// Updates are the in-place upgrades to issue now, all concurrently, in
	// upgrade order. Record each as in flight once it succeeds.
	Updates []PodUpdate
	// Resets put the empty image back on hot-upgrade idle twins.
	Resets []PodUpdate
	// Resizes are the pods/resize patches to issue now, all concurrently;
	// record each as in flight (InFlight.Resize) once it succeeds.
	Resizes []PodResize
	// Evictions are the pods to evict now; record each eviction that
	// succeeds (Eviction), and each refusal (Refusal).
	Evictions []PodEviction
	// NotUpgradable are the selected pods that need the upgrade but differ
	// in more than images (for the NotUpgradablePods event), sorted.
	NotUpgradable []types.NamespacedName
	// Upgradable are the SidecarSetUpgradable pod conditions to write, by
	// pod. Those of pods in Updates are to be written once the update
	// succeeded.
	Upgradable []PodCondition
	// Blocked are pods the planner could not plan, with why.
	Blocked []BlockedPod
	// Warnings say which patchPodMetadata annotations the updates do not
	// write, and why (podmeta.Skip), sorted and without duplicates.
	Warnings []string
	// Done are the in-flight entries to forget: the pod shows its new hash,
	// is gone, or the entry expired. Sorted.
	Done []types.UID
	// Expired is the subset of Done given up after InFlightTimeout.
	Expired []types.UID
	// EvictionsDone are the evictions to forget: the pod was replaced, or
	// the record expired after RecreateTimeout. Sorted.
	EvictionsDone []types.UID
	// EvictionsReplaced are the evictions replaced this round whose record
	// stays, by the replacement to note on it (Eviction.ReplacedBy).
	EvictionsReplaced map[types.UID]types.UID
	// Decisions say, per pod, what this round decided and why, in the
	// rollout's order (decisions.go). Without Input.Explain, only the
	// blocked pods' decisions and the pods whose eviction was refused (Pod
	// and Refusal as explained; Action and Detail only if blocked), in the
	// order of Input.Pods sorted, then Input.NotInjected sorted.
	Decisions []Decision
	// RequeueAfter, when positive, is when to plan again even if no event
	// comes: the first in-flight entry then expires, a refused eviction
	// may be tried again (EvictionRetry after the round issues
	// evictions), a resize or a guard's window is due.
	RequeueAfter time.Duration
	// Upgraded are the pods upgraded in place to the current revision whose
	// new sidecars do not all run ready: upgrading, or failed (guard.go).
	// Sorted.
	Upgraded []UpgradedPod
	// Pause asks the shell to set updateStrategy.paused: more upgraded
	// pods fail than the failure budget allows, and pods are left to
	// upgrade. The plan then upgrades nothing. The pause is the round's
	// one write of the SidecarSet: the status is written by the next
	// round, planned from the paused spec.
	Pause bool
	// Progress is the progress clock to pass to the next plan.
	Progress ProgressClock
	// Settled is true when the rollout has nothing to do and waits for
	// nothing: no upgrade, reset, resize or eviction to issue, none in
	// flight, no pod waiting for its turn, and every updated pod running
	// its new sidecars. A pod change can then only move the status counts,
	// and need not be planned at once.
	Settled bool
}

// PodUpdate is one pod patch.
type PodUpdate struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// UID is the pod's UID, the key of the in-flight record.
	UID types.UID
	// ResourceVersion is the version the patch was computed against; the
	// patch carries it, so the API server rejects it if the pod changed.
	ResourceVersion string
	// Patch is a strategic-merge patch: the changed images of containers
	// and native sidecars (spec.containers and spec.initContainers, by
	// name), the changed annotations and metadata.resourceVersion.
	Patch []byte
	// Hash is the SidecarSet hash the pod records once patched.
	Hash string
}

// PodCondition is a pod's SidecarSetUpgradable condition to write.
type PodCondition struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Condition is the whole condition, with every SidecarSet's entry.
	Condition corev1.PodCondition
}

// BlockedPod is a pod the planner could not plan.
type BlockedPod struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Reason says why.
	Reason string
}

// Compute plans one round of a SidecarSet's rollout: each decision in turn
// (planner), in the order the package doc maps them.
func Compute(in Input) (Plan, error) {
	if in.SidecarSet == nil {
		return Plan{}, errors.New("rollout: no SidecarSet")
	}
	if in.Hashes.Hash == "" || in.Hashes.WithoutImage == "" {
		return Plan{}, fmt.Errorf("rollout: SidecarSet %s has no hashes", in.SidecarSet.Name)
	}
	p := newPlanner(in)
	p.classifyPods()
	p.joinNotInjected()
	p.settleRecreations()
	p.guard = p.set.checkGuards(in, p.views)
	p.plan.Upgraded = p.guard.upgraded
	p.summarize()
	if p.set.rolling() && !p.guard.budgetExceeded {
		p.pickBatch()
		p.markUpgradable()
	}
	p.conclude()
	return p.plan, nil
}

// planner builds one round's plan: the plan, and what the decisions tell
// each other on the way.
type planner struct {
	in   Input
	set  *setView
	hash string
	us   *appsv1beta1.SidecarSetUpdateStrategy
	plan Plan

	// active are the in-flight entries still awaited.
	active map[types.UID]InFlight
	// pods are the matched pods, sorted; views what each is; all the
	// views and the pods that lack the sidecars, when the rollout
	// recreates them.
	pods       []*corev1.Pod
	views, all []*podView
	guard      guardRound
	sum        roundSummary
	rec        recreateSummary
	// rollout are the pods the rollout can reach; ordered those waiting,
	// in upgrade order; upgrading the ones this round upgrades.
	rollout, ordered []*podView
	upgrading        map[*podView]bool
	// unreplaced counts the evicted pods not yet replaced; done,
	// unavailable and inconsistent the pods done with the current hash,
	// unavailable, or updated and not consistent.
	unreplaced, done, unavailable, inconsistent int
}

func newPlanner(in Input) *planner {
	set := newSetView(in.SidecarSet, in.Hashes)
	set.whitelist = in.Whitelist
	set.revisions, set.resizeUnsupported, set.resizeRefused, set.now = in.Revisions, in.ResizeUnsupported, in.ResizeRefused, in.Now
	set.minReady = in.Guards.MinReady
	set.memo = in.Memo
	set.policies = resources.CompileSpec(&in.SidecarSet.Spec)
	return &planner{in: in, set: set, hash: in.Hashes.Hash, us: &in.SidecarSet.Spec.UpdateStrategy, upgrading: map[*podView]bool{}}
}

// requeue asks for the next plan after d at the latest (d <= 0: no ask).
func (p *planner) requeue(d time.Duration) {
	p.plan.RequeueAfter = earliest(p.plan.RequeueAfter, d)
}

// classifyPods settles the in-flight entries and classifies every matched
// pod (classify.go), and counts them (status.go).
func (p *planner) classifyPods() {
	p.set.memo.begin(p.set)
	p.pods = p.set.memo.sorted(p.in.Pods)
	var inFlight map[types.UID]*corev1.Pod
	if len(p.in.InFlight) > 0 {
		inFlight = make(map[types.UID]*corev1.Pod, len(p.in.InFlight))
		for _, pod := range p.pods {
			if _, ok := p.in.InFlight[pod.UID]; ok {
				inFlight[pod.UID] = pod
			}
		}
	}
	p.plan.Done, p.plan.Expired, p.active = p.set.settleInFlight(p.in, inFlight)
	p.requeue(nextExpiry(p.in.Now, p.active))
	p.views = make([]*podView, len(p.pods))
	for i, pod := range p.pods {
		e, ok := p.active[pod.UID]
		p.views[i] = p.set.classify(pod, i, e, ok)
	}
	p.set.memo.end()
	p.plan.Status = counts(p.views)
	p.requeue(nextResizeDeadline(p.views, p.in.Now))
	for _, v := range p.views {
		if !v.settledAt.IsZero() {
			p.requeue(v.settledAt.Sub(p.in.Now))
		}
	}
	p.all = p.views
}

// joinNotInjected has the pods that lack the sidecars join the rollout
// when it recreates pods (recreate.go).
func (p *planner) joinNotInjected() {
	if !p.set.recreate {
		return
	}
	p.all = slices.Clone(p.views)
	for _, pod := range sortedPods(p.in.NotInjected) {
		v, ok, why := p.set.classifyNotInjected(pod)
		if !ok {
			p.rec.notRecreatable = append(p.rec.notRecreatable, fmt.Sprintf("%s (lacks the sidecars; %s)", v.key, why))
			continue
		}
		if p.in.Now.Before(p.in.NotInjectedFrom) {
			v.scopeUntil = p.in.NotInjectedFrom
			p.rec.scopeHeld++
		}
		p.all = append(p.all, v)
	}
	if p.rec.scopeHeld > 0 {
		p.requeue(p.in.NotInjectedFrom.Sub(p.in.Now))
	}
}

// settleRecreations settles the evictions recorded, and applies the
// refusals (recreate.go).
func (p *planner) settleRecreations() {
	var expired []types.UID
	p.plan.EvictionsDone, expired, p.plan.EvictionsReplaced, p.unreplaced = settleEvictions(p.in.Evictions, p.all, p.in.Now)
	p.rec.expired = len(expired)
	p.requeue(applyRefusals(p.all, p.in.Refused, p.in.Now))
}

// summarize tells, for every pod, what it is to the rollout: blocked,
// updated, done, in the rollout's reach or held out of it, in flight,
// waiting for its recreation or its resize (the roundSummary the
// conditions explain).
func (p *planner) summarize() {
	p.sum = roundSummary{
		guard:          p.guard,
		notUpdate:      p.us.Type == appsv1beta1.NotUpdateSidecarSetStrategyType,
		paused:         p.us.Paused,
		matched:        len(p.views),
		updated:        int(p.plan.Status.UpdatedPods),
		selectorErr:    p.set.selectorErr,
		expired:        len(p.plan.Expired),
		partition:      p.us.Partition,
		maxUnavailable: p.us.MaxUnavailable,
		recreate:       p.set.recreate,
	}
	p.unavailable = p.unreplaced
	for _, v := range p.all {
		if v.err != nil {
			p.sum.blocked++
			p.plan.Blocked = append(p.plan.Blocked, BlockedPod{Pod: v.key, Reason: v.err.Error()})
			continue
		}
		p.summarizePod(v)
	}
	p.rec.evicted += p.unreplaced
	if p.unreplaced > 0 {
		// A replacement announces itself by a pod event; planning again
		// meanwhile is a safety net (RecreateTimeout).
		p.requeue(ReplacementCheck)
	}
	p.sum.rollout, p.sum.pods = len(p.rollout), len(p.all)+p.unreplaced
}

// summarizePod counts one readable pod.
func (p *planner) summarizePod(v *podView) {
	if v.beyondAuthority != nil && v.selected {
		p.sum.blocked++
		p.plan.Blocked = append(p.plan.Blocked, BlockedPod{Pod: v.key, Reason: v.beyondAuthority.Error()})
	}
	if v.unavailable() {
		p.unavailable++
	}
	if v.updated {
		if v.consistent {
			p.sum.completed++
		} else {
			p.inconsistent++
		}
		if !v.consistent || !v.ready {
			p.sum.updatedUnavailable++
		}
	}
	if v.done(p.hash) {
		p.done++
	}
	switch {
	case v.inRollout(p.hash):
		p.rollout = append(p.rollout, v)
		if v.updated {
			p.sum.rolloutUpdated++
		}
	case v.notUpgradable():
		p.sum.notUpgradable++
		if p.set.recreate {
			p.rec.notRecreatable = append(p.rec.notRecreatable, fmt.Sprintf("%s (%s)", v.key, v.why))
		}
	case !v.updated && !v.selected:
		p.sum.notSelected++
	}
	if v.selected && !v.updated && (v.inFlight || v.kind == kindResizing) {
		p.sum.inFlight++
	}
	if v.selected && !v.updated && v.kind == kindRecreate {
		if v.evicting {
			p.rec.evicted++
		} else {
			p.rec.pending++
		}
	}
	if v.kind == kindResizePending && v.selected && !v.updated && !v.notInjected {
		p.plan.Status.ResizePendingPods++
	}
}

// pickBatch chooses this round's upgrades: the hot-upgrade twins to reset
// (hotupgrade.go), the pods waiting in upgrade order (order.go, scatter.go)
// that partition and maxUnavailable let through (budget.go), each as a
// patch, a resize or an eviction (update.go, resize.go, recreate.go).
func (p *planner) pickBatch() {
	resetting := map[*podView]bool{}
	for _, v := range p.views {
		if u, ok := p.set.buildReset(v, p.in.Now); ok {
			p.plan.Resets = append(p.plan.Resets, u)
			resetting[v] = true
		}
	}
	var waiting []*podView
	for _, v := range p.rollout {
		if v.waiting() && !v.refusedUntil.IsZero() {
			// Its eviction was just refused: it waits for its budget,
			// tried again once EvictionRetry has passed.
			p.rec.refused++
			p.rec.refusal = v.refusal
		}
		switch {
		case v.waiting() && !resetting[v] && v.refusedUntil.IsZero() && v.scopeUntil.IsZero():
			waiting = append(waiting, v)
		case v.finishing && !v.done(p.hash):
			p.sum.finishing++
		}
	}
	p.sum.waiting = len(waiting)
	p.sum.budget = newBudget(p.us.Partition, p.us.MaxUnavailable, p.sum.pods, p.done, p.unavailable)
	p.ordered = orderWaiting(waiting, p.rollout, p.us, p.hash)
	p.sum.batch = p.sum.budget.pick(p.ordered, func(v *podView) bool {
		return p.set.act(&p.plan, v, p.in.Now, p.in.LatestRevision, p.hash)
	})
	markSiblings(p.plan.Evictions, p.all, p.in.Now)
	retries := 0
	for _, v := range p.sum.batch.chosen {
		p.upgrading[v] = true
		if v.kind == kindRecreate && v.refusal != "" {
			retries++
			p.rec.refused++
			p.rec.refusal = v.refusal
		}
	}
	p.sum.blocked += p.sum.batch.blocked
	// An eviction tried again after its budget refused it is no progress
	// yet: the Progressing reason stays the wait.
	p.sum.updates = len(p.plan.Updates) + len(p.plan.Resizes) + len(p.plan.Evictions) - retries
	p.sum.resets = len(p.plan.Resets)
	p.rec.evicting = len(p.plan.Evictions)
	if len(p.plan.Evictions) > 0 {
		// Whether they go through is known only once issued: a refused
		// one is tried again EvictionRetry later.
		p.requeue(EvictionRetry)
	}
}

// markUpgradable lists the pods that cannot be upgraded in place, and the
// SidecarSetUpgradable pod conditions that change (upgradable.go).
func (p *planner) markUpgradable() {
	for _, v := range p.views {
		if v.notUpgradable() {
			p.plan.NotUpgradable = append(p.plan.NotUpgradable, v.key)
		}
		if value, ok := desiredUpgradable(v, p.set.name, p.upgrading[v] && v.kind != kindRecreate); ok {
			if cond, changed := upgradableCondition(v.pod, p.set.name, value, p.in.Now); changed {
				p.plan.Upgradable = append(p.plan.Upgradable, PodCondition{Pod: v.key, Condition: cond})
			}
		}
	}
}

// conclude explains the round: the per-pod decisions (decisions.go),
// whether the rollout is settled, the whole status (status.go), the pause
// and the progress clock (guard.go), and when to plan again.
func (p *planner) conclude() {
	in, sum, rec := p.in, &p.sum, &p.rec
	p.plan.Status.RecreatePendingPods = int32(rec.pending)
	sum.resizePending, sum.pdbRefused = int(p.plan.Status.ResizePendingPods), rec.refused
	p.plan.Decisions = decisions(p.all, p.ordered, p.upgrading, p.set, sum.budget, p.set.rolling(), in.Explain)
	slices.Sort(p.plan.Warnings)
	p.plan.Warnings = slices.Compact(p.plan.Warnings)
	p.plan.Settled = len(p.active) == 0 && len(p.plan.Updates) == 0 && len(p.plan.Resets) == 0 && len(p.plan.Resizes) == 0 &&
		len(p.plan.Evictions) == 0 && sum.waiting == 0 && sum.finishing == 0 && p.inconsistent == 0 && sum.inFlight == 0 &&
		rec.evicted == 0 && rec.refused == 0
	slices.SortStableFunc(p.plan.Blocked, func(a, b BlockedPod) int { return compareKeys(a.Pod, b.Pod) })

	generation := in.SidecarSet.Generation
	p.plan.Status.Conditions = setConditions(in.SidecarSet.Status.Conditions, generation, *sum, in.Now)
	setCondition(&p.plan.Status.Conditions, appsv1beta1.SidecarSetConditionResized, resizeCondition(p.views, generation, in.Now))
	var recreated *metav1.Condition
	if p.set.recreate {
		recreated = recreateCondition(*rec, *sum, generation, in.Now)
	}
	setCondition(&p.plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated, recreated)
	p.plan.Restricted = restrictedPods(p.set.name, p.pods)
	reportObserved(&p.plan.Status, in, p.plan.Restricted)

	p.plan.Pause = p.guard.budgetExceeded && !p.us.Paused && sum.rollout > sum.rolloutUpdated
	p.plan.Progress = p.guard.clock
	p.plan.Progress.Complete = p.plan.Progress.Complete || sum.completed == sum.matched
	reason := appsv1beta1.ReasonRolloutComplete
	if c := meta.FindStatusCondition(p.plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); c != nil {
		reason = c.Reason
	}
	p.requeue(wakeAfter(*sum, reason, in.Now))
}

// act builds what the round issues for one chosen pod: the in-place patch,
// a resize or an eviction. It reports whether it could.
func (s *setView) act(plan *Plan, v *podView, now time.Time, latestRevision, hash string) bool {
	switch v.kind {
	case kindResize:
		plan.Resizes = append(plan.Resizes, buildResize(v, hash))
		return true
	case kindRecreate:
		plan.Evictions = append(plan.Evictions, buildEviction(v))
		return true
	}
	u, skipped, err := s.buildUpdate(v, now, latestRevision)
	if err != nil {
		plan.Blocked = append(plan.Blocked, BlockedPod{Pod: v.key, Reason: err.Error()})
		return false
	}
	for _, skip := range skipped {
		plan.Warnings = append(plan.Warnings, skip.Warning(s.name))
	}
	plan.Updates = append(plan.Updates, u)
	return true
}

// sortedPods sorts pods by namespace and name.
func sortedPods(in []*corev1.Pod) []*corev1.Pod {
	pods := slices.Clone(in)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return pods
}

// compareKeys orders pods by namespace, then name.
func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// earliest returns the smaller positive duration (0 when neither is).
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}
