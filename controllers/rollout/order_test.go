package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// fleet builds n pods pod-0..pod-(n-1) injected with v1, created in index
// order; the first `upgraded` are patched to v2, and the first `completed`
// of those run it.
func fleet(tb testing.TB, v1, v2 *appsv1beta1.SidecarSet, n, upgraded, completed int) []*podWrapper {
	tb.Helper()
	out := make([]*podWrapper, n)
	for i := range n {
		p := makePod(fmt.Sprintf("pod-%d", i)).injected(tb, v1).created(t0.Add(time.Duration(i-n) * time.Minute))
		if i < upgraded {
			p.upgradedTo(tb, v2)
			if i < completed {
				p.completed()
			}
		}
		out[i] = p
	}
	return out
}

func TestCompareDefault_Order(t *testing.T) {
	t.Parallel()
	base := func() *podWrapper { return makePod("b") }
	tests := []struct {
		name  string
		first *podWrapper
	}{
		{"an unscheduled pod goes before a scheduled one", func() *podWrapper {
			p := makePod("a")
			p.Spec.NodeName = ""
			return p
		}()},
		{"a pending pod goes before a running one", func() *podWrapper {
			p := makePod("z")
			p.Status.Phase = corev1.PodPending
			return p
		}()},
		{"a not-ready pod goes before a ready one", makePod("z").notReady()},
		{"the more recently ready pod goes first", func() *podWrapper {
			p := makePod("z")
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0)
			return p
		}()},
		{"the pod with more restarts goes first", func() *podWrapper {
			p := makePod("z")
			p.Status.ContainerStatuses[0].RestartCount = 3
			return p
		}()},
		{"with equal container restarts the pod whose native sidecar restarted more goes first", func() *podWrapper {
			p := makePod("z").native("n", "n:1")
			p.Status.InitContainerStatuses[0].RestartCount = 2
			return p
		}()},
		{"the newer pod goes first", makePod("z").created(t0)},
		{"equal pods are ordered by name", makePod("a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &podView{pod: tc.first.obj(), key: tc.first.key()}
			b := &podView{pod: base().obj(), key: base().key()}
			if got := compareDefault(a, b); got >= 0 {
				t.Errorf("compareDefault(first, other) = %d, want < 0", got)
			}
			if got := compareDefault(b, a); got <= 0 {
				t.Errorf("compareDefault(other, first) = %d, want > 0", got)
			}
		})
	}
}

func TestMaxRestarts_NativeSidecars(t *testing.T) {
	t.Parallel()
	restarted := func(p *podWrapper, n int32) *podWrapper {
		p.Status.InitContainerStatuses[0].RestartCount = n
		return p
	}
	tests := []struct {
		name string
		pod  *podWrapper
		want []int32
	}{
		{"a native sidecar's restarts are counted apart from the containers'", restarted(makePod("p").native("n", "n:1"), 2), []int32{0, 2}},
		{"a plain init container's restarts are not counted", restarted(makePod("p").plainInit("i", "i:1"), 2), []int32{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, s := maxRestarts(tc.pod.obj())
			if diff := cmp.Diff(tc.want, []int32{c, s}); diff != "" {
				t.Errorf("[containers, native sidecars] (-want +got):\n%s", diff)
			}
		})
	}
}

// The ordering examples of the reference behaviour (3.10): 20 pods,
// maxUnavailable 10, creation time increasing with the index.
func TestPlan_OrderingExamples(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1").maxUnavailable(intstr.FromInt32(10))
	v2 := v1.clone().image("sidecar", "agent:2")
	tests := []struct {
		name      string
		set       *setWrapper
		completed int
		mutate    func(ps []*podWrapper)
		want      []string
	}{
		{
			name: "with no priority the newest pods go first into the 5 free slots", set: v2, completed: 5,
			want: []string{"pod-19", "pod-18", "pod-17", "pod-16", "pod-15"},
		},
		{
			// OpenKruise: pod-13, pod-10, pod-19, pod-18, pod-17, pod-16, pod-15 (not-ready
			// pods bypass the budget).
			name: "not-ready pods go first and take a share of the budget", set: v2, completed: 5,
			mutate: func(ps []*podWrapper) { ps[10].notReady(); ps[13].notReady() },
			want:   []string{"pod-13", "pod-10", "pod-19", "pod-18", "pod-17"},
		},
		{
			name: "weight priority puts heavier pods first into the 2 free slots",
			set:  v2.clone(), completed: 2,
			mutate: func(ps []*podWrapper) { ps[16].label("test-key", "foo"); ps[15].label("test-key", "bar") },
			want:   []string{"pod-16", "pod-15"},
		},
		{
			name: "order priority puts the larger trailing integer first",
			set:  v2.clone(), completed: 2,
			mutate: func(ps []*podWrapper) {
				for _, p := range ps {
					p.label("key1", "5")
				}
				ps[17].label("key1", "10")
				ps[18].label("key1", "20")
			},
			want: []string{"pod-18", "pod-17"},
		},
	}
	tests[2].set.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
		WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
			{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"test-key": "foo"}}},
			{Weight: 30, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"test-key": "bar"}}},
		},
	}
	tests[3].set.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
		OrderPriority: []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "key1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := fleet(t, v1.obj(), v2.obj(), 20, 10, tc.completed)
			if tc.mutate != nil {
				tc.mutate(ps)
			}
			got := compute(t, input(t, tc.set.obj(), pods(ps...)...))
			if diff := cmp.Diff(tc.want, updatedNames(got.Updates)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSortByOrder_PodsWithoutKeysGoLast(t *testing.T) {
	t.Parallel()
	terms := []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "first"}, {OrderedKey: "second"}}
	tests := []struct {
		name string
		pods []*podWrapper
		want []string
	}{
		{
			// OpenKruise: none, a-1, b-3, c-7 (pods without keys go first).
			name: "pods carrying no key go last",
			pods: []*podWrapper{makePod("none"), makePod("a-1").label("second", "x-1"), makePod("b-3").label("first", "sts-3"), makePod("c-7").label("first", "sts-7")},
			want: []string{"c-7", "b-3", "a-1", "none"},
		},
		{
			name: "a value without trailing digits counts as 0",
			pods: []*podWrapper{makePod("zero").label("first", "abc"), makePod("two").label("first", "v2")},
			want: []string{"two", "zero"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			views := viewsOf(tc.pods)
			sortByOrder(views, terms)
			if diff := cmp.Diff(tc.want, viewNames(views)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrailingInt_Values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{{"sts-10", 10}, {"5", 5}, {"abc", 0}, {"", 0}, {"x99999999999999999999", 1<<63 - 1}}
	for _, tc := range tests {
		t.Run("trailing integer of "+tc.in, func(t *testing.T) {
			t.Parallel()
			if got := trailingInt(tc.in); got != tc.want {
				t.Errorf("trailingInt(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func viewsOf(ws []*podWrapper) []*podView {
	out := make([]*podView, len(ws))
	for i, w := range ws {
		p := w.obj()
		out[i] = &podView{pod: p, key: keyOf(p), classified: classified{selected: true, upgradable: true, consistent: true}}
	}
	return out
}

func viewNames(vs []*podView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.key.Name
	}
	return out
}
