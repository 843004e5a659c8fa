package cachetransform

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

func TestTrimPod_KeepsWhatTheOperatorReads(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	pod := builder.RunningPod()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "mesh", Image: "mesh:1", RestartPolicy: &always,
		Env: []corev1.EnvVar{{Name: "A", Value: "1"}}})
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "2"}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	pod.Spec.ServiceAccountName = "web"
	pod.Status.PodIP = "10.0.0.1"
	pod.Status.ContainerStatuses[0].RestartCount = 2
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	started := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", Message: "crashed", StartedAt: started, FinishedAt: metav1.Now(), ContainerID: "containerd://1"}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "mesh", Image: "mesh:1", ImageID: "id-mesh", Ready: true, Started: new(true)}}

	got, err := NewPodCache().Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := builder.RunningPod()
	want.Spec.InitContainers = append(want.Spec.InitContainers, corev1.Container{Name: "mesh", Image: "mesh:1", RestartPolicy: &always})
	want.Status.ContainerStatuses[0].RestartCount = 2
	want.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	// The failure budget reads when the last instance started, and how it
	// ended (a sidecar that crashed since its upgrade).
	want.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", StartedAt: started}}
	want.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "mesh", Image: "mesh:1", ImageID: "id-mesh", Ready: true, Started: new(true)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}
	if len(pod.Spec.Containers[0].Env) != 1 {
		t.Error("TrimPod modified its input")
	}

	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	if got, err := NewPodCache().Trim(other); err != nil || got != other {
		t.Errorf("NewPodCache().Trim(namespace) = %v, %v; want it unchanged", got, err)
	}
}

// The planner compares a pod's pull policies with the SidecarSet's (a pull
// policy defaulted from a new tag), resizes its sidecars' resources and
// computes resourcesPolicies from the other containers', and tells which
// pods a recreation would run again, so the cache keeps them.
func TestTrimPod_KeepsWhatThePlannerReads(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", ImagePullPolicy: corev1.PullAlways, RestartPolicy: &always,
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
		Containers: []corev1.Container{{Name: "sidecar", Image: "centos:6.7", ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sleep", "999d"}, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
			}}},
		RestartPolicy: corev1.RestartPolicyAlways,
		Hostname:      "web",
	}}
	got, err := NewPodCache().Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", ImagePullPolicy: corev1.PullAlways, RestartPolicy: &always}},
		Containers: []corev1.Container{{Name: "sidecar", Image: "centos:6.7", ImagePullPolicy: corev1.PullIfNotPresent,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		RestartPolicy: corev1.RestartPolicyAlways,
	}
	if diff := cmp.Diff(want, got.(*corev1.Pod).Spec); diff != "" {
		t.Errorf("trimmed spec (-want +got):\n%s", diff)
	}
}

// The pods of a workload run the same containers: the cache keeps one copy
// of them, and of their resources, and a pod whose containers differ in
// anything the operator reads gets its own.
func TestTrimPod_SharesEqualContainers(t *testing.T) {
	t.Parallel()
	native := corev1.ContainerRestartPolicyAlways
	pod := func(image, cpu string) *corev1.Pod {
		return &corev1.Pod{
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &native}},
				Containers: []corev1.Container{{Name: "app", Image: image, Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
	}
	c := NewPodCache()
	trim := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		got, err := c.Trim(p)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*corev1.Pod)
	}
	a, b := trim(pod("app:1", "100m")), trim(pod("app:1", "100m"))
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Spec.InitContainers[0] != &b.Spec.InitContainers[0] {
		t.Error("two pods with the same containers hold a copy each")
	}
	if a.Status.ContainerStatuses[0].Resources != b.Status.ContainerStatuses[0].Resources {
		t.Error("two container statuses with the same resources hold a copy each")
	}
	if *a.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("restart policy %v, want Always", *a.Spec.InitContainers[0].RestartPolicy)
	}
	for _, other := range []*corev1.Pod{trim(pod("app:2", "100m")), trim(pod("app:1", "200m"))} {
		if &other.Spec.Containers[0] == &a.Spec.Containers[0] {
			t.Errorf("a pod running %s with %v shares the containers of app:1 with 100m", other.Spec.Containers[0].Image,
				other.Spec.Containers[0].Resources.Requests)
		}
	}
	if got := trim(pod("app:1", "200m")).Status.ContainerStatuses[0].Resources.Requests.Cpu().String(); got != "200m" {
		t.Errorf("status requests cpu %s, want 200m", got)
	}
}

