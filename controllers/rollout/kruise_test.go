package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

// A pod OpenKruise injected (test/fixtures/kruise-v1.8), upgraded by the planner to the SidecarSet
// OpenKruise upgraded it to, ends as OpenKruise left its own: the same
// images, and the same annotations apart from timestamps (hash entries, in-
// place state with the image IDs it recorded, hot-upgrade bookkeeping).
func TestPlan_UpgradesOpenKruisePodsAsOpenKruiseDid(t *testing.T) {
	t.Parallel()
	sets := fixtures.MustSidecarSets(t, fixtures.Kruise18, "sidecarsets-upgraded.yaml")
	injected := fixtures.MustList[corev1.Pod](t, fixtures.Kruise18, "pods-injected.yaml")
	upgraded := fixtures.MustList[corev1.Pod](t, fixtures.Kruise18, "pods-upgraded.yaml")
	for _, tc := range []struct{ pod, set string }{{"basic", "fx-basic"}, {"hot", "fx-hot"}} {
		t.Run(tc.pod, func(t *testing.T) {
			t.Parallel()
			set := fixtures.MustNamed(t, sets, tc.set, func(s *appsv1beta1.SidecarSet) string { return s.Name }).DeepCopy()
			want := fixtures.MustNamed(t, upgraded, tc.pod, func(p *corev1.Pod) string { return p.Name })
			pod := fixtures.MustNamed(t, injected, tc.pod, func(p *corev1.Pod) string { return p.Name }).DeepCopy()
			appsv1beta1.SetDefaults(set)
			// A hot upgrade records the SidecarSet's resourceVersion at the
			// time: give it the one OpenKruise saw.
			if v, ok := want.Annotations[podstate.VersionKey("sidecar-2")]; ok {
				set.ResourceVersion = v
			}
			for range 4 {
				in := input(t, set, pod)
				in.LatestRevision = set.Status.LatestRevision
				plan := compute(t, in)
				for _, u := range append(plan.Updates, plan.Resets...) {
					pod = applyPatch(t, pod, u)
				}
				pod = simulatedKubelet(pod)
			}
			for _, c := range want.Spec.Containers {
				got := ""
				if sc := specContainer(pod, c.Name); sc != nil {
					got = sc.Image
				}
				if got != c.Image {
					t.Errorf("container %s has image %q, OpenKruise's %q", c.Name, got, c.Image)
				}
			}
			if diff := cmp.Diff(kruiseRecord(t, want), kruiseRecord(t, pod)); diff != "" {
				t.Errorf("annotations, OpenKruise's (-) and ours (+):\n%s", diff)
			}
		})
	}
}

// simulatedKubelet restarts the containers whose image changed, reporting
// image IDs as the kwok simulation behind the fixtures does.
func simulatedKubelet(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	for i := range out.Status.ContainerStatuses {
		st := &out.Status.ContainerStatuses[i]
		if c := specContainer(out, st.Name); c != nil && c.Image != st.Image {
			st.Image, st.ImageID = c.Image, "sim-registry/"+c.Image+"@sha256:simulated"
			st.RestartCount++
		}
	}
	return out
}

// kruiseRecord is a pod's annotations without kubectl's and without the
// timestamps of the SidecarSet annotations.
func kruiseRecord(tb testing.TB, pod *corev1.Pod) map[string]any {
	tb.Helper()
	st, err := podstate.Read(pod.Annotations)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range pod.Annotations {
		out[k] = v
	}
	delete(out, "kubectl.kubernetes.io/last-applied-configuration")
	for _, h := range []podstate.Hashes{st.Hashes, st.HashesWithoutImage} {
		for name, e := range h {
			e.UpdateTimestamp = metav1.Time{}
			h[name] = e
		}
	}
	for _, s := range st.InPlace {
		s.UpdateTimestamp = metav1.Time{}
	}
	out[appsv1beta1.SidecarSetHashAnnotation] = st.Hashes
	out[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = st.HashesWithoutImage
	out[appsv1beta1.InPlaceUpdateStateAnnotation] = st.InPlace
	return out
}
