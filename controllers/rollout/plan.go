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
	// rollout's order (decisions.go).
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

// Compute plans one round of a SidecarSet's rollout.
func Compute(in Input) (Plan, error) {
	if in.SidecarSet == nil {
		return Plan{}, errors.New("rollout: no SidecarSet")
	}
	if in.Hashes.Hash == "" || in.Hashes.WithoutImage == "" {
		return Plan{}, fmt.Errorf("rollout: SidecarSet %s has no hashes", in.SidecarSet.Name)
	}
	set := newSetView(in.SidecarSet, in.Hashes)
	set.whitelist = in.Whitelist
	set.revisions, set.resizeUnsupported, set.resizeRefused, set.now = in.Revisions, in.ResizeUnsupported, in.ResizeRefused, in.Now
	set.minReady = in.Guards.MinReady
	set.policies = resources.CompileSpec(&in.SidecarSet.Spec)
	hash := in.Hashes.Hash
	us := &in.SidecarSet.Spec.UpdateStrategy

	pods := sortedPods(in.Pods)
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	var plan Plan
	var active map[types.UID]InFlight
	plan.Done, plan.Expired, active = set.settleInFlight(in, byUID)
	plan.RequeueAfter = nextExpiry(in.Now, active)

	views := make([]*podView, len(pods))
	for i, p := range pods {
		e, ok := active[p.UID]
		views[i] = set.classify(p, e, ok)
	}
	plan.Status = counts(views)
	plan.RequeueAfter = earliest(plan.RequeueAfter, nextResizeDeadline(views, in.Now))
	for _, v := range views {
		if !v.settledAt.IsZero() {
			plan.RequeueAfter = earliest(plan.RequeueAfter, v.settledAt.Sub(in.Now))
		}
	}

	// The pods that lack the sidecars join the rollout when it recreates.
	var rec recreateSummary
	all := views
	if set.recreate {
		all = slices.Clone(views)
		for _, p := range sortedPods(in.NotInjected) {
			v, ok, why := set.classifyNotInjected(p)
			if !ok {
				rec.notRecreatable = append(rec.notRecreatable, fmt.Sprintf("%s (lacks the sidecars; %s)", v.key, why))
				continue
			}
			if in.Now.Before(in.NotInjectedFrom) {
				v.scopeUntil = in.NotInjectedFrom
				rec.scopeHeld++
			}
			all = append(all, v)
		}
		if rec.scopeHeld > 0 {
			plan.RequeueAfter = earliest(plan.RequeueAfter, in.NotInjectedFrom.Sub(in.Now))
		}
	}
	var evictionsExpired []types.UID
	var unreplaced int
	plan.EvictionsDone, evictionsExpired, plan.EvictionsReplaced, unreplaced = settleEvictions(in.Evictions, all, in.Now)
	rec.expired = len(evictionsExpired)
	plan.RequeueAfter = earliest(plan.RequeueAfter, applyRefusals(all, in.Refused, in.Now))
	guard := set.checkGuards(in, views)
	plan.Upgraded = guard.upgraded

	sum := roundSummary{
		guard:          guard,
		notUpdate:      us.Type == appsv1beta1.NotUpdateSidecarSetStrategyType,
		paused:         us.Paused,
		matched:        len(views),
		updated:        int(plan.Status.UpdatedPods),
		selectorErr:    set.selectorErr,
		expired:        len(plan.Expired),
		partition:      us.Partition,
		maxUnavailable: us.MaxUnavailable,
	}
	var rollout []*podView
	done, unavailable, inconsistent := 0, unreplaced, 0
	for _, v := range all {
		if v.err != nil {
			sum.blocked++
			plan.Blocked = append(plan.Blocked, BlockedPod{Pod: v.key, Reason: v.err.Error()})
			continue
		}
		if v.beyondAuthority != nil && v.selected {
			sum.blocked++
			plan.Blocked = append(plan.Blocked, BlockedPod{Pod: v.key, Reason: v.beyondAuthority.Error()})
		}
		if v.unavailable() {
			unavailable++
		}
		if v.updated {
			if v.consistent {
				sum.completed++
			} else {
				inconsistent++
			}
			if !v.consistent || !v.ready {
				sum.updatedUnavailable++
			}
		}
		if v.done(hash) {
			done++
		}
		switch {
		case v.inRollout(hash):
			rollout = append(rollout, v)
			if v.updated {
				sum.rolloutUpdated++
			}
		case v.notUpgradable():
			sum.notUpgradable++
			if set.recreate {
				rec.notRecreatable = append(rec.notRecreatable, fmt.Sprintf("%s (%s)", v.key, v.why))
			}
		case !v.updated && !v.selected:
			sum.notSelected++
		}
		if v.selected && !v.updated && (v.inFlight || v.kind == kindResizing) {
			sum.inFlight++
		}
		if v.selected && !v.updated && v.kind == kindRecreate {
			if v.evicting {
				rec.evicted++
			} else {
				rec.pending++
			}
		}
		if v.kind == kindResizePending && v.selected && !v.updated && !v.notInjected {
			plan.Status.ResizePendingPods++
		}
	}
	rec.evicted += unreplaced
	if unreplaced > 0 {
		// A replacement announces itself by a pod event; planning again
		// meanwhile is a safety net (RecreateTimeout).
		plan.RequeueAfter = earliest(plan.RequeueAfter, ReplacementCheck)
	}
	sum.rollout, sum.pods = len(rollout), len(all)+unreplaced
	sum.recreate = set.recreate

	upgrading := map[*podView]bool{}
	var ordered []*podView
	if set.rolling() && !guard.budgetExceeded {
		resetting := map[*podView]bool{}
		for _, v := range views {
			if u, ok := set.buildReset(v, in.Now); ok {
				plan.Resets = append(plan.Resets, u)
				resetting[v] = true
			}
		}
		var waiting []*podView
		for _, v := range rollout {
			if v.waiting() && !v.refusedUntil.IsZero() {
				// Its eviction was just refused: it waits for its budget,
				// tried again once EvictionRetry has passed.
				rec.refused++
				rec.refusal = v.refusal
			}
			switch {
			case v.waiting() && !resetting[v] && v.refusedUntil.IsZero() && v.scopeUntil.IsZero():
				waiting = append(waiting, v)
			case v.finishing && !v.done(hash):
				sum.finishing++
			}
		}
		sum.waiting = len(waiting)
		sum.budget = newBudget(us.Partition, us.MaxUnavailable, sum.pods, done, unavailable)
		ordered = orderWaiting(waiting, rollout, us, hash)
		sum.batch = sum.budget.pick(ordered, func(v *podView) bool {
			return set.act(&plan, v, in.Now, in.LatestRevision, hash)
		})
		markSiblings(plan.Evictions, all, in.Now)
		retries := 0
		for _, v := range sum.batch.chosen {
			upgrading[v] = true
			if v.kind == kindRecreate && v.refusal != "" {
				retries++
				rec.refused++
				rec.refusal = v.refusal
			}
		}
		sum.blocked += sum.batch.blocked
		// An eviction tried again after its budget refused it is no
		// progress yet: the Progressing reason stays the wait.
		sum.updates = len(plan.Updates) + len(plan.Resizes) + len(plan.Evictions) - retries
		sum.resets = len(plan.Resets)
		rec.evicting = len(plan.Evictions)
		if len(plan.Evictions) > 0 {
			// Whether they go through is known only once issued: a
			// refused one is tried again EvictionRetry later.
			plan.RequeueAfter = earliest(plan.RequeueAfter, EvictionRetry)
		}

		for _, v := range views {
			if v.notUpgradable() {
				plan.NotUpgradable = append(plan.NotUpgradable, v.key)
			}
			if value, ok := desiredUpgradable(v, set.name, upgrading[v] && v.kind != kindRecreate); ok {
				if cond, changed := upgradableCondition(v.pod, set.name, value, in.Now); changed {
					plan.Upgradable = append(plan.Upgradable, PodCondition{Pod: v.key, Condition: cond})
				}
			}
		}
	}
	plan.Status.RecreatePendingPods = int32(rec.pending)
	sum.resizePending, sum.pdbRefused = int(plan.Status.ResizePendingPods), rec.refused
	plan.Decisions = decisions(all, ordered, upgrading, set, sum.budget, set.rolling())
	slices.Sort(plan.Warnings)
	plan.Warnings = slices.Compact(plan.Warnings)
	plan.Settled = len(active) == 0 && len(plan.Updates) == 0 && len(plan.Resets) == 0 && len(plan.Resizes) == 0 &&
		len(plan.Evictions) == 0 && sum.waiting == 0 && sum.finishing == 0 && inconsistent == 0 && sum.inFlight == 0 &&
		rec.evicted == 0 && rec.refused == 0
	slices.SortStableFunc(plan.Blocked, func(a, b BlockedPod) int { return compareKeys(a.Pod, b.Pod) })
	plan.Status.Conditions = setConditions(in.SidecarSet.Status.Conditions, in.SidecarSet.Generation, sum, in.Now)
	setCondition(&plan.Status.Conditions, appsv1beta1.SidecarSetConditionResized, resizeCondition(views, in.SidecarSet.Generation, in.Now))
	var recreated *metav1.Condition
	if set.recreate {
		recreated = recreateCondition(rec, sum, in.SidecarSet.Generation, in.Now)
	}
	setCondition(&plan.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated, recreated)
	plan.Restricted = restrictedPods(set.name, pods)
	reportObserved(&plan.Status, in, plan.Restricted)

	plan.Pause = guard.budgetExceeded && !us.Paused && sum.rollout > sum.rolloutUpdated
	plan.Progress = guard.clock
	plan.Progress.Complete = plan.Progress.Complete || sum.completed == sum.matched
	reason := appsv1beta1.ReasonRolloutComplete
	if c := meta.FindStatusCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); c != nil {
		reason = c.Reason
	}
	plan.RequeueAfter = earliest(plan.RequeueAfter, wakeAfter(sum, reason, in.Now))
	return plan, nil
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
