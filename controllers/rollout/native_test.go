package rollout

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Native sidecars: init containers with restartPolicy Always, upgraded in
// place like containers.

var always = corev1.ContainerRestartPolicyAlways

// native adds a native sidecar to the SidecarSet's init containers.
func (s *setWrapper) native(name, image string) *setWrapper {
	s.Spec.InitContainers = append(s.Spec.InitContainers, appsv1beta1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: image, RestartPolicy: &always},
	})
	return s
}

// nativeHot adds a hot-upgrade native sidecar to the init containers.
func (s *setWrapper) nativeHot(name, image, empty string) *setWrapper {
	s.native(name, image)
	s.Spec.InitContainers[len(s.Spec.InitContainers)-1].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
		UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: empty,
	}
	return s
}

// plainInit adds a plain init container (no restartPolicy).
func (s *setWrapper) plainInit(name, image string) *setWrapper {
	s.Spec.InitContainers = append(s.Spec.InitContainers, appsv1beta1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: image},
	})
	return s
}

// native adds a running native sidecar to the pod.
func (p *podWrapper) native(name, image string) *podWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: image, RestartPolicy: &always})
	p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, runningStatus(name, image))
	return p
}

// plainInit adds a plain init container that ran to completion.
func (p *podWrapper) plainInit(name, image string) *podWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: image})
	p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID(image), Ready: true,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}},
	})
	return p
}

// nativeSet is the SidecarSet of these tests: a plain init container, a
// native sidecar and a container.
func nativeSet() *setWrapper {
	return makeSet("s").plainInit("init", "init:1").native("native", "native:1").cold("agent", "agent:1")
}

func TestPlan_NativeSidecarPatch(t *testing.T) {
	t.Parallel()
	v1 := nativeSet()
	h1 := hashesOf(t, v1.obj())
	type spec struct {
		Containers     []map[string]string `json:"containers,omitempty"`
		InitContainers []map[string]string `json:"initContainers,omitempty"`
	}
	image := func(name, image string) []map[string]string {
		return []map[string]string{{"name": name, "image": image}}
	}
	tests := []struct {
		name     string
		set      *setWrapper
		wantSpec spec
		// wantRecorded are the old imageIDs the in-place state records.
		wantRecorded map[string]string
		wantInit     []corev1.Container
		wantAgent    string
	}{
		{
			name: "a native sidecar's new image goes to spec.initContainers", set: v1.clone().image("native", "native:2"),
			wantSpec:     spec{InitContainers: image("native", "native:2")},
			wantRecorded: map[string]string{"native": imageID("native:1")},
			wantInit: []corev1.Container{
				{Name: "init", Image: "init:1"}, {Name: "native", Image: "native:2", RestartPolicy: &always},
			},
			wantAgent: "agent:1",
		},
		{
			name: "new images of both go each to its own list in one patch",
			set:  v1.clone().image("native", "native:2").image("agent", "agent:2"),
			wantSpec: spec{
				Containers: image("agent", "agent:2"), InitContainers: image("native", "native:2"),
			},
			wantRecorded: map[string]string{"native": imageID("native:1"), "agent": imageID("agent:1")},
			wantInit: []corev1.Container{
				{Name: "init", Image: "init:1"}, {Name: "native", Image: "native:2", RestartPolicy: &always},
			},
			wantAgent: "agent:2",
		},
		{
			// The hash covers the plain init container (a native sidecar
			// exists): the pod gets the new hash and no image change.
			name: "a plain init container's new image is never patched", set: v1.clone().image("init", "init:2"),
			wantSpec: spec{},
			wantInit: []corev1.Container{
				{Name: "init", Image: "init:1"}, {Name: "native", Image: "native:1", RestartPolicy: &always},
			},
			wantAgent: "agent:1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := tc.set.obj()
			h := hashesOf(t, set)
			if h.Hash == h1.Hash || h.WithoutImage != h1.WithoutImage {
				t.Fatalf("the change must be an image-only change of the hash: %+v -> %+v", h1, h)
			}
			pod := makePod("p").injected(t, v1.obj()).obj()
			plan := compute(t, input(t, set, pod))
			if len(plan.Updates) != 1 {
				t.Fatalf("got %d updates, want 1 (blocked: %v)", len(plan.Updates), plan.Blocked)
			}
			var patch struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec spec `json:"spec"`
			}
			if err := json.Unmarshal(plan.Updates[0].Patch, &patch); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSpec, patch.Spec); diff != "" {
				t.Errorf("patched spec (-want +got):\n%s", diff)
			}
			var gotRecorded map[string]string
			if ann, ok := patch.Metadata.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation]; ok {
				state, err := podstate.DecodeInPlaceState(ann)
				if err != nil {
					t.Fatal(err)
				}
				gotRecorded = map[string]string{}
				for name, st := range state["s"].LastContainerStatuses {
					gotRecorded[name] = st.ImageID
				}
			}
			if diff := cmp.Diff(tc.wantRecorded, gotRecorded); diff != "" {
				t.Errorf("recorded old imageIDs (-want +got):\n%s", diff)
			}

			patched := applyPatch(t, pod, plan.Updates[0])
			if diff := cmp.Diff(tc.wantInit, patched.Spec.InitContainers); diff != "" {
				t.Errorf("init containers after the patch (-want +got):\n%s", diff)
			}
			if got := specContainer(patched, "agent").Image; got != tc.wantAgent {
				t.Errorf("agent image after the patch = %s, want %s", got, tc.wantAgent)
			}
			if got := newSetView(makeSet("s").obj(), h).observedHash(patched); got != h.Hash {
				t.Errorf("hash after the patch = %s, want the SidecarSet's %s", got, h.Hash)
			}
		})
	}
}

