package upgrade

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func sidecar(name, image string) appsv1beta1.SidecarContainer {
	return appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: image}}
}

func native(name, image string) appsv1beta1.SidecarContainer {
	c := sidecar(name, image)
	c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	return c
}

// spec returns a defaulted spec with containers agent and proxy and a plain
// init container, mutated.
func spec(mutate ...func(*appsv1beta1.SidecarSetSpec)) *appsv1beta1.SidecarSetSpec {
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1beta1.SidecarSetSpec{
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Containers:     []appsv1beta1.SidecarContainer{sidecar("agent", "agent:1"), sidecar("proxy", "envoy:1")},
		InitContainers: []appsv1beta1.SidecarContainer{sidecar("init", "busybox:1")},
	}}
	for _, m := range mutate {
		m(&s.Spec)
	}
	appsv1beta1.SetDefaults(s)
	return &s.Spec
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

func TestCompare_Path(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		before      *appsv1beta1.SidecarSetSpec
		after       func(*appsv1beta1.SidecarSetSpec)
		wantPath    Path
		wantHash    bool
		wantChanges []Change
	}{
		{name: "the same spec needs nothing", after: func(*appsv1beta1.SidecarSetSpec) {}, wantPath: PathNone},
		{
			name:     "an image is patched in place",
			after:    func(s *appsv1beta1.SidecarSetSpec) { s.Containers[0].Image = "agent:2" },
			wantPath: PathInPlace,
			wantChanges: []Change{{Name: "agent", Index: 0, Image: true,
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "resources and an image are resized in place",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers[1].Image = "envoy:2"
				s.Containers[1].Resources.Requests = cpu("100m")
			},
			wantPath: PathResize, wantHash: true,
			wantChanges: []Change{{Name: "proxy", Index: 1, Image: true, Resources: true, Fields: []string{"resources"},
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "a resourcesPolicy of a native sidecar is resized in place",
			before: spec(func(s *appsv1beta1.SidecarSetSpec) {
				s.InitContainers = []appsv1beta1.SidecarContainer{native("mesh", "envoy:1")}
			}),
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.InitContainers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeMax,
					ResourceExpr: appsv1beta1.ResourceExpr{Limits: &appsv1beta1.ResourceExprLimits{Memory: "memory"}}}
			},
			wantPath: PathResize, wantHash: true,
			wantChanges: []Change{{Name: "mesh", Init: true, Index: 0, Resources: true, Fields: []string{"resourcesPolicy"},
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "resources with an env change need a new pod",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
				s.Containers[0].Resources.Limits = cpu("1")
			},
			wantPath: PathRecreate, wantHash: true,
			wantChanges: []Change{{Name: "agent", Index: 0, Resources: true, Fields: []string{"env", "resources"},
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "the resources of a hot-upgrade sidecar are not resized",
			before: spec(func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers[0].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
					UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
			}),
			after:    func(s *appsv1beta1.SidecarSetSpec) { s.Containers[0].Resources.Requests = cpu("1") },
			wantPath: PathRecreate, wantHash: true,
			wantChanges: []Change{{Name: "agent", Index: 0, Resources: true, Fields: []string{"resources"}, hot: true,
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "an added container needs a new pod",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers = append(s.Containers, sidecar("logger", "fluent:1"))
			},
			wantPath: PathRecreate, wantHash: true,
			wantChanges: []Change{{Name: "logger", Index: 2, Added: true}},
		},
		{
			name: "a reordered list needs a new pod",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers[0], s.Containers[1] = s.Containers[1], s.Containers[0]
			},
			wantPath: PathRecreate, wantHash: true,
		},
		{
			name: "a plain init container's env is not hashed without a native sidecar",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.InitContainers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			},
			wantPath: PathRecreate,
			wantChanges: []Change{{Name: "init", Init: true, Plain: true, Index: 0, Fields: []string{"env"},
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullIfNotPresent}},
		},
		{
			name: "a pull policy that follows its new tag is no change for running pods",
			after: func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers[0].Image = "agent:latest"
				s.Containers[0].ImagePullPolicy = corev1.PullAlways
			},
			wantPath: PathInPlace,
			wantChanges: []Change{{Name: "agent", Index: 0, Image: true, PullPolicyFollowsTag: true,
				PullPolicyBefore: corev1.PullIfNotPresent, PullPolicyAfter: corev1.PullAlways}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := tc.before
			if before == nil {
				before = spec()
			}
			after := before.DeepCopy()
			tc.after(after)
			got := Compare(before, after)
			if got.Path != tc.wantPath {
				t.Errorf("path: want %v, got %v", tc.wantPath, got.Path)
			}
			if got.HashChanged != tc.wantHash {
				t.Errorf("hash changed: want %v, got %v", tc.wantHash, got.HashChanged)
			}
			if tc.wantChanges != nil {
				if diff := cmp.Diff(tc.wantChanges, got.Changes, cmp.AllowUnexported(Change{}), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			}
		})
	}
}
