package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The rollout guards (appsv1beta1.ParseRolloutGuards), both opt-in:
//
//   - The failure budget. A pod counts as failed when it was upgraded in
//     place to the current revision (it records the current hash and an
//     in-place update state) and one of the sidecars the upgrade changed
//     waits in CrashLoopBackOff (it restarts repeatedly), or does not run
//     ready (its new image is not running, or it reports not ready) once
//     the failure window has passed since the upgrade. The count is taken
//     from the pods as they are now: a pod that recovers stops counting,
//     and a sidecar that turns not ready after the window (a readiness
//     regression) counts. When more pods fail than the budget allows, the
//     round upgrades nothing, the Progressing condition says
//     FailureBudgetExceeded and names the pods and the revision, and, if
//     the rollout is not paused and pods are left for it to upgrade, the
//     plan asks the shell to set updateStrategy.paused. A user who resumes
//     while as many pods still fail is paused again: undo, fix the sidecar
//     or raise the budget.
//   - The progress deadline. The rollout progresses when its generation is
//     first seen or a pod becomes updated and ready (its hash entry was
//     written, its new sidecars started, or it turned Ready, whichever is
//     last). When the rollout has had no progress for longer than the
//     deadline while it should move, its Progressing condition turns False
//     with reason ProgressDeadlineExceeded. It only reports; the next
//     progress turns it back. As a Deployment's, the deadline does not
//     run while the rollout is paused or its type is NotUpdate, nor once
//     the rollout of the current generation has completed; nor while it is
//     held by its configuration (partition, updateStrategy.selector,
//     maxUnavailable 0) with every upgraded pod available.

// ProgressClock is the shell's memory of a rollout's progress, for the
// progress deadline. The shell keeps the one the last plan returned
// (Plan.Progress) and passes it back (Input.Progress); the planner starts
// a new one when the generation changes.
type ProgressClock struct {
	// Generation is the SidecarSet generation it times.
	Generation int64
	// Since is when the rollout last progressed.
	Since time.Time
	// Complete is set once every matched pod ran the latest sidecars in
	// this generation: a completed rollout never exceeds its deadline.
	Complete bool
}

// UpgradedPod is a pod upgraded in place to the current revision whose new
// sidecars do not all run ready: still upgrading, or failed.
type UpgradedPod struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Since is when it was upgraded (its hash entry's timestamp).
	Since time.Time
	// Failed is set when the pod counts against the failure budget.
	Failed bool
	// Reason says which sidecar is not ready, and why.
	Reason string
}

// guardRound is what the guards found this round.
type guardRound struct {
	guards appsv1beta1.RolloutGuards
	// upgraded are the pods upgrading or failed, sorted; failed counts the
	// failed ones.
	upgraded []UpgradedPod
	failed   int
	// budgetExceeded: more pods failed than the budget allows.
	budgetExceeded bool
	// set and revision name the SidecarSet and its current revision (for
	// messages).
	set, revision string
	// clock is the progress clock, moved to the pods' last progress.
	clock ProgressClock
}

// checkGuards finds the upgraded pods that are not running ready and moves
// the progress clock.
func (s *setView) checkGuards(in Input, views []*podView) guardRound {
	g := guardRound{guards: in.Guards, set: s.name, revision: in.LatestRevision}
	g.guards.FailureWindow = in.Guards.Window()
	for _, v := range views {
		if u, ok := s.upgradedPod(v, in.Now, g.guards.FailureWindow); ok {
			g.upgraded = append(g.upgraded, u)
			if u.Failed {
				g.failed++
			}
		}
	}
	slices.SortFunc(g.upgraded, func(a, b UpgradedPod) int { return compareKeys(a.Pod, b.Pod) })
	notUpdate := s.obj.Spec.UpdateStrategy.Type == appsv1beta1.NotUpdateSidecarSetStrategyType
	g.budgetExceeded = !notUpdate && in.Guards.FailureBudget != nil && g.failed > int(*in.Guards.FailureBudget)

	g.clock = in.Progress
	if g.clock.Generation != s.obj.Generation || g.clock.Since.IsZero() {
		g.clock = seedClock(s.obj.Status.Conditions, s.obj.Generation, in.Now, in.Guards.ProgressDeadline)
	}
	for _, v := range views {
		if t := s.progressTime(v); t.After(g.clock.Since) {
			g.clock.Since = t
		}
	}
	return g
}

