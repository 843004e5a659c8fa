package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Decisions: what a round decides for each pod, and the order of the
// batches to come, as kubectl sidecarset plan prints them. The batches
// after this round's assume that each one completes (its pods become
// updated and ready) before the next: each then takes maxUnavailable pods
// of the order, until the partition's allowance is used up.

// Action is what the rollout does to a pod.
type Action string

// The actions.
const (
	// ActionNothing: the pod runs the current revision, or the rollout
	// does not select it.
	ActionNothing Action = "nothing"
	// ActionImage: images patched in place (or only the new version
	// recorded, when no image changes).
	ActionImage Action = "image in place"
	// ActionResize: CPU and memory resized in place (pods/resize).
	ActionResize Action = "resize"
	// ActionRecreate: the pod is evicted and its controller recreates it.
	ActionRecreate Action = "recreate"
	// ActionInProgress: an upgrade of the pod is under way.
	ActionInProgress Action = "in progress"
	// ActionWait: the pod waits, held by the partition or a pause.
	ActionWait Action = "wait"
	// ActionBlocked: the rollout cannot reach the pod now, or ever.
	ActionBlocked Action = "blocked"
)

// Blocker says what holds a pod back.
type Blocker string

// The blockers.
const (
	// BlockerPodDisruptionBudget: a PodDisruptionBudget refused the
	// pod's eviction.
	BlockerPodDisruptionBudget Blocker = "PodDisruptionBudget"
	// BlockerNotRecreatable: the pod needs a recreation no controller of
	// its would make.
	BlockerNotRecreatable Blocker = "NotRecreatable"
	// BlockerNotUpgradable: the pod needs a recreation and the SidecarSet
	// does not recreate pods.
	BlockerNotUpgradable Blocker = "NotUpgradable"
	// BlockerResize: the pod's resize is deferred, infeasible, stuck or
	// cannot be made.
	BlockerResize Blocker = "Resize"
)

// Decision is what the rollout decides about one pod.
type Decision struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// Action is what the rollout does to it.
	Action Action
	// Detail says what changes, or why nothing does.
	Detail string
	// Batch is the batch the pod's upgrade is in, 1 for this round's, in
	// the rollout's order; 0 when it is in none.
	Batch int
	// Blocker says what holds a blocked pod back.
	Blocker Blocker
	// Refusal is why the pod's last eviction was refused (a
	// PodDisruptionBudget), while it waits to be recreated.
	Refusal string
}

// decisions lists the decisions of a round: the ordered pods first, by
// batch, then the others by namespace and name. Unless explain is set, only
// the blocked pods' decisions and the refused evictions (Pod and Refusal),
// in the order of all: the batches and the other pods' details are left
// uncomputed.
func decisions(all, ordered []*podView, chosen map[*podView]bool, s *setView, b budget, rolling, explain bool) []Decision {
	if !explain {
		var out []Decision
		for _, v := range all {
			// No batch: a blocked pod's decision does not depend on it.
			if d := s.decision(v, rolling, 0, false); d.Action == ActionBlocked || d.Refusal != "" {
				out = append(out, d)
			}
		}
		return out
	}
	batchOf := map[*podView]int{}
	if rolling {
		size := max(1, b.maxUnavailable)
		left := b.allowed()
		inBatch := 0
		next := 2
		for _, v := range ordered {
			if chosen[v] {
				batchOf[v] = 1
				if !v.committed() {
					left--
				}
			}
		}
		for _, v := range ordered {
			if chosen[v] {
				continue
			}
			if !v.committed() {
				if left <= 0 {
					continue
				}
				left--
			}
			batchOf[v] = next
			if inBatch++; inBatch == size {
				inBatch, next = 0, next+1
			}
		}
	}
	out := make([]Decision, 0, len(all))
	for _, v := range all {
		out = append(out, s.decision(v, rolling, batchOf[v], true))
	}
	// The pods of a batch are all ordered pods: their place in the order,
	// looked up once per pod, not once per comparison.
	position := make(map[types.NamespacedName]int, len(ordered))
	for i, v := range ordered {
		position[v.key] = i
	}
	type placed struct {
		Decision
		position int
	}
	sorted := make([]placed, len(out))
	for i, d := range out {
		sorted[i] = placed{Decision: d, position: position[d.Pod]}
	}
	slices.SortStableFunc(sorted, func(a, b placed) int {
		switch {
		case a.Batch == 0 && b.Batch == 0:
			return compareKeys(a.Pod, b.Pod)
		case a.Batch == 0:
			return 1
		case b.Batch == 0:
			return -1
		}
		return cmp.Or(cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.position, b.position))
	})
	for i := range sorted {
		out[i] = sorted[i].Decision
	}
	return out
}

