package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ProgressOnly reports whether next differs from stored only in what a
// rollout's progress moves: the pod counts (counts) and the conditions'
// messages that tell them. The shell may write such a status later than a
// change of anything else.
func ProgressOnly(stored, next *appsv1beta1.SidecarSetStatus) bool {
	withoutProgress := func(st *appsv1beta1.SidecarSetStatus) *appsv1beta1.SidecarSetStatus {
		st = st.DeepCopy()
		st.MatchedPods, st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods = 0, 0, 0, 0
		st.NotInjectedPods, st.ResizePendingPods, st.RecreatePendingPods = 0, 0, 0
		for i := range st.Conditions {
			st.Conditions[i].Message = ""
		}
		return st
	}
	return equality.Semantic.DeepEqual(withoutProgress(stored), withoutProgress(next))
}

// counts computes the status counts from the pods as observed (before this
// round's patches):
//
//   - matchedPods: every pod;
//   - updatedPods: pods recording the current hash;
//   - readyPods: pods consistent and ready (podView.ready: running, Ready,
//     not terminating, every hot-upgrade idle twin on the empty image);
//   - updatedReadyPods: pods both updated and counted in readyPods.
func counts(views []*podView) appsv1beta1.SidecarSetStatus {
	var st appsv1beta1.SidecarSetStatus
	for _, v := range views {
		st.MatchedPods++
		if v.err != nil {
			continue
		}
		ok := v.consistent && v.ready
		if v.updated {
			st.UpdatedPods++
		}
		if ok {
			st.ReadyPods++
		}
		if ok && v.updated {
			st.UpdatedReadyPods++
		}
	}
	return st
}

// roundSummary is what the conditions explain about one round.
type roundSummary struct {
	notUpdate, paused bool
	// matched and updated are the status counts; pods counts the pods
	// the rollout covers, the selected pods that lack the sidecars and
	// are to be recreated included (the progress messages count them).
	matched, updated, pods int
	// rollout is how many pods the rollout can reach (podView.inRollout),
	// rolloutUpdated how many of them are observed updated.
	rollout, rolloutUpdated int
	// completed counts the pods updated whose in-place update is complete;
	// updatedUnavailable the updated pods that are not (or not ready).
	completed, updatedUnavailable int
	// Pods outside the rollout that need the upgrade.
	notUpgradable, notSelected int
	selectorErr                error
	// Pods of the rollout not upgraded this round, and why.
	inFlight, finishing, waiting int
	// recreate: the SidecarSet recreates the pods it cannot upgrade in
	// place (the not upgradable ones are then not recreatable).
	recreate bool
	// resizePending counts the pods whose resize waits on the kubelet
	// (deferred, infeasible, stuck); pdbRefused those whose eviction a
	// PodDisruptionBudget refused, waiting to be tried again.
	resizePending, pdbRefused int
	// This round's patches.
	updates, resets int
	// blocked counts pods with unreadable annotations or an unbuildable
	// patch; expired the in-flight entries given up this round.
	blocked, expired int
	budget           budget
	batch            batch
	partition        *intstr.IntOrString
	maxUnavailable   *intstr.IntOrString
	// guard is what the rollout guards found.
	guard guardRound
}

