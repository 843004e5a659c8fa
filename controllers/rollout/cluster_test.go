package rollout

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The cluster simulation: the API server applying plans and the kubelet
// restarting changed containers, between planning rounds.

// applyPatch applies a PodUpdate as the API server would, bumping the
// resourceVersion.
func applyPatch(tb testing.TB, pod *corev1.Pod, u PodUpdate) *corev1.Pod {
	tb.Helper()
	if u.ResourceVersion != pod.ResourceVersion {
		tb.Fatalf("patch for %s at resourceVersion %s, pod is at %s", pod.Name, u.ResourceVersion, pod.ResourceVersion)
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, u.Patch, corev1.Pod{})
	if err != nil {
		tb.Fatalf("applying %s: %v", u.Patch, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(patched, out); err != nil {
		tb.Fatal(err)
	}
	rv, _ := strconv.Atoi(out.ResourceVersion)
	out.ResourceVersion = strconv.Itoa(rv + 1)
	return out
}

// kubelet restarts every container and native sidecar whose spec image
// differs from its status (a Kubernetes 1.33+ kubelet), except those on the
// bad images: they wait with their old status. The pod is Ready when every
// container and native sidecar is, as the kubelet computes it. Plain init
// containers are left alone.
func kubelet(pod *corev1.Pod, bad ...string) *corev1.Pod {
	out := pod.DeepCopy()
	ready := corev1.ConditionTrue
	for _, name := range longRunningNames(out) {
		c, st := specContainer(out, name), containerStatus(out, name)
		switch {
		case st.Image == c.Image:
		case slices.Contains(bad, c.Image):
			st.Ready = false
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
		default:
			restarts := st.RestartCount
			*st = runningStatus(c.Name, c.Image)
			st.RestartCount = restarts + 1
		}
		if !st.Ready {
			ready = corev1.ConditionFalse
		}
	}
	out.Status.Conditions[0].Status = ready
	return out
}

// cluster holds pods between planning rounds, applying plans as the API
// server and kubelet would.
type cluster struct {
	pods  map[string]*corev1.Pod
	names []string
}

func newCluster(ps []*corev1.Pod) *cluster {
	c := &cluster{pods: map[string]*corev1.Pod{}}
	for _, p := range ps {
		c.pods[p.Name] = p
		c.names = append(c.names, p.Name)
	}
	return c
}

func (c *cluster) list() []*corev1.Pod {
	out := make([]*corev1.Pod, len(c.names))
	for i, n := range c.names {
		out[i] = c.pods[n]
	}
	return out
}

func (c *cluster) apply(tb testing.TB, plan Plan) {
	tb.Helper()
	for _, u := range append(append([]PodUpdate{}, plan.Updates...), plan.Resets...) {
		c.pods[u.Pod.Name] = applyPatch(tb, c.pods[u.Pod.Name], u)
	}
}

func (c *cluster) kubelet(bad ...string) {
	for n, p := range c.pods {
		c.pods[n] = kubelet(p, bad...)
	}
}

// unavailable counts the pods the planner sees as unavailable.
func (c *cluster) unavailable(tb testing.TB, s *appsv1beta1.SidecarSet) int {
	tb.Helper()
	set := newSetView(s, hashesOf(tb, s))
	n := 0
	for _, p := range c.list() {
		if set.classify(p, 0, InFlight{}, false).unavailable() {
			n++
		}
	}
	return n
}
