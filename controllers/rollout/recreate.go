package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Recreate.
//
// With sidecarset-operator.dev/recreate-pods: "true" on the SidecarSet, the
// rollout recreates the pods it cannot upgrade in place (a change beyond
// images and resources, a resize that cannot be made or that is infeasible
// on the pod's node) and the pods the SidecarSet selects that lack its
// sidecars (created before it, or admitted without it: Input.NotInjected).
// The shell evicts them through the Eviction API, never deletes them: the
// API server refuses an eviction that a PodDisruptionBudget does not allow
// (HTTP 429), and the pod is tried again EvictionRetry later. The pod's
// controller creates the replacement, into which the pod webhook injects
// the current revision. The pods that lack the sidecars wait until the pod
// webhooks' scope holding the SidecarSet has reached the API server
// (ScopeSettle): a replacement admitted before would lack them too.
//
// Only pods whose controller recreates them are evicted: the pods of
// ReplicaSets (Deployments), StatefulSets, DaemonSets and
// ReplicationControllers, and of OpenKruise's CloneSets, Advanced
// StatefulSets and Advanced DaemonSets. A pod with no controller (a bare
// pod) is never evicted; the pods of Jobs and pods with restartPolicy Never
// only with sidecarset-operator.dev/recreate-job-pods: "true" (a recreation
// runs them again from the beginning). Pods of other controllers are left
// alone: nothing says they would come back.
//
// The update strategy paces evictions as it paces in-place upgrades: the
// partition, updateStrategy.selector, paused, priority and scatter apply,
// and each eviction takes a share of maxUnavailable, as long as the pod is
// gone and its replacement not yet there, then as long as the replacement
// is not ready (an updated pod that is not ready). An evicted pod counts
// as replaced once its controller has a pod created since the eviction,
// not seen when the eviction was planned and credited to no other
// eviction (creation times are to the second), that is ready or holds a
// share of its own; a replacement admitted
// without the sidecars (created before the API server saw the pod
// webhooks' new scope) keeps the eviction's share until it is ready, and
// is recreated in turn. The record is dropped after RecreateTimeout (a
// controller scaled down never replaces it). Percentages resolve against the matched pods, the
// selected pods that lack the sidecars and the evicted pods not yet
// replaced.

// ScopeSettle is how long after the pod webhooks' scope was written the
// pods that lack a SidecarSet's sidecars wait before they are recreated:
// the API server sends pods to the webhooks by the configuration its own
// cache holds, and a replacement it admits before that cache has the
// SidecarSet's term comes back without the sidecars (and is recreated
// again).
const ScopeSettle = 5 * time.Second

// RecreateTimeout is how long an evicted pod counts as unavailable while
// its controller has not replaced it.
const RecreateTimeout = 10 * time.Minute

// EvictionRetry is how long after a refused eviction the pod is tried again.
const EvictionRetry = 5 * time.Second

// ReplacementCheck is how often the round plans again while evicted pods
// wait for their replacement.
const ReplacementCheck = 10 * time.Second

// Eviction is a pod the shell evicted to recreate it.
type Eviction struct {
	// Owner is the UID of the pod's controller, which creates the
	// replacement.
	Owner types.UID
	// Since is when the eviction was accepted.
	Since time.Time
	// NotReplacements are pods of the controller that existed when the
	// eviction was planned (PodEviction.Siblings): a replacement already
	// credited to an earlier eviction, ready within the same second, must
	// not be credited to this one too.
	NotReplacements []types.UID
	// ReplacedBy is the replacement credited to this eviction
	// (Plan.EvictionsReplaced). The record then takes no share; it is kept
	// while another eviction of the controller waits, so that its
	// replacement is credited to no other.
	ReplacedBy types.UID
}

// Refusal is an eviction the API server refused: a PodDisruptionBudget
// allows no disruption now (HTTP 429), or cannot be applied.
type Refusal struct {
	// Message is the API server's.
	Message string
	// At is when it was refused.
	At time.Time
}