// One pod against v2 (the native sidecar's image changed): is its update
// complete, is it finishing, unavailable, counted ready?
func TestPlan_NativeSidecarCompletion(t *testing.T) {
	t.Parallel()
	v1 := nativeSet()
	v2 := v1.clone().image("native", "native:2")
	bad := v1.clone().image("native", "native:bad")
	type outcome struct {
		Consistent, Finishing, Unavailable bool
		Status                             appsv1beta1.SidecarSetStatus
	}
	tests := []struct {
		name string
		pod  *podWrapper
		want outcome
	}{
		{
			name: "a pod on the old images never changed in place is consistent and ready",
			pod:  makePod("p").injected(t, v1.obj()),
			want: outcome{Consistent: true, Status: appsv1beta1.SidecarSetStatus{MatchedPods: 1, ReadyPods: 1}},
		},
		{
			name: "a native sidecar whose status still shows the old image is finishing its update",
			pod:  makePod("p").injected(t, v1.obj()).upgradedTo(t, v2.obj()),
			want: outcome{Finishing: true, Unavailable: true, Status: appsv1beta1.SidecarSetStatus{MatchedPods: 1, UpdatedPods: 1}},
		},
		{
			name: "a native sidecar whose initContainerStatus shows the new image and imageID is complete",
			pod:  makePod("p").injected(t, v1.obj()).upgradedTo(t, v2.obj()).completed(),
			want: outcome{Consistent: true, Status: appsv1beta1.SidecarSetStatus{
				MatchedPods: 1, UpdatedPods: 1, ReadyPods: 1, UpdatedReadyPods: 1,
			}},
		},
		{
			name: "a native sidecar waiting on an image that cannot be pulled is not complete",
			pod: func() *podWrapper {
				p := makePod("p").injected(t, v1.obj()).upgradedTo(t, bad.obj())
				p.stuck("native")
				return p
			}(),
			want: outcome{Unavailable: true, Status: appsv1beta1.SidecarSetStatus{MatchedPods: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := v2.obj()
			pod := tc.pod.obj()
			v := newSetView(set, hashesOf(t, set)).classify(pod, 0, InFlight{}, false)
			got := outcome{Consistent: v.consistent, Finishing: v.finishing, Unavailable: v.unavailable()}
			got.Status = podCounts(compute(t, input(t, set, pod)).Status)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// Four pods, maxUnavailable 1: a native sidecar image that cannot be pulled
// stops the rollout after one pod; the fix goes to that pod first, then the
// rollout runs to the end.
func TestPlan_NativeSidecarBadImageHeldByMaxUnavailable(t *testing.T) {
	t.Parallel()
	v1 := nativeSet()
	bad := v1.clone().image("native", "native:bad").maxUnavailable(intstr.FromInt32(1))
	fix := v1.clone().image("native", "native:3").maxUnavailable(intstr.FromInt32(1))
	c := newCluster(pods(fleet(t, v1.obj(), v1.obj(), 4, 0, 0)...))
	steps := []struct {
		name            string
		set             *setWrapper
		wantUpdates     []string
		wantReason      string
		wantUnavailable int
	}{
		{name: "the bad image goes to one pod, the newest", set: bad,
			wantUpdates: []string{"pod-3"}, wantReason: appsv1beta1.ReasonUpdating, wantUnavailable: 1},
		{name: "the stuck pod holds maxUnavailable and nothing else is upgraded", set: bad,
			wantUpdates: []string{}, wantReason: appsv1beta1.ReasonWaitingForUnavailablePods, wantUnavailable: 1},
		{name: "the fix goes to the stuck pod first", set: fix,
			wantUpdates: []string{"pod-3"}, wantReason: appsv1beta1.ReasonUpdating, wantUnavailable: 1},
		{name: "then to the next pod", set: fix,
			wantUpdates: []string{"pod-2"}, wantReason: appsv1beta1.ReasonUpdating, wantUnavailable: 1},
		{name: "one pod at a time", set: fix,
			wantUpdates: []string{"pod-1"}, wantReason: appsv1beta1.ReasonUpdating, wantUnavailable: 1},
		{name: "to the last pod", set: fix,
			wantUpdates: []string{"pod-0"}, wantReason: appsv1beta1.ReasonUpdating, wantUnavailable: 1},
		{name: "the rollout is complete: Progressing is removed", set: fix,
			wantUpdates: []string{}, wantReason: ""},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) {
			set := st.set.obj()
			plan := compute(t, input(t, set, c.list()...))
			if diff := cmp.Diff(st.wantUpdates, updatedNames(plan.Updates)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			if got := conditionReason(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); got != st.wantReason {
				t.Errorf("Progressing reason = %s, want %s", got, st.wantReason)
			}
			c.apply(t, plan)
			if got := c.unavailable(t, set); got != st.wantUnavailable {
				t.Errorf("%d pods unavailable after the plan, want %d", got, st.wantUnavailable)
			}
			c.kubelet("native:bad")
		}) {
			return
		}
	}
	plan := compute(t, input(t, fix.obj(), c.list()...))
	if diff := cmp.Diff(appsv1beta1.SidecarSetStatus{MatchedPods: 4, UpdatedPods: 4, ReadyPods: 4, UpdatedReadyPods: 4}, podCounts(plan.Status)); diff != "" {
		t.Errorf("final status (-want +got):\n%s", diff)
	}
	for _, p := range c.list() {
		if st := containerStatus(p, "native"); st.Image != "native:3" || !st.Ready {
			t.Errorf("pod %s native sidecar status = %s ready=%v, want native:3 ready", p.Name, st.Image, st.Ready)
		}
	}
}

// nativeTwins is what the native hot-upgrade test checks: the pod's init
// containers as the API server has them, and the working twin.
type nativeTwins struct {
	Init    map[string]string
	Working string
}

func nativeTwinsOf(t *testing.T, p *corev1.Pod) nativeTwins {
	t.Helper()
	st, err := podstate.Read(p.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	out := nativeTwins{Init: map[string]string{}, Working: st.WorkingHotUpgrade["proxy"]}
	for _, c := range p.Spec.InitContainers {
		out.Init[c.Name] = c.Image
	}
	return out
}

// A hot-upgrade native sidecar follows the state machine of hot-upgrade
// containers, its twins living in spec.initContainers.
func TestPlan_NativeHotUpgradeStateMachine(t *testing.T) {
	t.Parallel()
	hot := func(image, rv string) *setWrapper {
		return makeSet("mesh").nativeHot("proxy", image, emptyImage).cold("agent", "agent:1").resourceVersion(rv)
	}
	init := func(i1, i2 string) map[string]string { return map[string]string{"proxy-1": i1, "proxy-2": i2} }
	c := newCluster(pods(makePod("pod-0").injected(t, hot("proxy:1", "100").obj())))
	steps := []struct {
		name        string
		set         *setWrapper
		kubelet     bool
		wantUpdates int
		wantResets  int
		wantReady   int32
		want        nativeTwins
	}{
		{name: "v2 goes to the empty init twin proxy-2, which works at once", set: hot("proxy:2", "200"),
			wantUpdates: 1, wantReady: 1, want: nativeTwins{init("proxy:1", "proxy:2"), "proxy-2"}},
		{name: "while v2 starts nothing is done and the pod is not ready", set: hot("proxy:2", "200"), kubelet: true,
			want: nativeTwins{init("proxy:1", "proxy:2"), "proxy-2"}},
		{name: "once the init status of proxy-2 shows v2 the old twin is reset", set: hot("proxy:2", "200"), kubelet: true,
			wantResets: 1, want: nativeTwins{init(emptyImage, "proxy:2"), "proxy-2"}},
		{name: "after the reset the pod is ready", set: hot("proxy:2", "200"),
			wantReady: 1, want: nativeTwins{init(emptyImage, "proxy:2"), "proxy-2"}},
		{name: "v3 goes to the empty init twin proxy-1", set: hot("proxy:3", "300"), kubelet: true,
			wantUpdates: 1, wantReady: 1, want: nativeTwins{init("proxy:3", "proxy:2"), "proxy-1"}},
		{name: "once v3 runs proxy-2 is reset", set: hot("proxy:3", "300"), kubelet: true,
			wantResets: 1, want: nativeTwins{init("proxy:3", emptyImage), "proxy-1"}},
		{name: "the pod is ready on v3", set: hot("proxy:3", "300"),
			wantReady: 1, want: nativeTwins{init("proxy:3", emptyImage), "proxy-1"}},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) {
			plan := compute(t, input(t, st.set.obj(), c.list()...))
			got := []int{len(plan.Updates), len(plan.Resets), int(plan.Status.ReadyPods)}
			if diff := cmp.Diff([]int{st.wantUpdates, st.wantResets, int(st.wantReady)}, got); diff != "" {
				t.Errorf("[updates, resets, readyPods] (-want +got):\n%s", diff)
			}
			c.apply(t, plan)
			pod := c.pods["pod-0"]
			if diff := cmp.Diff(st.want, nativeTwinsOf(t, pod)); diff != "" {
				t.Errorf("init twins after the plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"app", "agent"}, containerNames(pod.Spec.Containers)); diff != "" {
				t.Errorf("containers after the plan (-want +got):\n%s", diff)
			}
			if st.kubelet {
				c.kubelet()
			}
		}) {
			return
		}
	}
	// The version annotations moved as for container twins (hotupgrade.go).
	if diff := cmp.Diff(versions("300", "0", "0", "300"), twinStateOf(t, c.pods["pod-0"]).Versions); diff != "" {
		t.Errorf("version annotations (-want +got):\n%s", diff)
	}
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, len(cs))
	for i := range cs {
		out[i] = cs[i].Name
	}
	return out
}
