package rollout

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// planBoth plans in with memo and without one; the plans must be equal.
func planBoth(t *testing.T, step string, in Input, memo *Memo) Plan {
	t.Helper()
	want, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Memo = memo
	got, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s: the plan with the memo differs from the plan without (-without +with):\n%s", step, diff)
	}
	return got
}

// bump gives a pod a new resourceVersion, as the API server does at every
// write.
func bump(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	rv, _ := strconv.Atoi(out.ResourceVersion)
	out.ResourceVersion = strconv.Itoa(rv + 1)
	return out
}

// One memo kept over a whole rollout, its pods patched, restarted by the
// kubelet, relabelled, deleted and its spec changed midway, plans each
// round as a plan without a memo does.
func TestMemo_FollowsARollout(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1").cold("log", "log:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(4)).updateSelector("track", "stable")
	v3 := v2.clone().image("log", "log:2")
	ws := fleet(t, v1.obj(), v1.obj(), 24, 0, 0)
	for i, w := range ws {
		w.label("track", []string{"stable", "canary"}[i%4/3])
	}
	c := newCluster(pods(ws...))
	memo := &Memo{}
	set := v2.obj()
	for round := range 16 {
		step := "round " + strconv.Itoa(round)
		switch round {
		case 3:
			// A pod moves out of the update selector, another into it.
			for _, name := range []string{"pod-1", "pod-3"} {
				p := bump(c.pods[name])
				p.Labels["track"] = map[string]string{"pod-1": "canary", "pod-3": "stable"}[name]
				c.pods[name] = p
			}
		case 5:
			// A pod goes away.
			delete(c.pods, "pod-6")
			c.names = slices.DeleteFunc(c.names, func(n string) bool { return n == "pod-6" })
		case 7:
			// The spec changes midway.
			set = v3.obj()
		}
		plan := planBoth(t, step, input(t, set, c.list()...), memo)
		c.apply(t, plan)
		for name, p := range c.pods {
			if k := kubelet(p); !cmp.Equal(k.Status, p.Status) {
				c.pods[name] = bump(k)
			}
		}
		set.Status.Conditions = plan.Status.Conditions
	}
	plan := planBoth(t, "the end", input(t, set, c.list()...), memo)
	if plan.Status.UpdatedPods != plan.Status.MatchedPods-int32(countLabel(c, "track", "canary")) {
		t.Errorf("after the rollout: %d of %d updated, %d canaries", plan.Status.UpdatedPods, plan.Status.MatchedPods, countLabel(c, "track", "canary"))
	}
	if n := len(memo.entries); n != len(c.names) {
		t.Errorf("the memo keeps %d entries for %d pods", n, len(c.names))
	}
}

func countLabel(c *cluster, key, value string) int {
	n := 0
	for _, p := range c.pods {
		if p.Labels[key] == value {
			n++
		}
	}
	return n
}

// What the memo keeps is read again when the SidecarSet changes in a way
// its generation may not show (an object without one, an annotation): its
// update selector, its authority.
func TestMemo_ReadsAgainWhenTheSetChanges(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromString("100%"))
	ps := pods(makePod("a").label("track", "stable").injected(t, v1.obj()), makePod("b").label("track", "canary").injected(t, v1.obj()))
	tests := []struct {
		name          string
		before, after *appsv1beta1.SidecarSet
		want          []string
	}{
		{name: "the update selector", before: v2.clone().updateSelector("track", "stable").obj(),
			after: v2.clone().updateSelector("track", "canary").obj(), want: []string{"b"}},
		{name: "the authority", before: v2.obj(),
			after: func() *appsv1beta1.SidecarSet {
				s := v2.obj()
				s.Annotations = map[string]string{authority.Annotation: authority.VerbAllNamespaces}
				return s
			}(), want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			memo := &Memo{}
			planBoth(t, "before", input(t, tc.before, ps...), memo)
			plan := planBoth(t, "after", input(t, tc.after, ps...), memo)
			if diff := cmp.Diff(tc.want, updatedNames(plan.Updates)); diff != "" {
				t.Errorf("updates after the change (-want +got):\n%s", diff)
			}
		})
	}
}