// upgradedPod returns the state of a pod upgraded in place to the current
// revision whose changed sidecars do not all run ready; ok is false for
// any other pod.
func (s *setView) upgradedPod(v *podView, now time.Time, window time.Duration) (UpgradedPod, bool) {
	state := v.inPlace(s.name)
	if v.err != nil || !v.updated || state == nil || v.upgradeSettled {
		return UpgradedPod{}, false
	}
	u := UpgradedPod{Pod: v.key, Since: v.state.Hashes[s.name].UpdateTimestamp.Time}
	var notReady, settling []string
	for _, name := range s.checkedSidecars(v) {
		if _, changed := state.LastContainerStatuses[name]; !changed {
			continue
		}
		st := containerStatus(v.pod, name)
		// A crash counts once the status reports the new image's instance:
		// until then it is the old image's (a rollback from a crashing
		// image that the kubelet has not applied yet).
		complete := containerComplete(v.pod, name, state)
		if t := crashedAfterUpdate(st, state.UpdateTimestamp.Time); t != nil && complete {
			u.Failed = true
			u.Reason = fmt.Sprintf("sidecar %s exited with code %d (%s) since the upgrade", name, t.ExitCode, t.Reason)
			return u, true
		}
		if complete && st != nil && st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" {
			u.Failed = true
			u.Reason = fmt.Sprintf("sidecar %s restarts repeatedly (CrashLoopBackOff)", name)
			return u, true
		}
		if complete && st != nil && st.Ready {
			if st.State.Running == nil || !st.State.Running.StartedAt.Add(s.minReady).After(now) {
				continue
			}
			settling = append(settling, name)
			continue
		}
		why := name
		if st != nil && st.State.Waiting != nil && st.State.Waiting.Reason != "" {
			why += " (" + st.State.Waiting.Reason + ")"
		}
		notReady = append(notReady, why)
	}
	if len(notReady) == 0 {
		if len(settling) == 0 {
			v.settleUpgrade()
			return UpgradedPod{}, false
		}
		// Ready, and not yet for the min-ready time: upgrading, never failed.
		u.Reason = fmt.Sprintf("%s %s ready for less than %v", sidecarNoun(settling), strings.Join(settling, ", "), s.minReady)
		return u, true
	}
	noun := sidecarNoun(notReady)
	if now.Sub(u.Since) >= window {
		u.Failed = true
		u.Reason = fmt.Sprintf("%s %s not ready within %v of the upgrade", noun, strings.Join(notReady, ", "), window)
	} else {
		u.Reason = fmt.Sprintf("%s %s not ready yet", noun, strings.Join(notReady, ", "))
	}
	return u, true
}

func sidecarNoun(names []string) string {
	if len(names) > 1 {
		return "sidecars"
	}
	return "sidecar"
}

// checkedSidecars are the containers whose readiness says whether an
// upgrade worked: the cold sidecars and, of each hot-upgrade sidecar, the
// working twin (the idle one runs the empty image).
func (s *setView) checkedSidecars(v *podView) []string {
	if len(s.hot) == 0 {
		return s.names
	}
	names := make([]string, 0, len(s.cold)+len(s.hot))
	for _, c := range s.cold {
		names = append(names, c.Name)
	}
	for _, h := range s.hot {
		working, _ := s.twins(v.state, h)
		names = append(names, working)
	}
	return names
}

// progressTime is when a pod that is updated, complete and ready became so:
// the latest of its hash entry's timestamp, its Ready condition's
// transition and the start of its running sidecars. Other pods have not
// progressed (zero time).
func (s *setView) progressTime(v *podView) time.Time {
	if v.err != nil || !v.updated || !v.consistent || !v.ready {
		return time.Time{}
	}
	t := v.state.Hashes[s.name].UpdateTimestamp.Time
	if c := readyCondition(v.pod); c != nil && c.LastTransitionTime.After(t) {
		t = c.LastTransitionTime.Time
	}
	for _, name := range s.names {
		if st := containerStatus(v.pod, name); st != nil && st.State.Running != nil && st.State.Running.StartedAt.After(t) {
			t = st.State.Running.StartedAt.Time
		}
	}
	return t
}

// seedClock starts the progress clock of a generation the shell has not
// timed yet (a new generation, or a restarted manager), from the conditions
// the status records for that generation: a rollout that exceeded its
// deadline stays exceeded until a pod progresses; one that progressed
// (Progressing True) is timed from when it started to; one that completed
// stays complete. Otherwise the clock starts now.
func seedClock(prev []metav1.Condition, generation int64, now time.Time, deadline time.Duration) ProgressClock {
	clock := ProgressClock{Generation: generation, Since: now}
	p := meta.FindStatusCondition(prev, appsv1beta1.SidecarSetConditionProgressing)
	u := meta.FindStatusCondition(prev, appsv1beta1.SidecarSetConditionUpdated)
	switch {
	case p != nil && p.ObservedGeneration == generation && p.Reason == appsv1beta1.ReasonProgressDeadlineExceeded:
		clock.Since = p.LastTransitionTime.Add(-deadline)
	case p != nil && p.ObservedGeneration == generation && p.Status == metav1.ConditionTrue:
		clock.Since = p.LastTransitionTime.Time
	case p == nil && u != nil && u.ObservedGeneration == generation && u.Status == metav1.ConditionTrue:
		clock.Complete = true
	}
	return clock
}