// PodEviction is one eviction to issue.
type PodEviction struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// UID is the pod's UID: the eviction's precondition, so that a
	// replacement of the same name (a StatefulSet's) is never evicted.
	UID types.UID
	// Owner is the UID of the pod's controller.
	Owner types.UID
	// Reason says why the pod is recreated, for its event.
	Reason string
	// Siblings are the pods of the same controller the round saw created
	// in its second or later: none of them is the replacement, though
	// their creation time (to the second) cannot tell. The shell keeps
	// them in the eviction's record (Eviction.NotReplacements).
	Siblings []types.UID
}

// recreatableKinds are the controllers known to recreate an evicted pod.
var recreatableKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "ReplicaSet"}:            true,
	{Group: "apps", Kind: "StatefulSet"}:           true,
	{Group: "apps", Kind: "DaemonSet"}:             true,
	{Group: "", Kind: "ReplicationController"}:     true,
	{Group: "apps.kruise.io", Kind: "CloneSet"}:    true,
	{Group: "apps.kruise.io", Kind: "StatefulSet"}: true,
	{Group: "apps.kruise.io", Kind: "DaemonSet"}:   true,
}

// jobKind is a Job's, whose pods run once.
var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// recreatable reports whether evicting the pod gets it recreated, and why
// not.
func recreatable(pod *corev1.Pod, jobs bool) (bool, string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return false, "a bare pod: no controller would recreate it"
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	switch {
	case gk == jobKind && !jobs:
		return false, "a Job's pod, which a recreation runs again (" + appsv1beta1.RecreateJobPodsAnnotation + ` "true" allows it)`
	case gk == jobKind:
		return true, ""
	case !recreatableKinds[gk]:
		return false, fmt.Sprintf("its controller, a %s, is not known to recreate evicted pods", ref.Kind)
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever && !jobs:
		return false, "restartPolicy Never: a recreation runs it again (" + appsv1beta1.RecreateJobPodsAnnotation + ` "true" allows it)`
	}
	return true, ""
}

// toRecreate puts a pod the rollout cannot upgrade in place on the
// recreate path, or reports it (kindBlocked) when the SidecarSet does not
// recreate pods or no controller would recreate this one.
func (s *setView) toRecreate(v *podView, why string) {
	v.why = why
	if !s.recreate {
		v.kind = kindBlocked
		return
	}
	if ok, reason := recreatable(v.pod, s.recreateJobs); !ok {
		v.kind, v.why, v.notRecreatable = kindBlocked, why+"; not recreatable: "+reason, true
		return
	}
	v.kind = kindRecreate
}

// classifyNotInjected makes the view of a pod the SidecarSet selects that
// lacks its sidecars; ok is false, with why, when it cannot be recreated.
func (s *setView) classifyNotInjected(pod *corev1.Pod) (v *podView, ok bool, why string) {
	v = &podView{pod: pod, key: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, notInjected: true,
		why: "it runs without the SidecarSet's sidecars", kind: kindRecreate,
		classified: classified{consistent: true, ready: podRunningAndReady(pod)}}
	if ok, why := recreatable(pod, s.recreateJobs); !ok {
		return v, false, why
	}
	if s.selectorErr == nil {
		v.selected = s.selector.Matches(labels.Set(pod.Labels))
	}
	return v, true, ""
}

// applyRefusals marks the pods whose last eviction was refused less than
// EvictionRetry ago: they wait, and the round plans again when they may be
// tried.
func applyRefusals(views []*podView, refused map[types.UID]Refusal, now time.Time) time.Duration {
	var next time.Duration
	for _, v := range views {
		r, ok := refused[v.pod.UID]
		if !ok || v.kind != kindRecreate {
			continue
		}
		v.refusal = r.Message
		until := r.At.Add(EvictionRetry)
		if until.After(now) {
			v.refusedUntil = until
			next = earliest(next, until.Sub(now))
		}
	}
	return next
}