// The memo orders the pods by their ranks in the last plan: the order is
// the one by namespace and name whatever order the cache lists them in,
// with pods gone, pods new, and pods in another namespace.
func TestMemo_Sorted(t *testing.T) {
	t.Parallel()
	var all []*corev1.Pod
	for i := range 12 {
		p := makePod("pod-" + strconv.Itoa(i)).obj()
		if i%3 == 0 {
			p.Namespace = "a-first"
		}
		p.UID = types.UID("uid-" + strconv.Itoa(i))
		all = append(all, p)
	}
	memo := &Memo{}
	set := newSetView(makeSet("s").obj(), appsv1beta1.Hashes{Hash: "h", WithoutImage: "w"})
	plan := func(step string, listed []*corev1.Pod, wantRanked bool) {
		t.Helper()
		memo.begin(set)
		ranked := memo.byRank(listed) != nil
		got := memo.sorted(listed)
		for i, pod := range got {
			memo.view(pod, i)
		}
		memo.end()
		if want := sortedPods(listed); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", step, names(got), names(want))
		}
		if ranked != wantRanked {
			t.Errorf("%s: ordered by the last plan's ranks: %v, want %v", step, ranked, wantRanked)
		}
	}
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	plan("the first plan", all, false)
	plan("the same pods listed in another order", reversed, true)
	plan("pods gone", slices.Concat(reversed[:3], reversed[6:]), true)
	plan("a pod back", reversed, false)
	changed := slices.Clone(all)
	changed[4] = bump(changed[4])
	plan("a pod changed", changed, true)
	plan("every pod gone", nil, true)
	plan("pods again", all[5:], false)
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

// The memo remembers that a pod's upgrade settled (its sidecars ran ready
// for the min-ready time): later plans, later in time, do not look at it
// again; a longer min-ready reads it again, and finds it settling.
func TestMemo_RemembersASettledUpgrade(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(1))
	ps := fleet(t, v1.obj(), v2.obj(), 2, 0, 0)
	started := t0.Add(-3 * time.Second)
	ps[0].upgradedTo(t, v2.obj()).upgradedAt("s", started).completed()
	ps[0].status("agent").State.Running.StartedAt = metav1.NewTime(started)
	in := input(t, v2.obj(), pods(ps...)...)
	in.Explain = false
	in.Guards = appsv1beta1.RolloutGuards{MinReady: 10 * time.Second}
	memo := &Memo{}
	settled := func() bool {
		e := memo.entries[ps[0].UID]
		return e != nil && e.c.upgradeSettled
	}
	for _, step := range []struct {
		name     string
		now      time.Time
		minReady time.Duration
		upgraded int
		settled  bool
	}{
		{"ready for 3s of 10s", t0, 10 * time.Second, 1, false},
		{"ready for 10s", t0.Add(7 * time.Second), 10 * time.Second, 0, true},
		{"later", t0.Add(time.Minute), 10 * time.Second, 0, true},
		{"min-ready raised to 2m", t0.Add(time.Minute), 2 * time.Minute, 1, false},
	} {
		in.Now, in.Guards.MinReady = step.now, step.minReady
		plan := planBoth(t, step.name, in, memo)
		if len(plan.Upgraded) != step.upgraded || settled() != step.settled {
			t.Errorf("%s: %d pods upgrading, settled in the memo %v; want %d, %v", step.name, len(plan.Upgraded), settled(), step.upgraded, step.settled)
		}
	}
}

// The memo serves the annotations it decoded of a pod that has not changed
// since, and nothing for a changed pod, a pod it never saw, or without a
// memo.
func TestMemo_State(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2")
	c := newCluster(pods(fleet(t, v1.obj(), v1.obj(), 3, 0, 0)...))
	memo := &Memo{}
	planBoth(t, "plan", input(t, v2.obj(), c.list()...), memo)
	pod := c.pods["pod-0"]
	want, err := podstate.Read(pod.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := memo.State(pod)
	if !ok {
		t.Fatal("an unchanged pod: no state")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state (-decoded +memo):\n%s", diff)
	}
	// Served from the memo, not decoded again: what an unchanged pod's
	// annotations hold cannot differ from what was decoded.
	same := pod.DeepCopy()
	same.Annotations = nil
	if _, ok := memo.State(same); !ok {
		t.Error("an unchanged pod was not served from the memo")
	}
	if _, ok := memo.State(bump(pod)); ok {
		t.Error("a changed pod was served from the memo")
	}
	other := pod.DeepCopy()
	other.UID = "never-seen"
	if _, ok := memo.State(other); ok {
		t.Error("a pod the memo never saw was served")
	}
	if _, ok := (*Memo)(nil).State(pod); ok {
		t.Error("a nil memo served a state")
	}
}
