package rollout

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Upgrade order of the waiting pods, first upgraded first:
//
//  1. the default order (compareDefault), a total order;
//  2. priorityStrategy, a stable sort on top of it;
//  3. scatterStrategy, which spreads the pods carrying each term's label
//     evenly over the whole rollout (scatter).

// orderWaiting sorts the waiting pods in place. rollout is the population
// the rollout spreads over (see scatter); hash is the current hash.
func orderWaiting(waiting, rollout []*podView, us *appsv1beta1.SidecarSetUpdateStrategy, hash string) []*podView {
	slices.SortFunc(waiting, compareDefault)
	if ps := us.PriorityStrategy; ps != nil {
		switch {
		case len(ps.WeightPriority) > 0:
			sortByWeight(waiting, ps.WeightPriority)
		case len(ps.OrderPriority) > 0:
			sortByOrder(waiting, ps.OrderPriority)
		}
	}
	if len(us.ScatterStrategy) > 0 {
		waiting = scatter(waiting, rollout, us.ScatterStrategy, hash)
	}
	return waiting
}

// compareDefault orders pods as the upstream "active pods" order does, then
// by namespace and name so that the order is total: unscheduled before
// scheduled; Pending, Unknown, then Running; not ready before ready; of two
// ready pods the more recently ready first; the higher container restart
// count first, then the higher native-sidecar restart count; the newer pod
// first.
func compareDefault(a, b *podView) int {
	pa, pb := a.pod, b.pod
	if c := cmp.Compare(boolRank(pa.Spec.NodeName != ""), boolRank(pb.Spec.NodeName != "")); c != 0 {
		return c
	}
	if c := cmp.Compare(phaseRank(pa.Status.Phase), phaseRank(pb.Status.Phase)); c != 0 {
		return c
	}
	ra, rb := podReadyCondition(pa), podReadyCondition(pb)
	if c := cmp.Compare(boolRank(ra), boolRank(rb)); c != 0 {
		return c
	}
	if ra && rb {
		if c := newerFirst(readyTime(pa), readyTime(pb)); c != 0 {
			return c
		}
	}
	ca, sa := maxRestarts(pa)
	cb, sb := maxRestarts(pb)
	if c := cmp.Or(cmp.Compare(cb, ca), cmp.Compare(sb, sa)); c != 0 {
		return c
	}
	if c := newerFirst(pa.CreationTimestamp, pb.CreationTimestamp); c != 0 {
		return c
	}
	return compareKeys(a.key, b.key)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 0
	}
}

// newerFirst puts a zero time first, then the later time.
func newerFirst(a, b metav1.Time) int {
	switch {
	case a.Equal(&b):
		return 0
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b.Time):
		return -1
	default:
		return 1
	}
}

func readyTime(pod *corev1.Pod) metav1.Time {
	if c := readyCondition(pod); c != nil {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}

// maxRestarts returns the highest restart count of the pod's containers,
// and of its native sidecars.
func maxRestarts(pod *corev1.Pod) (containers, sidecars int32) {
	for i := range pod.Status.ContainerStatuses {
		containers = max(containers, pod.Status.ContainerStatuses[i].RestartCount)
	}
	for i := range pod.Status.InitContainerStatuses {
		st := &pod.Status.InitContainerStatuses[i]
		if specContainer(pod, st.Name) != nil {
			sidecars = max(sidecars, st.RestartCount)
		}
	}
	return containers, sidecars
}

// sortByWeight puts the pods with the higher sum of matching term weights
// first. A term with an invalid selector matches nothing.
func sortByWeight(pods []*podView, terms []appsv1beta1.UpdatePriorityWeightTerm) {
	selectors := make([]labels.Selector, len(terms))
	for i := range terms {
		if sel, err := metav1.LabelSelectorAsSelector(&terms[i].MatchSelector); err == nil {
			selectors[i] = sel
		}
	}
	score := make(map[*podView]int64, len(pods))
	for _, p := range pods {
		var s int64
		for i, sel := range selectors {
			if sel != nil && sel.Matches(labels.Set(p.pod.Labels)) {
				s += int64(terms[i].Weight)
			}
		}
		score[p] = s
	}
	slices.SortStableFunc(pods, func(a, b *podView) int { return cmp.Compare(score[b], score[a]) })
}

// sortByOrder groups the pods by the first term whose key they carry, in
// term order, and within a group puts the larger trailing integer of the
// label value first ("sts-10" before "sts-5"; no trailing digits counts as
// 0). Pods carrying none of the keys go last (OpenKruise puts them first,
// contrary to its own field documentation).
func sortByOrder(pods []*podView, terms []appsv1beta1.UpdatePriorityOrderTerm) {
	type rank struct {
		level int
		value int64
	}
	ranks := make(map[*podView]rank, len(pods))
	for _, p := range pods {
		r := rank{level: len(terms)}
		for i, t := range terms {
			if v, ok := p.pod.Labels[t.OrderedKey]; ok {
				r = rank{level: i, value: trailingInt(v)}
				break
			}
		}
		ranks[p] = r
	}
	slices.SortStableFunc(pods, func(a, b *podView) int {
		ra, rb := ranks[a], ranks[b]
		if c := cmp.Compare(ra.level, rb.level); c != 0 {
			return c
		}
		return cmp.Compare(rb.value, ra.value)
	})
}

// trailingInt parses the digits a string ends with (0 if none; the largest
// int64 if they overflow it).
func trailingInt(s string) int64 {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) {
		return 0
	}
	n, err := strconv.ParseInt(s[i:], 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}
