package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const emptyImage = "proxy:empty"

func hotSet(image, rv string) *setWrapper {
	return makeSet("mesh").hot("proxy", image, emptyImage).resourceVersion(rv)
}

// twinState is what the state machine test checks on the pod.
type twinState struct {
	Images   map[string]string
	Working  string
	Versions map[string]string
}

func twinStateOf(t *testing.T, p *corev1.Pod) twinState {
	t.Helper()
	st, err := podstate.Read(p.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	ts := twinState{Images: map[string]string{}, Working: st.WorkingHotUpgrade["proxy"], Versions: map[string]string{}}
	for _, twin := range []string{"proxy-1", "proxy-2"} {
		ts.Images[twin] = specContainer(p, twin).Image
		ts.Versions["version/"+twin] = p.Annotations[podstate.VersionKey(twin)]
		ts.Versions["alt/"+twin] = p.Annotations[podstate.VersionAltKey(twin)]
	}
	return ts
}

func versions(v1, alt1, v2, alt2 string) map[string]string {
	return map[string]string{"version/proxy-1": v1, "alt/proxy-1": alt1, "version/proxy-2": v2, "alt/proxy-2": alt2}
}

func images(i1, i2 string) map[string]string {
	return map[string]string{"proxy-1": i1, "proxy-2": i2}
}

// Three successive hot upgrades of one pod, the third to an image that
// cannot be pulled, then a fix. Each step plans, applies the plan, and lets
// the kubelet act when asked.
func TestPlan_HotUpgradeStateMachine(t *testing.T) {
	t.Parallel()
	c := newCluster(pods(makePod("pod-0").injected(t, hotSet("proxy:1", "100").obj())))
	steps := []struct {
		name        string
		set         *setWrapper
		kubelet     bool
		bad         []string
		wantUpdates int
		wantResets  int
		wantReady   int32
		want        twinState
	}{
		{name: "v2 goes to the empty twin proxy-2, which works at once", set: hotSet("proxy:2", "200"),
			wantUpdates: 1, wantReady: 1, want: twinState{images("proxy:1", "proxy:2"), "proxy-2", versions("1", "200", "200", "1")}},
		{name: "while v2 starts nothing is done and the pod is not ready", set: hotSet("proxy:2", "200"), kubelet: true,
			want: twinState{images("proxy:1", "proxy:2"), "proxy-2", versions("1", "200", "200", "1")}},
		{name: "once v2 runs the old twin proxy-1 is reset to the empty image", set: hotSet("proxy:2", "200"), kubelet: true,
			wantResets: 1, want: twinState{images(emptyImage, "proxy:2"), "proxy-2", versions("0", "200", "200", "0")}},
		{name: "after the reset the pod is ready", set: hotSet("proxy:2", "200"),
			wantReady: 1, want: twinState{images(emptyImage, "proxy:2"), "proxy-2", versions("0", "200", "200", "0")}},
		{name: "v3 goes to the empty twin proxy-1", set: hotSet("proxy:3", "300"), kubelet: true,
			wantUpdates: 1, wantReady: 1, want: twinState{images("proxy:3", "proxy:2"), "proxy-1", versions("300", "200", "200", "300")}},
		{name: "once v3 runs proxy-2 is reset", set: hotSet("proxy:3", "300"), kubelet: true,
			wantResets: 1, want: twinState{images("proxy:3", emptyImage), "proxy-1", versions("300", "0", "0", "300")}},
		{name: "v4 goes to proxy-2 but cannot be pulled", set: hotSet("proxy:bad", "400"), kubelet: true, bad: []string{"proxy:bad"},
			wantUpdates: 1, wantReady: 1, want: twinState{images("proxy:3", "proxy:bad"), "proxy-2", versions("300", "400", "400", "300")}},
		{name: "the stuck twin is not reset and the pod is not ready", set: hotSet("proxy:bad", "400"), kubelet: true, bad: []string{"proxy:bad"},
			want: twinState{images("proxy:3", "proxy:bad"), "proxy-2", versions("300", "400", "400", "300")}},
		{name: "the fix v5 replaces the stuck twin, not the working v3", set: hotSet("proxy:5", "500"), kubelet: true,
			wantUpdates: 1, want: twinState{images("proxy:3", "proxy:5"), "proxy-2", versions("300", "500", "500", "300")}},
		{name: "once v5 runs proxy-1 is reset", set: hotSet("proxy:5", "500"), kubelet: true,
			wantResets: 1, want: twinState{images(emptyImage, "proxy:5"), "proxy-2", versions("0", "500", "500", "0")}},
		{name: "the pod is ready on v5", set: hotSet("proxy:5", "500"),
			wantReady: 1, want: twinState{images(emptyImage, "proxy:5"), "proxy-2", versions("0", "500", "500", "0")}},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) {
			plan := compute(t, input(t, st.set.obj(), c.list()...))
			got := []int{len(plan.Updates), len(plan.Resets), int(plan.Status.ReadyPods)}
			if diff := cmp.Diff([]int{st.wantUpdates, st.wantResets, int(st.wantReady)}, got); diff != "" {
				t.Errorf("[updates, resets, readyPods] (-want +got):\n%s", diff)
			}
			c.apply(t, plan)
			if diff := cmp.Diff(st.want, twinStateOf(t, c.pods["pod-0"])); diff != "" {
				t.Errorf("twins after the plan (-want +got):\n%s", diff)
			}
			if st.kubelet {
				c.kubelet(st.bad...)
			}
		}) {
			return
		}
	}
}

