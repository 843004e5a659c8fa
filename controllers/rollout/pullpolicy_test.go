package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// A full replace that omits imagePullPolicy and moves the tag to or from
// latest changes the SidecarSet's without-image hash with the defaulted
// policy; the pods are still upgraded in place (OpenKruise 4.1 #2 reports
// them not upgradable). An explicit policy that is not the image's default
// is a real change.
func TestPlan_PullPolicyDefaultedFromTheTag(t *testing.T) {
	t.Parallel()
	// injectedWith makes a pod injected by s whose sidecar containers carry
	// s's defaulted pull policies, as the webhook copies them.
	injectedWith := func(s *setWrapper) *podWrapper {
		obj := s.obj()
		p := makePod("p").injected(t, obj)
		for _, c := range obj.Spec.Containers {
			for _, name := range []string{c.Name, c.Name + "-1", c.Name + "-2"} {
				if pc := podContainer(&p.Pod, name); pc != nil {
					pc.ImagePullPolicy = c.ImagePullPolicy
				}
			}
		}
		return p
	}
	tagged := makeSet("s").cold("agent", "agent:1")
	latest := makeSet("s").cold("agent", "agent:latest")
	hot := makeSet("s").hot("agent", "agent:1", "agent:empty")
	explicit := tagged.clone().image("agent", "agent:2")
	explicit.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	withEnv := latest.clone().mode("agent", "x")
	tests := []struct {
		name              string
		pod               *podWrapper
		set               *setWrapper
		wantUpdates       []string
		wantNotUpgradable int
	}{
		{"agent:1 (IfNotPresent) to agent:latest (Always) is upgraded in place",
			injectedWith(tagged), latest, []string{"p"}, 0},
		{"agent:latest (Always) to agent:1 (IfNotPresent) is upgraded in place",
			injectedWith(latest), tagged, []string{"p"}, 0},
		{"a hot-upgrade sidecar moving to an untagged image is upgraded in place",
			injectedWith(hot), hot.clone().image("agent", "agent"), []string{"p"}, 0},
		{"an explicit Always on a tagged image is a change beyond the image",
			injectedWith(tagged), explicit, nil, 1},
		{"another change with the tag move is still not upgradable",
			injectedWith(tagged), withEnv, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recorded := observedWithoutImage(t, tc.pod.obj(), "s")
			if recorded == hashesOf(t, tc.set.obj()).WithoutImage {
				t.Fatal("the pod records the SidecarSet's without-image hash: the case tests nothing")
			}
			plan := compute(t, input(t, tc.set.obj(), tc.pod.obj()))
			if diff := cmp.Diff(tc.wantUpdates, updatedNames(plan.Updates), cmpEmpty); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			if len(plan.NotUpgradable) != tc.wantNotUpgradable {
				t.Errorf("%d not upgradable, want %d", len(plan.NotUpgradable), tc.wantNotUpgradable)
			}
			for _, u := range plan.Updates {
				if strings.Contains(string(u.Patch), "imagePullPolicy") {
					t.Errorf("the patch changes the pull policy: %s", u.Patch)
				}
			}
		})
	}
}

func observedWithoutImage(tb testing.TB, pod *corev1.Pod, set string) string {
	tb.Helper()
	h, err := podstate.DecodeHashes(pod.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation])
	if err != nil {
		tb.Fatal(err)
	}
	return h[set].Hash
}
