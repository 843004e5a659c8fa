package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Partition and maxUnavailable.
//
//   - partition is how many matched pods stay on the old sidecars, as the
//     user manual defines it: at most max(0, matched − partition) pods end
//     on the new version, so this round may upgrade that many minus those
//     already updated or patched. Every matched pod counts, so pods that
//     cannot be upgraded in place (or that updateStrategy.selector leaves
//     out) are among those kept back. A percentage is of the matched pods,
//     rounded up, except that below 100% at least one pod is upgraded when
//     more than one is matched. (OpenKruise subtracts the partition from
//     this round's waiting list instead: pods that cannot be upgraded in
//     place, or still finishing an earlier upgrade, are left out of it, so
//     6 matched pods of which 4 cannot be upgraded and partition 2 upgrade
//     none.)
//   - maxUnavailable bounds the pods unavailable because of the rollout: a
//     percentage is of the matched pods, rounded up (a non-zero percentage
//     never resolves to 0). Pods already unavailable count first: patched
//     and not yet observed, an in-place update not complete, or updated and
//     not ready. Every pod this round upgrades takes one more share, whether
//     or not it is ready, except a pod already counted (an earlier upgrade
//     of it is stuck, e.g. on an image that cannot be pulled): re-upgrading
//     it makes nothing worse, so a fixed image can always reach it.
//     (OpenKruise lets every not-ready pod bypass the budget and counts only
//     updated pods as unavailable.)

// budget is one round's resolved partition and maxUnavailable.
type budget struct {
	// matched is the number of matched pods and done how many of them are
	// updated or patched to the current hash.
	matched, done int
	// partition is the resolved partition; partitionErr is set when the
	// value is malformed, and then the partition holds every pod.
	partition    int
	partitionErr error
	// maxUnavailable is the resolved value; maxUnavailableErr is set when
	// the value is malformed, and then it is 0.
	maxUnavailable    int
	maxUnavailableErr error
	// unavailable counts the pods unavailable before this round.
	unavailable int
}

// allowed is how many pods the partition lets this round upgrade.
func (b budget) allowed() int {
	return max(0, max(0, b.matched-b.partition)-b.done)
}

// newBudget resolves the strategy values.
func newBudget(partition, maxUnavailable *intstr.IntOrString, matched, done, unavailable int) budget {
	b := budget{matched: matched, done: done, unavailable: unavailable}
	b.partition, b.partitionErr = resolvePartition(partition, matched)
	if b.partitionErr != nil {
		b.partition = matched
	}
	b.maxUnavailable, b.maxUnavailableErr = resolveMaxUnavailable(maxUnavailable, matched)
	return b
}

// resolvePartition resolves a partition against the matched pods: an
// integer as is, a percentage rounded up, except that a percentage below
// 100% that rounds to every one of more than one pod keeps one pod fewer.
// The result is within [0, total].
func resolvePartition(v *intstr.IntOrString, total int) (int, error) {
	if v == nil {
		return 0, nil
	}
	n, err := appsv1beta1.ScaledValue(*v, total)
	if err != nil {
		return 0, fmt.Errorf("partition: %w", err)
	}
	if v.Type == intstr.String && n == total && total > 1 {
		if p, _ := appsv1beta1.ParsePercent(v.StrVal); p < 100 {
			n = total - 1
		}
	}
	return min(n, total), nil
}

// resolveMaxUnavailable resolves maxUnavailable against the matched pods:
// nil is 1, an integer as is, a percentage rounded up.
func resolveMaxUnavailable(v *intstr.IntOrString, total int) (int, error) {
	if v == nil {
		return 1, nil
	}
	n, err := appsv1beta1.ScaledValue(*v, total)
	if err != nil {
		return 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	return n, nil
}

// batch is the outcome of walking the ordered waiting pods.
type batch struct {
	chosen []*podView
	// byPartition and byBudget count the waiting pods held back by the
	// partition and by maxUnavailable; blocked those whose patch could not
	// be built.
	byPartition, byBudget, blocked int
	// unavailable counts the unavailable pods once the batch is applied.
	unavailable int
}

// pick walks the ordered waiting pods and chooses this round's batch.
// accept builds a pod's update and reports whether it could; a pod it
// rejects takes no share of either limit. A pod already committed to the
// new version (its resize made, its patch to follow) takes no new share of
// the partition, and no share of maxUnavailable when its patch changes no
// image (it only records the new version).
func (b budget) pick(ordered []*podView, accept func(*podView) bool) batch {
	out := batch{unavailable: b.unavailable}
	allowed := b.allowed()
	fresh := 0
	for _, p := range ordered {
		if !p.committed() {
			fresh++
		}
	}
	out.byPartition = max(0, fresh-allowed)
	taken := 0
	for _, p := range ordered {
		committed := p.committed()
		if !committed && taken == allowed {
			continue
		}
		free := p.unavailable() || (p.kind == kindResized && !p.changesImages)
		if !free && out.unavailable >= b.maxUnavailable {
			continue
		}
		if !accept(p) {
			out.blocked++
			continue
		}
		out.chosen = append(out.chosen, p)
		if !committed {
			taken++
		}
		if !free {
			out.unavailable++
		}
	}
	out.byBudget = max(0, len(ordered)-len(out.chosen)-out.byPartition-out.blocked)
	return out
}
