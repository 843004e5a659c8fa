package rollout

import (
	"cmp"
	"slices"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Scatter.
//
// A scatter term (key=value) spreads the pods carrying that label evenly over
// the whole rollout rather than over one round's batch. The rollout is the
// population of T pods the partition is counted on (selected pods that are
// updated or can be upgraded in place), M of them carry the label. Their
// ideal places in the full upgrade sequence 0..T-1 are
//
//	place(i) = round(i × (T−1) / (M−1)), i = 0..M−1 (halves round up)
//
// so the first carrier goes first and the last one last: with T=10 and M=3,
// places 0, 5 and 9, i.e. positions 1, 6 and 10.
//
// The waiting pods are then re-sequenced from position D on, D being the
// number of pods already upgraded: at each position a carrier is taken (in
// the current order) when fewer carriers have been upgraded than ideally
// placed up to that position, otherwise a non-carrier, while both remain.
// Because already upgraded carriers count, the spread holds across rounds:
// with one pod per round the carriers still go in rounds 1, 6 and 10.
//
// A term with at most one carrier, or no non-carrier, changes nothing.
// Terms with value "*" stand for one term per value of the key among the
// rollout's pods (sorted). Several terms are applied in turn, the one with
// the most waiting carriers first, so the rarest label is spread exactly.

// scatter re-sequences the ordered waiting pods.
func scatter(waiting, rollout []*podView, terms appsv1beta1.UpdateScatterStrategy, hash string) []*podView {
	expanded := expandScatterTerms(terms, rollout)
	counts := make(map[appsv1beta1.UpdateScatterTerm]int, len(expanded))
	for _, t := range expanded {
		for _, p := range waiting {
			if carries(p, t) {
				counts[t]++
			}
		}
	}
	slices.SortStableFunc(expanded, func(a, b appsv1beta1.UpdateScatterTerm) int {
		return cmp.Compare(counts[b], counts[a])
	})
	for _, t := range expanded {
		waiting = spreadTerm(waiting, rollout, t, hash)
	}
	return waiting
}

func carries(p *podView, t appsv1beta1.UpdateScatterTerm) bool {
	v, ok := p.pod.Labels[t.Key]
	return ok && v == t.Value
}

// expandScatterTerms replaces each "*" term with one term per value of its
// key among the pods, sorted, and drops duplicates.
func expandScatterTerms(terms appsv1beta1.UpdateScatterStrategy, pods []*podView) []appsv1beta1.UpdateScatterTerm {
	var out []appsv1beta1.UpdateScatterTerm
	seen := map[appsv1beta1.UpdateScatterTerm]bool{}
	add := func(t appsv1beta1.UpdateScatterTerm) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range terms {
		if t.Value != "*" {
			add(t)
			continue
		}
		var values []string
		for _, p := range pods {
			if v, ok := p.pod.Labels[t.Key]; ok {
				values = append(values, v)
			}
		}
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			add(appsv1beta1.UpdateScatterTerm{Key: t.Key, Value: v})
		}
	}
	return out
}

// spreadTerm re-sequences the waiting pods for one term (see above).
func spreadTerm(waiting, rollout []*podView, t appsv1beta1.UpdateScatterTerm, hash string) []*podView {
	total, carriers, done, doneCarriers := 0, 0, 0, 0
	for _, p := range rollout {
		total++
		c := carries(p, t)
		if c {
			carriers++
		}
		if p.done(hash) {
			done++
			if c {
				doneCarriers++
			}
		}
	}
	if carriers <= 1 || carriers >= total {
		return waiting
	}
	var with, without []*podView
	for _, p := range waiting {
		if carries(p, t) {
			with = append(with, p)
		} else {
			without = append(without, p)
		}
	}
	if len(with) == 0 || len(without) == 0 {
		return waiting
	}
	out := make([]*podView, 0, len(waiting))
	next := 0 // index of the next ideal carrier place not yet passed
	for q := done; len(with)+len(without) > 0; q++ {
		for next < carriers && idealPlace(next, total, carriers) <= q {
			next++
		}
		// next is now the number of carriers ideally placed at 0..q.
		if len(with) > 0 && (doneCarriers < next || len(without) == 0) {
			out = append(out, with[0])
			with = with[1:]
			doneCarriers++
			continue
		}
		out = append(out, without[0])
		without = without[1:]
	}
	return out
}

// idealPlace is round(i × (total−1) / (carriers−1)), halves rounded up;
// carriers is at least 2.
func idealPlace(i, total, carriers int) int {
	den := 2 * (carriers - 1)
	return (2*i*(total-1) + carriers - 1) / den
}
