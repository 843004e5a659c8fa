package rollout

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const testHash = "h2"

// scatterFleet builds n waiting views pod-0..pod-(n-1); the listed indexes
// carry foo=bar.
func scatterFleet(n int, carriers ...int) []*podView {
	ws := make([]*podWrapper, n)
	for i := range n {
		ws[i] = makePod(fmt.Sprintf("pod-%d", i))
		if slices.Contains(carriers, i) {
			ws[i].label("foo", "bar")
		}
	}
	return viewsOf(ws)
}

// carrierPositions returns the 1-based positions of the foo=bar pods.
func carrierPositions(vs []*podView) []int {
	var out []int
	for i, v := range vs {
		if v.pod.Labels["foo"] == "bar" {
			out = append(out, i+1)
		}
	}
	return out
}

var fooBar = appsv1beta1.UpdateScatterStrategy{{Key: "foo", Value: "bar"}}

func TestScatter_Spread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		n        int
		carriers []int
		want     []int
	}{
		{"3 of 10 pods go to positions 1, 6 and 10 (the documented example)", 10, []int{0, 1, 2}, []int{1, 6, 10}},
		{"the spread does not depend on where the carriers start", 10, []int{7, 8, 9}, []int{1, 6, 10}},
		{"2 of 10 pods go first and last", 10, []int{4, 5}, []int{1, 10}},
		{"5 of 9 pods alternate", 9, []int{0, 1, 2, 3, 4}, []int{1, 3, 5, 7, 9}},
		{"a single carrier is left where it is", 10, []int{3}, []int{4}},
		{"only carriers are left as they are", 3, []int{0, 1, 2}, []int{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vs := scatterFleet(tc.n, tc.carriers...)
			got := scatter(slices.Clone(vs), vs, fooBar, testHash)
			if diff := cmp.Diff(tc.want, carrierPositions(got)); diff != "" {
				t.Errorf("carrier positions (-want +got):\n%s", diff)
			}
			if len(got) != len(vs) {
				t.Errorf("scatter returned %d pods, want %d", len(got), len(vs))
			}
		})
	}
}

// With one pod per round the carriers still go in rounds 1, 6 and 10, as
// the upgraded pods count toward the spread.
func TestScatter_HoldsAcrossRounds(t *testing.T) {
	t.Parallel()
	all := scatterFleet(10, 0, 1, 2)
	var rounds []int
	for round := 1; round <= 10; round++ {
		var waiting []*podView
		for _, v := range all {
			if !v.updated {
				waiting = append(waiting, v)
			}
		}
		ordered := scatter(waiting, all, fooBar, testHash)
		ordered[0].updated = true
		if ordered[0].pod.Labels["foo"] == "bar" {
			rounds = append(rounds, round)
		}
	}
	if diff := cmp.Diff([]int{1, 6, 10}, rounds); diff != "" {
		t.Errorf("rounds upgrading a carrier (-want +got):\n%s", diff)
	}
}

func TestExpandScatterTerms_Wildcard(t *testing.T) {
	t.Parallel()
	ws := []*podWrapper{
		makePod("a").label("zone", "z2"), makePod("b").label("zone", "z1"),
		makePod("c").label("zone", "z2"), makePod("d"),
	}
	terms := appsv1beta1.UpdateScatterStrategy{{Key: "zone", Value: "*"}, {Key: "zone", Value: "z1"}, {Key: "foo", Value: "bar"}}
	want := []appsv1beta1.UpdateScatterTerm{{Key: "zone", Value: "z1"}, {Key: "zone", Value: "z2"}, {Key: "foo", Value: "bar"}}
	if diff := cmp.Diff(want, expandScatterTerms(terms, viewsOf(ws))); diff != "" {
		t.Errorf("expanded terms (-want +got):\n%s", diff)
	}
}

func TestPlan_ScatterStrategy(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1").maxUnavailable(intstr.FromInt32(10))
	v2 := v1.clone().image("sidecar", "agent:2")
	v2.Spec.UpdateStrategy.ScatterStrategy = fooBar
	ps := fleet(t, v1.obj(), v2.obj(), 10, 0, 0)
	for _, i := range []int{2, 3, 4} {
		ps[i].label("foo", "bar")
	}
	got := compute(t, input(t, v2.obj(), pods(ps...)...))
	var positions []int
	for i, u := range got.Updates {
		if slices.Contains([]string{"pod-2", "pod-3", "pod-4"}, u.Pod.Name) {
			positions = append(positions, i+1)
		}
	}
	if diff := cmp.Diff([]int{1, 6, 10}, positions); diff != "" {
		t.Errorf("foo=bar positions in the updates (-want +got):\n%s", diff)
	}
}