// Pods injected in the same second with the same SidecarSets hold equal
// annotations once compacted: the cache keeps one map of them.
func TestTrimPod_SharesEqualAnnotations(t *testing.T) {
	t.Parallel()
	c := NewPodCache()
	pod := func(at string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			appsv1beta1.SidecarSetHashAnnotation: `{"log":{"updateTimestamp":"` + at + `","hash":"h1","sidecarSetName":"log","sidecarList":["log"]}}`,
			appsv1beta1.SidecarSetListAnnotation: "log",
		}}}
	}
	trim := func(p *corev1.Pod) map[string]string {
		t.Helper()
		got, err := c.Trim(p)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*corev1.Pod).Annotations
	}
	a, b, other := trim(pod("2026-11-24T10:00:00Z")), trim(pod("2026-11-24T10:00:00Z")), trim(pod("2026-11-24T10:00:01Z"))
	if _, ok := a[podstate.CachedKey]; !ok {
		t.Fatalf("annotations not compacted: %v", a)
	}
	same := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a, b) {
		t.Error("equal annotations are not shared")
	}
	if same(a, other) || other[podstate.CachedKey] == a[podstate.CachedKey] {
		t.Error("annotations of a pod injected another second are shared")
	}
}

// Pods started and ready in the same second report the same container
// statuses and conditions: the cache keeps one copy of each list; a pod
// started another second, or whose container waits, keeps its own.
func TestTrimPod_SharesEqualStatuses(t *testing.T) {
	t.Parallel()
	c := NewPodCache()
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 24, 10, 0, sec, 0, time.UTC)) }
	pod := func(started int, state corev1.ContainerState) *corev1.Pod {
		if state == (corev1.ContainerState{}) {
			state.Running = &corev1.ContainerStateRunning{StartedAt: at(started)}
		}
		return &corev1.Pod{Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(started)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", Ready: true, State: state}},
		}}
	}
	trim := func(p *corev1.Pod) *corev1.PodStatus {
		t.Helper()
		got, err := c.Trim(p)
		if err != nil {
			t.Fatal(err)
		}
		return &got.(*corev1.Pod).Status
	}
	a, b := trim(pod(1, corev1.ContainerState{})), trim(pod(1, corev1.ContainerState{}))
	if &a.ContainerStatuses[0] != &b.ContainerStatuses[0] || &a.Conditions[0] != &b.Conditions[0] {
		t.Error("equal statuses or conditions are not shared")
	}
	if len(a.Conditions) != 1 || a.Conditions[0].Type != corev1.PodReady {
		t.Errorf("conditions %v, want Ready only", a.Conditions)
	}
	later := trim(pod(2, corev1.ContainerState{}))
	waiting := trim(pod(1, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}))
	if &later.ContainerStatuses[0] == &a.ContainerStatuses[0] || &later.Conditions[0] == &a.Conditions[0] ||
		!later.ContainerStatuses[0].State.Running.StartedAt.Equal(new(at(2))) {
		t.Errorf("a pod started a second later shares the statuses: %+v", later.ContainerStatuses[0].State)
	}
	if &waiting.ContainerStatuses[0] == &a.ContainerStatuses[0] || waiting.ContainerStatuses[0].State.Waiting == nil ||
		waiting.ContainerStatuses[0].State.Waiting.Reason != "CrashLoopBackOff" {
		t.Errorf("a waiting container shares a running one's status: %+v", waiting.ContainerStatuses[0].State)
	}
}