// setConditions returns prev with the Updated and Progressing conditions
// set (meta.SetStatusCondition: the transition time moves only when the
// status changes). Once every matched pod runs the latest sidecars and
// nothing moves (Updated True, Progressing False), Progressing is removed:
// the settled status is one condition, so that kubectl get -o yaml, which
// prints status fields alphabetically, shows the counts the user manual
// reads (matchedPods, observedGeneration, readyPods, updatedPods) within
// the first 12 lines of the status, as OpenKruise's does. Progressing
// comes back, with a new transition time, when the next rollout starts.
func setConditions(prev []metav1.Condition, generation int64, sum roundSummary, now time.Time) []metav1.Condition {
	conds := make([]metav1.Condition, len(prev))
	for i := range prev {
		prev[i].DeepCopyInto(&conds[i])
	}
	ts := metav1.NewTime(now.Truncate(time.Second))
	updated := metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionUpdated, ObservedGeneration: generation, LastTransitionTime: ts,
	}
	progressing := progressingCondition(sum, now)
	progressing.Type = appsv1beta1.SidecarSetConditionProgressing
	progressing.ObservedGeneration = generation
	progressing.LastTransitionTime = ts
	if sum.completed == sum.matched {
		updated.Status = metav1.ConditionTrue
		updated.Reason = appsv1beta1.ReasonRolloutComplete
		updated.Message = allRun(sum.matched, "matched pod")
	} else {
		updated.Status = metav1.ConditionFalse
		updated.Reason = progressing.Reason
		updated.Message = fmt.Sprintf("%d of %d matched pods run the latest sidecars", sum.completed, sum.matched)
	}
	meta.SetStatusCondition(&conds, updated)
	if updated.Status == metav1.ConditionTrue && progressing.Status == metav1.ConditionFalse {
		meta.RemoveStatusCondition(&conds, appsv1beta1.SidecarSetConditionProgressing)
	} else {
		meta.SetStatusCondition(&conds, progressing)
	}
	return conds
}

// progressingCondition chooses the Progressing status, reason and message.
// Progressing is True while the rollout moves (pods being upgraded, or
// waiting for upgraded pods to become available), False when it is held by
// configuration, stalled on pods it cannot change, stopped by a rollout
// guard, or complete. The message starts with the reason's own
// explanation, then adds what else holds pods back.
func progressingCondition(sum roundSummary, now time.Time) metav1.Condition {
	var c metav1.Condition
	switch {
	case sum.notUpdate:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonNotUpdate
		c.Message = fmt.Sprintf("updateStrategy.type is NotUpdate: existing pods keep their sidecars; %d of %d pods are updated",
			sum.updated, sum.pods)
		return c
	case sum.guard.budgetExceeded:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonFailureBudgetExceeded
		c.Message = failureMessage(sum.guard)
		return c
	case sum.paused:
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonPaused
		c.Message = fmt.Sprintf("updateStrategy.paused is true: %d of %d pods wait for their upgrade",
			sum.rollout-sum.rolloutUpdated, sum.pods)
		return c
	}
	c.Status, c.Reason = progressingReason(sum)
	var main string
	var notes []string
	for _, n := range progressNotes(sum) {
		if n.reason == c.Reason && main == "" {
			main = n.text
		} else {
			notes = append(notes, n.text)
		}
	}
	if main == "" {
		main = allRun(sum.rollout, "pod that can be upgraded in place")
	}
	c.Message = strings.Join(append([]string{main}, notes...), "; ")
	if deadlineRuns(sum, c.Reason) && deadlineExceeded(sum, now) {
		c.Status, c.Reason = metav1.ConditionFalse, appsv1beta1.ReasonProgressDeadlineExceeded
		c.Message = deadlineMessage(sum, c.Message)
	}
	return c
}

// note is one sentence of the Progressing message; reason is the reason it
// explains, if any.
type note struct {
	reason, text string
}