// settleEvictions sorts the shell's evictions: those to forget (the pod is
// replaced and no other eviction of its controller waits, or the record
// expired), the expired subset, those replaced this round whose record
// stays (another eviction of the controller waits), how many evicted pods
// are gone and not yet replaced by an available pod, and the views of
// evicted pods the cache still shows (marked evicting). A replacement is a
// pod of the same controller created since the eviction, neither seen when
// it was planned nor credited to another eviction, each matched to one
// eviction, oldest first.
func settleEvictions(evictions map[types.UID]Eviction, views []*podView, now time.Time) (
	forget, expired []types.UID, replaced map[types.UID]types.UID, unreplaced int) {
	replaced = map[types.UID]types.UID{}
	if len(evictions) == 0 {
		return nil, nil, replaced, 0
	}
	byUID := make(map[types.UID]*podView, len(views))
	for _, v := range views {
		byUID[v.pod.UID] = v
	}
	type record struct {
		uid types.UID
		e   Eviction
	}
	byOwner := map[types.UID][]record{}
	credited := map[types.UID]bool{} // replacements of earlier rounds
	waiting := map[types.UID]bool{}  // controllers with an eviction not replaced
	for uid, e := range evictions {
		switch v, present := byUID[uid]; {
		case now.Sub(e.Since) >= RecreateTimeout:
			forget = append(forget, uid)
			if e.ReplacedBy == "" {
				expired = append(expired, uid)
			}
		case e.ReplacedBy != "":
			credited[e.ReplacedBy] = true
		case present:
			v.evicting = true
			waiting[e.Owner] = true
		default:
			byOwner[e.Owner] = append(byOwner[e.Owner], record{uid, e})
		}
	}
	for owner, records := range byOwner {
		slices.SortFunc(records, func(a, b record) int { return cmp.Or(a.e.Since.Compare(b.e.Since), cmp.Compare(a.uid, b.uid)) })
		var candidates []*podView
		for _, v := range views {
			if ref := metav1.GetControllerOf(v.pod); ref != nil && ref.UID == owner && !v.evicting && !credited[v.pod.UID] {
				candidates = append(candidates, v)
			}
		}
		slices.SortFunc(candidates, func(a, b *podView) int {
			return cmp.Or(a.pod.CreationTimestamp.Compare(b.pod.CreationTimestamp.Time), cmp.Compare(a.pod.UID, b.pod.UID))
		})
		for _, r := range records {
			// Creation times have a one-second resolution.
			i := slices.IndexFunc(candidates, func(v *podView) bool {
				return !v.pod.CreationTimestamp.Before(&metav1.Time{Time: r.e.Since.Truncate(time.Second)}) &&
					!slices.Contains(r.e.NotReplacements, v.pod.UID)
			})
			if i < 0 {
				unreplaced++
				waiting[owner] = true
				continue
			}
			replacement := candidates[i]
			candidates = slices.Delete(candidates, i, i+1)
			if !replacement.ready && !replacement.unavailable() {
				// Not ready, and nothing else counts it: a replacement
				// admitted without the sidecars (the API server had not
				// seen the pod webhooks' new scope yet). The eviction
				// keeps its share until the replacement is ready.
				unreplaced++
				waiting[owner] = true
				continue
			}
			replaced[r.uid] = replacement.pod.UID
		}
	}
	// A replaced eviction is forgotten once no other eviction of its
	// controller waits: then no other can be credited its replacement.
	for uid, e := range evictions {
		if _, thisRound := replaced[uid]; (thisRound || e.ReplacedBy != "") && !waiting[e.Owner] && !slices.Contains(forget, uid) {
			forget = append(forget, uid)
			delete(replaced, uid)
		}
	}
	slices.Sort(forget)
	slices.Sort(expired)
	return forget, expired, replaced, unreplaced
}

// markSiblings records, on each eviction, the pods of its controller
// created in the round's second or later (views: every pod the round saw).
func markSiblings(evictions []PodEviction, views []*podView, now time.Time) {
	second := metav1.NewTime(now.Truncate(time.Second))
	for i := range evictions {
		e := &evictions[i]
		if e.Owner == "" {
			continue
		}
		for _, v := range views {
			if ref := metav1.GetControllerOf(v.pod); ref != nil && ref.UID == e.Owner && v.pod.UID != e.UID &&
				!v.pod.CreationTimestamp.Before(&second) {
				e.Siblings = append(e.Siblings, v.pod.UID)
			}
		}
	}
}