// deadlineRuns reports whether the progress deadline runs in a round whose
// Progressing reason (before the deadline) is reason: not for a completed
// rollout, nor one held by its configuration with every upgraded pod
// available.
func deadlineRuns(sum roundSummary, reason string) bool {
	if sum.guard.guards.ProgressDeadline <= 0 || sum.guard.clock.Complete {
		return false
	}
	switch reason {
	case appsv1beta1.ReasonNotUpdate, appsv1beta1.ReasonPaused, appsv1beta1.ReasonFailureBudgetExceeded:
		return false
	case appsv1beta1.ReasonPartitionHeld, appsv1beta1.ReasonNotSelected, appsv1beta1.ReasonMaxUnavailableIsZero,
		appsv1beta1.ReasonRolloutComplete:
		return sum.updatedUnavailable > 0
	}
	return true
}

// deadlineExceeded reports whether a running deadline has passed.
func deadlineExceeded(sum roundSummary, now time.Time) bool {
	return now.Sub(sum.guard.clock.Since) >= sum.guard.guards.ProgressDeadline
}

// deadlineMessage prefixes the Progressing message of a rollout past its
// deadline with what the deadline says.
func deadlineMessage(sum roundSummary, message string) string {
	return fmt.Sprintf("no pod was newly updated and ready since %s, longer than the progress deadline of %v; %s",
		sum.guard.clock.Since.UTC().Format(time.RFC3339), sum.guard.guards.ProgressDeadline, message)
}

// maxNamedPods is how many failed pods a message names.
const maxNamedPods = 5

// failureMessage is the Progressing message of a rollout whose failure
// budget is exceeded: the revision, the failed pods (the first few, by
// reason) and what to do.
func failureMessage(g guardRound) string {
	var failed []PodReason
	for _, u := range g.upgraded {
		if u.Failed {
			failed = append(failed, PodReason{Pod: u.Pod.String(), Reason: u.Reason})
		}
	}
	return fmt.Sprintf("%s upgraded to revision %s %s, more than the failure budget of %d: %s; "+
		"the rollout is paused (updateStrategy.paused): roll back with kubectl sidecarset rollout undo %s, "+
		"or fix the sidecar, then resume", count(g.failed, "pod"), g.revision, failVerb(g.failed), *g.guards.FailureBudget,
		GroupPods(failed, maxNamedPods), g.set)
}

// PodReason is a pod, named namespace/name, and why it is named.
type PodReason struct {
	Pod, Reason string
}

// GroupPods words pods by reason, the reasons in the order they first
// appear: "reason on ns/a, ns/b; other reason on ns/c", naming at most
// limit pods and saying how many more there are.
func GroupPods(pods []PodReason, limit int) string {
	var reasons []string
	byReason := map[string][]string{}
	for _, p := range pods[:min(limit, len(pods))] {
		if _, seen := byReason[p.Reason]; !seen {
			reasons = append(reasons, p.Reason)
		}
		byReason[p.Reason] = append(byReason[p.Reason], p.Pod)
	}
	groups := make([]string, 0, len(reasons))
	for _, r := range reasons {
		groups = append(groups, r+" on "+strings.Join(byReason[r], ", "))
	}
	out := strings.Join(groups, "; ")
	if more := len(pods) - limit; more > 0 {
		out += fmt.Sprintf(", and %d more", more)
	}
	return out
}

func failVerb(n int) string {
	if n == 1 {
		return "fails"
	}
	return "fail"
}

// wakeAfter is when the guards want the rollout planned again although no
// event may come: the first upgrading pod's failure window ends, or the
// running progress deadline passes. 0 means never.
func wakeAfter(sum roundSummary, reason string, now time.Time) time.Duration {
	var next time.Duration
	if sum.guard.guards.FailureBudget != nil {
		for _, u := range sum.guard.upgraded {
			if !u.Failed {
				next = earliest(next, u.Since.Add(sum.guard.guards.FailureWindow).Sub(now))
			}
		}
	}
	if deadlineRuns(sum, reason) {
		next = earliest(next, sum.guard.clock.Since.Add(sum.guard.guards.ProgressDeadline).Sub(now))
	}
	return next
}