// decision is one pod's decision in a batch (0: none).
func (s *setView) decision(v *podView, rolling bool, batch int, explain bool) Decision {
	d := Decision{Pod: v.key, Batch: batch, Refusal: v.refusal}
	d.Action, d.Detail = s.decide(v, rolling, batch, explain)
	if d.Action == ActionBlocked {
		d.Blocker = blocker(v)
	}
	return d
}

// decide says what happens to one pod, and why; without explain, the why
// only of a blocked pod (the others' details are left empty).
func (s *setView) decide(v *podView, rolling bool, batch int, explain bool) (Action, string) {
	switch {
	case v.err != nil:
		return ActionBlocked, v.err.Error()
	case v.updated && v.consistent:
		return ActionNothing, "runs the current revision"
	case v.updated:
		return ActionInProgress, "its in-place upgrade is completing"
	case v.inFlight || v.evicting:
		return ActionInProgress, "its upgrade is under way"
	case !v.selected:
		return ActionNothing, "updateStrategy.selector does not select it"
	case v.kind == kindBlocked:
		return ActionBlocked, v.why
	case v.kind == kindResizing:
		return ActionInProgress, "the kubelet is applying its resize"
	case v.kind == kindResizePending:
		return ActionBlocked, fmt.Sprintf("its resize is %s: %s", resizeStateWord(v.resize.state), v.resize.message)
	case v.finishing:
		return ActionInProgress, "finishing an earlier upgrade"
	}
	if rolling && !v.refusedUntil.IsZero() {
		return ActionBlocked, "its PodDisruptionBudget refused the eviction: " + v.refusal
	}
	if !explain {
		return ActionWait, "" // not blocked: what and why left uncomputed
	}
	action, detail := s.describeAction(v)
	switch {
	case !rolling:
		return ActionWait, detail + " (the update strategy is paused or NotUpdate)"
	case !v.scopeUntil.IsZero():
		return ActionWait, detail + " (until the API server has the pod webhooks' new scope)"
	case batch == 0:
		return ActionWait, detail + " (held back by the partition)"
	}
	return action, detail
}

// blocker says what holds a blocked pod back.
func blocker(v *podView) Blocker {
	switch {
	case !v.refusedUntil.IsZero():
		return BlockerPodDisruptionBudget
	case v.resize != nil && v.kind == kindResizePending:
		return BlockerResize
	case v.kind == kindBlocked && v.notRecreatable:
		return BlockerNotRecreatable
	case v.kind == kindBlocked && v.resize != nil && v.resize.state == resizeRefused:
		return BlockerResize
	case v.kind == kindBlocked:
		return BlockerNotUpgradable
	}
	return ""
}

// describeAction says what the rollout's action on a waiting pod changes.
func (s *setView) describeAction(v *podView) (Action, string) {
	switch v.kind {
	case kindResize:
		return ActionResize, describeResize(v.resize)
	case kindRecreate:
		return ActionRecreate, v.why
	}
	images := s.imageChanges(v)
	if len(images) == 0 {
		return ActionImage, "no image changes: records the current revision"
	}
	return ActionImage, strings.Join(images, ", ")
}