func TestChooseTwin_Rules(t *testing.T) {
	t.Parallel()
	s := hotSet("proxy:3", "300").obj()
	base := func() *podWrapper { return makePod("p").injected(t, hotSet("proxy:1", "100").obj()) }
	tests := []struct {
		name      string
		pod       *podWrapper
		wantTwins []string
	}{
		{"the empty twin is chosen", base(), []string{"proxy-2", "proxy-1"}},
		{"the first twin is checked first when it is empty", func() *podWrapper {
			p := base().working("proxy", "proxy-2")
			p.spec("proxy-1").Image = emptyImage
			return p
		}(), []string{"proxy-1", "proxy-2"}},
		{"with no empty twin the one not ready is chosen", func() *podWrapper {
			p := base()
			p.spec("proxy-2").Image = "proxy:2"
			p.status("proxy-1").Ready = false
			return p
		}(), []string{"proxy-1", "proxy-2"}},
		{"with both twins ready the idle one is chosen", func() *podWrapper {
			p := base().working("proxy", "proxy-2")
			p.spec("proxy-2").Image = "proxy:2"
			return p
		}(), []string{"proxy-1", "proxy-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := newSetView(s, hashesOf(t, s))
			v := set.classify(tc.pod.obj(), 0, InFlight{}, false)
			chosen, other, ok := set.chooseTwin(v, set.hot[0])
			if diff := cmp.Diff(tc.wantTwins, []string{chosen, other}); diff != "" || !ok {
				t.Errorf("chooseTwin ok=%v (-want +got):\n%s", ok, diff)
			}
		})
	}
}

func TestBuildReset_Conditions(t *testing.T) {
	t.Parallel()
	s := hotSet("proxy:2", "200").obj()
	// upgraded: proxy-2 runs v2, the idle proxy-1 still has v1.
	upgraded := func() *podWrapper {
		p := makePod("p").injected(t, hotSet("proxy:1", "100").obj()).working("proxy", "proxy-2")
		p.spec("proxy-2").Image = "proxy:2"
		*p.status("proxy-2") = runningStatus("proxy-2", "proxy:2")
		return p.inPlace("mesh", map[string]string{"proxy-2": imageID(emptyImage)})
	}
	tests := []struct {
		name string
		pod  *podWrapper
		want bool
	}{
		{"a pod whose new twin runs and is ready is reset", upgraded(), true},
		{"a pod whose idle twin is empty needs no reset", makePod("p").injected(t, s), false},
		{"a pod whose new twin did not start yet is not reset", func() *podWrapper {
			p := upgraded()
			*p.status("proxy-2") = runningStatus("proxy-2", emptyImage)
			return p
		}(), false},
		{"a not-ready pod whose containers but the idle twin are ready is reset", func() *podWrapper {
			p := upgraded().notReady()
			p.status("proxy-1").Ready = false
			return p
		}(), true},
		{"a not-ready pod with a not-ready app container is not reset", func() *podWrapper {
			p := upgraded().notReady()
			p.status("app").Ready = false
			return p
		}(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := newSetView(s, hashesOf(t, s))
			_, got := set.buildReset(set.classify(tc.pod.obj(), 0, InFlight{}, false), t0)
			if got != tc.want {
				t.Errorf("reset = %v, want %v", got, tc.want)
			}
		})
	}
}

// A reset does not pre-empt the upgrades of other pods; pause blocks both.
func TestPlan_ResetsAndUpdatesShareARound(t *testing.T) {
	t.Parallel()
	v1 := hotSet("proxy:1", "100")
	v2 := hotSet("proxy:2", "200").maxUnavailable(intstr.FromInt32(5))
	ready := makePod("pod-0").injected(t, v1.obj())
	ready.upgradedHot(t, v2.obj())
	fresh := makePod("pod-1").injected(t, v1.obj())
	tests := []struct {
		name        string
		set         *setWrapper
		wantUpdates []string
		wantResets  []string
	}{
		// OpenKruise: resets pod-0 and returns, upgrading nothing this round.
		{"one pod is reset while another is upgraded", v2, []string{"pod-1"}, []string{"pod-0"}},
		{"pause blocks the reset and the upgrade", v2.clone().paused(), []string{}, []string{}},
		{"NotUpdate blocks the reset and the upgrade", v2.clone().notUpdate(), []string{}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := compute(t, input(t, tc.set.obj(), pods(ready, fresh)...))
			if diff := cmp.Diff(tc.wantUpdates, updatedNames(plan.Updates)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResets, updatedNames(plan.Resets)); diff != "" {
				t.Errorf("resets (-want +got):\n%s", diff)
			}
		})
	}
}

// upgradedHot makes the pod look hot-upgraded to s and its new twin running:
// the second twin has s's image and works.
func (p *podWrapper) upgradedHot(t *testing.T, s *appsv1beta1.SidecarSet) *podWrapper {
	t.Helper()
	h := hashesOf(t, s)
	p.spec("proxy-2").Image = s.Spec.Containers[0].Image
	*p.status("proxy-2") = runningStatus("proxy-2", s.Spec.Containers[0].Image)
	p.working("proxy", "proxy-2").inPlace(s.Name, map[string]string{"proxy-2": imageID(emptyImage)})
	return p.setHash(s.Name, h.Hash, h.WithoutImage, []string{"proxy"})
}