// buildEviction builds a pod's eviction.
func buildEviction(v *podView) PodEviction {
	e := PodEviction{Pod: v.key, UID: v.pod.UID, Reason: v.why}
	if ref := metav1.GetControllerOf(v.pod); ref != nil {
		e.Owner = ref.UID
	}
	return e
}

// recreateSummary is what the Recreated condition explains.
type recreateSummary struct {
	// pending are the pods to recreate not evicted yet; refused those of
	// them whose eviction a PodDisruptionBudget refused.
	pending, refused int
	refusal          string
	// evicting counts the evictions issued this round, and evicted the
	// pods evicted and not yet replaced (in the cache or gone).
	evicting, evicted int
	// notRecreatable names the pods that need a recreation no controller
	// would make.
	notRecreatable []string
	// expired counts the evictions whose replacement never came.
	expired int
	// scopeHeld counts the pods that lack the sidecars and wait for the
	// pod webhooks' new scope to reach the API server.
	scopeHeld int
}

// recreateCondition returns the Recreated condition: False while pods wait
// for their recreation, or cannot be recreated, with why; nil when no pod
// needs one.
func recreateCondition(r recreateSummary, sum roundSummary, generation int64, now time.Time) *metav1.Condition {
	if r.pending == 0 && r.evicted == 0 && len(r.notRecreatable) == 0 {
		return nil
	}
	c := &metav1.Condition{Type: appsv1beta1.SidecarSetConditionRecreated, Status: metav1.ConditionFalse,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	var notes []string
	if r.pending > 0 || r.evicted > 0 {
		notes = append(notes, fmt.Sprintf("%s to recreate: %d being replaced, %d waiting", count(r.pending+r.evicted, "pod"),
			r.evicted+r.evicting, r.pending-r.evicting))
	}
	waiting := r.pending - r.evicting
	budgetHeld := sum.batch.byBudget > 0 && waiting > 0
	partitionHeld := sum.batch.byPartition > 0 && waiting > 0
	switch {
	case sum.paused:
		c.Reason = appsv1beta1.ReasonPaused
	case r.refused > 0:
		c.Reason = appsv1beta1.ReasonWaitingForPodDisruptionBudget
	case r.evicting > 0 || r.evicted > 0:
		c.Reason = appsv1beta1.ReasonRecreating
	case budgetHeld:
		c.Reason = appsv1beta1.ReasonWaitingForUnavailablePods
	case partitionHeld:
		c.Reason = appsv1beta1.ReasonPartitionHeld
	case r.pending > 0:
		c.Reason = appsv1beta1.ReasonRecreating
	default:
		c.Reason = appsv1beta1.ReasonPodsNotRecreatable
	}
	if r.refused > 0 {
		notes = append(notes, fmt.Sprintf("%d wait for their PodDisruptionBudget (%s)", r.refused, r.refusal))
	}
	if r.scopeHeld > 0 {
		notes = append(notes, fmt.Sprintf("%d wait until the API server has the pod webhooks' new scope", r.scopeHeld))
	}
	if budgetHeld {
		notes = append(notes, fmt.Sprintf("maxUnavailable %s is used up", describe(sum.maxUnavailable, sum.budget.maxUnavailable)))
	}
	if partitionHeld {
		notes = append(notes, fmt.Sprintf("partition %s holds the rest", describe(sum.partition, sum.budget.partition)))
	}
	if n := len(r.notRecreatable); n > 0 {
		more := ""
		if n > maxNamed {
			more = fmt.Sprintf(" and %d more", n-maxNamed)
		}
		notes = append(notes, fmt.Sprintf("%s not recreatable: %s%s", count(n, "pod"),
			strings.Join(r.notRecreatable[:min(n, maxNamed)], ", "), more))
	}
	if r.expired > 0 {
		notes = append(notes, fmt.Sprintf("gave up waiting for the replacement of %s after %v", count(r.expired, "evicted pod"), RecreateTimeout))
	}
	c.Message = strings.Join(notes, "; ")
	return c
}