// progressNotes lists what moves and what holds pods back this round.
func progressNotes(sum roundSummary) []note {
	b, bt := sum.budget, sum.batch
	var notes []note
	add := func(ok bool, reason, format string, args ...any) {
		if ok {
			notes = append(notes, note{reason: reason, text: fmt.Sprintf(format, args...)})
		}
	}
	if moving := progressNote(sum); moving != "" {
		add(true, appsv1beta1.ReasonUpdating, "%s; %d of %d pods are updated", moving, sum.rolloutUpdated, sum.pods)
	}
	add(bt.byBudget > 0 && b.maxUnavailable == 0, appsv1beta1.ReasonMaxUnavailableIsZero,
		"%d of %d pods wait: maxUnavailable %s lets no pod become unavailable",
		bt.byBudget, sum.pods, describe(sum.maxUnavailable, b.maxUnavailable))
	add(bt.byBudget > 0 && b.maxUnavailable > 0, appsv1beta1.ReasonWaitingForUnavailablePods,
		"%d of %d pods wait: maxUnavailable %s is used up by %s upgrading or not ready",
		bt.byBudget, sum.pods, describe(sum.maxUnavailable, b.maxUnavailable), count(bt.unavailable, "pod"))
	add(bt.byPartition > 0, appsv1beta1.ReasonPartitionHeld, "%d of %d pods are held on the old sidecars by partition %s",
		bt.byPartition, sum.pods, describe(sum.partition, b.partition))
	add(b.partitionErr != nil, appsv1beta1.ReasonPartitionHeld, "%v: holding every pod", b.partitionErr)
	add(b.maxUnavailableErr != nil, appsv1beta1.ReasonMaxUnavailableIsZero, "%v: no pod may become unavailable",
		b.maxUnavailableErr)
	add(sum.pdbRefused > 0, appsv1beta1.ReasonWaitingForPodDisruptionBudget,
		"%d of %d pods wait for their PodDisruptionBudget to allow their eviction (the Recreated condition says more)",
		sum.pdbRefused, sum.pods)
	add(sum.resizePending > 0, appsv1beta1.ReasonResizePending,
		"%d of %d pods wait for the kubelet to apply their resize (the Resized condition says why)", sum.resizePending, sum.pods)
	add(sum.blocked > 0, appsv1beta1.ReasonBlockedPods,
		"%s cannot be patched: their SidecarSet annotations are unreadable, patchPodMetadata fails on them, "+
			"or the SidecarSet's authority does not cover what its sidecars reach in them (recreate those)",
		count(sum.blocked, "pod"))
	add(sum.notUpgradable > 0 && !sum.recreate, appsv1beta1.ReasonNotUpgradablePods,
		"%d of %d pods cannot be upgraded in place: a field other than images and resources changed, or their resize cannot be made; "+
			"recreate them to get the new sidecars (%s: \"true\" has the rollout recreate them)",
		sum.notUpgradable, sum.pods, appsv1beta1.RecreatePodsAnnotation)
	add(sum.notUpgradable > 0 && sum.recreate, appsv1beta1.ReasonNotUpgradablePods,
		"%d of %d pods cannot be upgraded in place nor recreated: no controller of theirs would recreate them "+
			"(the Recreated condition names them)", sum.notUpgradable, sum.pods)
	add(sum.notSelected > 0, appsv1beta1.ReasonNotSelected,
		"%d of %d pods are not updated: updateStrategy.selector does not select them", sum.notSelected, sum.pods)
	add(sum.selectorErr != nil, appsv1beta1.ReasonNotSelected, "updateStrategy.selector is invalid: %v", sum.selectorErr)
	add(sum.updatedUnavailable > 0 && sum.updates == 0 && sum.inFlight == 0 && sum.finishing == 0 && bt.byBudget == 0,
		appsv1beta1.ReasonUpdatedPodsUnavailable,
		"%d of %d upgraded pods are not available: not ready, or the new sidecar image is not running (for example, "+
			"it cannot be pulled); see kubectl get pods and their events", sum.updatedUnavailable, sum.updated)
	add(sum.expired > 0, "", "gave up waiting for %s to show their new version after %v",
		count(sum.expired, "patched pod"), InFlightTimeout)
	return notes
}

// progressingReason chooses the reason when the strategy lets the rollout
// run, in order of precedence.
func progressingReason(sum roundSummary) (metav1.ConditionStatus, string) {
	switch {
	case sum.updates > 0 || sum.resets > 0 || sum.inFlight > 0 || sum.finishing > 0:
		return metav1.ConditionTrue, appsv1beta1.ReasonUpdating
	case sum.pdbRefused > 0:
		// The budget taken by evictions tried again holds the others: the
		// PodDisruptionBudget is what the rollout waits for.
		return metav1.ConditionTrue, appsv1beta1.ReasonWaitingForPodDisruptionBudget
	case sum.batch.byBudget > 0 && sum.budget.maxUnavailable == 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonMaxUnavailableIsZero
	case sum.batch.byBudget > 0:
		return metav1.ConditionTrue, appsv1beta1.ReasonWaitingForUnavailablePods
	case sum.batch.byPartition > 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonPartitionHeld
	case sum.updatedUnavailable > 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonUpdatedPodsUnavailable
	case sum.resizePending > 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonResizePending
	case sum.blocked > 0 && sum.rolloutUpdated < sum.rollout:
		return metav1.ConditionFalse, appsv1beta1.ReasonBlockedPods
	case sum.notUpgradable > 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonNotUpgradablePods
	case sum.notSelected > 0:
		return metav1.ConditionFalse, appsv1beta1.ReasonNotSelected
	default:
		return metav1.ConditionFalse, appsv1beta1.ReasonRolloutComplete
	}
}

