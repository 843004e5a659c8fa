package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestClassify_ConsistencyAndReadiness(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("sidecar", "agent:1")
	v2 := v1.clone().image("sidecar", "agent:2")
	type flags struct {
		Updated, Consistent, Ready, Finishing, Upgradable bool
	}
	tests := []struct {
		name string
		pod  *podWrapper
		want flags
	}{
		{"a freshly injected pod is consistent and ready, not updated",
			makePod("p").injected(t, v1.obj()), flags{Consistent: true, Ready: true, Upgradable: true}},
		{"a pod patched to v2 whose old container still runs is finishing",
			makePod("p").injected(t, v1.obj()).upgradedTo(t, v2.obj()), flags{Updated: true, Finishing: true, Ready: true, Upgradable: true}},
		{"a pod patched to v2 whose new container runs is consistent",
			makePod("p").injected(t, v1.obj()).upgradedTo(t, v2.obj()).completed(), flags{Updated: true, Consistent: true, Ready: true, Upgradable: true}},
		{"a not-ready pod is not ready",
			makePod("p").injected(t, v1.obj()).notReady(), flags{Consistent: true, Upgradable: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := v2.obj()
			v := newSetView(s, hashesOf(t, s)).classify(tc.pod.obj(), 0, InFlight{}, false)
			got := flags{v.updated, v.consistent, v.ready, v.finishing, v.upgradable}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSettleInFlight_Entries(t *testing.T) {
	t.Parallel()
	s := makeSet("s").cold("agent", "agent:2").obj()
	h := hashesOf(t, s).Hash
	observed := makePod("observed").injected(t, s).obj()
	pending := makePod("pending").injected(t, makeSet("s").cold("agent", "agent:1").obj()).obj()
	stale := makePod("stale").injected(t, makeSet("s").cold("agent", "agent:1").obj()).obj()
	in := Input{
		SidecarSet: s,
		Now:        t0,
		InFlight: map[types.UID]InFlight{
			"uid-observed": {Hash: h, Since: t0.Add(-time.Minute)},
			"uid-pending":  {Hash: h, Since: t0.Add(-2 * time.Minute)},
			"uid-stale":    {Hash: h, Since: t0.Add(-InFlightTimeout - time.Second)},
			"uid-gone":     {Hash: h, Since: t0},
		},
	}
	byUID := map[types.UID]*corev1.Pod{observed.UID: observed, pending.UID: pending, stale.UID: stale}
	forget, expired, active := newSetView(s, appsv1beta1.Hashes{Hash: h}).settleInFlight(in, byUID)
	got := struct {
		Forget, Expired []types.UID
		Active          map[types.UID]InFlight
		Requeue         time.Duration
	}{forget, expired, active, nextExpiry(t0, active)}
	want := got
	want.Forget = []types.UID{"uid-gone", "uid-observed", "uid-stale"}
	want.Expired = []types.UID{"uid-stale"}
	want.Active = map[types.UID]InFlight{"uid-pending": {Hash: h, Since: t0.Add(-2 * time.Minute)}}
	want.Requeue = 3 * time.Minute
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settled entries (-want +got):\n%s", diff)
	}
}