// progressNote says what moves this round.
func progressNote(sum roundSummary) string {
	var parts []string
	if sum.updates > 0 {
		parts = append(parts, "upgrading "+count(sum.updates, "pod"))
	}
	if sum.resets > 0 {
		parts = append(parts, "resetting the idle hot-upgrade twin of "+count(sum.resets, "pod"))
	}
	if sum.inFlight > 0 {
		parts = append(parts, count(sum.inFlight, "upgrade")+" not yet observed")
	}
	if sum.finishing > 0 {
		parts = append(parts, count(sum.finishing, "pod")+" finishing an earlier upgrade")
	}
	return strings.Join(parts, ", ")
}

// describe renders a strategy value: "10", or "10% (3)" for a percentage.
func describe(v *intstr.IntOrString, resolved int) string {
	if v == nil || v.Type == intstr.Int {
		return fmt.Sprint(resolved)
	}
	return fmt.Sprintf("%s (%d)", v.StrVal, resolved)
}

// count renders "1 pod", "2 pods".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// allRun says that every one of n pods runs the latest sidecars.
func allRun(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + " to upgrade"
	case 1:
		return "the " + noun + " runs the latest sidecars"
	}
	return fmt.Sprintf("all %d %s run the latest sidecars", n, strings.Replace(noun, "pod", "pods", 1))
}

// reportObserved completes a round's status with what the shell observes
// besides the pods' rollout: the generation, the latest revision and the
// collision count, the pods the detector finds without the sidecars
// (notInjectedPods and the Injected condition), the pods injected without
// what the SidecarSet's authority lacks (the Restricted condition) and the
// pod webhooks' scope (the Scoped condition). collisionCount is always
// written, 0 included, as OpenKruise does (kubectl describe shows
// "Collision Count: 0", as the manual does).
func reportObserved(st *appsv1beta1.SidecarSetStatus, in Input, restricted []RestrictedPod) {
	s := in.SidecarSet
	st.ObservedGeneration = s.Generation
	st.LatestRevision = in.LatestRevision
	st.CollisionCount = new(in.CollisionCount)
	ts := metav1.NewTime(in.Now.Truncate(time.Second))
	setNotInjected(st, s, in.Detected, in.DetectorSynced, ts)
	setCondition(&st.Conditions, appsv1beta1.SidecarSetConditionRestricted, restrictedCondition(restricted, s.Generation, ts))
	setCondition(&st.Conditions, appsv1beta1.SidecarSetConditionScoped, scopedCondition(in.ScopeDegraded, in.ScopeWhy, s.Generation, ts))
}

// NotInjectedPod is a pod a SidecarSet selects that runs without its
// sidecars, and why (match.NotInjected*).
type NotInjectedPod struct {
	Pod    types.NamespacedName
	Reason string
}

// namedNotInjected is how many pods the Injected condition names.
const namedNotInjected = 3

// notInjectedReasons say the detector's reasons in words.
var notInjectedReasons = map[string]string{
	match.NotInjectedCreatedBefore: "created before the SidecarSet",
	match.NotInjectedPaused:        "injection paused",
	match.NotInjectedNameConflict:  "has a container of a sidecar's name",
	match.NotInjectedAtAdmission:   "admitted without it: the operator unreachable, a best-effort failure, or created just after the SidecarSet",
	match.NotInjectedUnreadable:    "its SidecarSet annotations cannot be read",
	match.NotInjectedOperatorLabel: "carries the operator's label app.kubernetes.io/name=sidecarset-operator, which exempts it from injection under OLM",
	match.NotInjectedNamespaceReplaced: "its namespace was deleted and created again since the SidecarSet was written: " +
		"it applies there only once someone allowed to create pods there writes it again",
	match.NotInjectedCanaryBaseReplaced: "the canary's base was deleted and created again since the canary was written: " +
		"the base is injected until the canary is written again",
}

// notInjectedMessage names up to namedNotInjected pods and why.
func notInjectedMessage(pods []NotInjectedPod) string {
	var named []string
	for _, p := range pods[:min(len(pods), namedNotInjected)] {
		named = append(named, fmt.Sprintf("%s (%s)", p.Pod, notInjectedReasons[p.Reason]))
	}
	more := ""
	if len(pods) > namedNotInjected {
		more = fmt.Sprintf(" and %d more", len(pods)-namedNotInjected)
	}
	what := "pods it selects run"
	if len(pods) == 1 {
		what = "pod it selects runs"
	}
	return fmt.Sprintf("%d %s without its sidecars: %s%s", len(pods), what, strings.Join(named, ", "), more)
}

// setNotInjected sets the count of the pods the detector found without the
// sidecars and, while it is not zero, the Injected condition. Until the
// detector has looked at every pod (synced), the previous values stay.
func setNotInjected(st *appsv1beta1.SidecarSetStatus, s *appsv1beta1.SidecarSet, pods []NotInjectedPod, synced bool, ts metav1.Time) {
	if !synced {
		st.NotInjectedPods = s.Status.NotInjectedPods
		if c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionInjected); c != nil {
			meta.SetStatusCondition(&st.Conditions, *c)
		}
		return
	}
	st.NotInjectedPods = int32(len(pods))
	if len(pods) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.SidecarSetConditionInjected)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionInjected, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonPodsNotInjected,
		Message: notInjectedMessage(pods), ObservedGeneration: s.Generation, LastTransitionTime: ts,
	})
}

// RestrictedPod is a pod whose sidecars were injected without something
// the SidecarSet's authority did not cover, and the first such thing.
type RestrictedPod struct {
	// Pod is namespace/name.
	Pod, What string
}

// restrictedPods lists the pods that record a restriction of the
// SidecarSet (appsv1beta1.RestrictedAnnotation), sorted by namespace/name.
func restrictedPods(set string, pods []*corev1.Pod) []RestrictedPod {
	var out []RestrictedPod
	for _, p := range pods {
		if what := podstate.DecodeRestricted(p.Annotations)[set]; len(what) > 0 {
			out = append(out, RestrictedPod{Pod: p.Namespace + "/" + p.Name, What: what[0]})
		}
	}
	slices.SortFunc(out, func(a, b RestrictedPod) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}

// restrictedCondition is the Restricted condition: nil when no pod is
// restricted. Its message names up to three pods and what their sidecars
// were not given.
func restrictedCondition(pods []RestrictedPod, generation int64, ts metav1.Time) *metav1.Condition {
	if len(pods) == 0 {
		return nil
	}
	var parts []string
	for _, p := range pods[:min(3, len(pods))] {
		parts = append(parts, p.Pod+": "+p.What)
	}
	more := ""
	if len(pods) > 3 {
		more = fmt.Sprintf(", and %d more", len(pods)-3)
	}
	return &metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionRestricted, Status: metav1.ConditionTrue, Reason: appsv1beta1.ReasonSidecarsRestricted,
		Message: fmt.Sprintf("%d pod(s) run the sidecars without what the SidecarSet's authority does not cover: %s%s",
			len(pods), strings.Join(parts, "; "), more),
		ObservedGeneration: generation, LastTransitionTime: ts,
	}
}

// scopedCondition is the Scoped condition: False, saying why, while the
// pod webhooks' scope leaves the SidecarSet out; nil otherwise.
func scopedCondition(degraded bool, why string, generation int64, ts metav1.Time) *metav1.Condition {
	if !degraded {
		return nil
	}
	return &metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionScoped, Status: metav1.ConditionFalse, Reason: appsv1beta1.ReasonScopeDegraded,
		Message: why, ObservedGeneration: generation, LastTransitionTime: ts,
	}
}
