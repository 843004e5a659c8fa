package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// recreateHint is the end of the warning of a change that only new pods get.
const recreateHint = `sidecarset-operator.dev/recreate-pods: "true" has them recreated`

func TestValidateSidecarSet_UpdateWarnings(t *testing.T) {
	t.Parallel()
	const (
		resized = "running pods are resized in place through pods/resize, without a restart unless the sidecar's resizePolicy " +
			"asks for one; a pod the resize cannot reach (its QoS class would change, or its node refuses it) is "
		recreated = "this cannot be applied in place: running pods are recreated to get it (sidecarset-operator.dev/recreate-pods), " +
			"evicted within the update strategy and their PodDisruptionBudgets"
		notInPlace = "this cannot be applied in place: only pods created from now on get it, " +
			"existing pods keep their current sidecars (status shows them as not upgradable; " + recreateHint + ")"
		initOnly = "init containers run only at pod creation: only pods created from now on get it, " +
			"existing pods keep their current init containers"
	)
	base := func(mutate ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		return newSidecarSet("s", "nginx", append([]func(*appsv1beta1.SidecarSet){
			withContainers(sidecar("sidecar1", "centos:6.7"), sidecar("sidecar2", "nginx:1")),
			withInitContainers(sidecar("init", "busybox:1")),
		}, mutate...)...)
	}
	tests := []struct {
		name   string
		old    *appsv1beta1.SidecarSet
		mutate func(*appsv1beta1.SidecarSet)
		want   []string
	}{
		{
			name:   "an unchanged SidecarSet gives no warning",
			mutate: func(*appsv1beta1.SidecarSet) {},
		},
		{
			name:   "a pure image change of a container gives no warning",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "centos:7" },
		},
		{
			name: "strategy, selector and pause changes apply at once and give no warning",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.UpdateStrategy.Paused = true
				s.Spec.Selector.MatchLabels["tier"] = "front"
			},
		},
		{
			name: "a full replace moving the tag to latest without imagePullPolicy is still upgraded in place",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Image = "centos:latest"
				s.Spec.Containers[0].ImagePullPolicy = ""
			},
			want: []string{"spec.containers[0] (sidecar1): imagePullPolicy follows the image's tag from IfNotPresent to Always; " +
				"existing pods are upgraded in place and keep IfNotPresent (a pod's pull policy cannot change), pods created from now on get Always"},
		},
		{
			name: "an explicit pull policy that is not the tag's default is a change beyond the image",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Image = "centos:7"
				s.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
			},
			want: []string{"spec.containers[0] (sidecar1): imagePullPolicy changed; " + notInPlace},
		},
		{
			name:   "an env change reaches new pods only",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
			want:   []string{"spec.containers[0] (sidecar1): env changed; " + notInPlace},
		},
		{
			name: "several changed fields are named in declaration order, sidecar fields last",
			mutate: func(s *appsv1beta1.SidecarSet) {
				c := &s.Spec.Containers[1]
				c.Image = "nginx:2"
				c.ShareVolumePolicy.Type = appsv1beta1.ShareVolumePolicyEnabled
				c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
				c.Command = []string{"run"}
			},
			want: []string{"spec.containers[1] (sidecar2): command, resources, shareVolumePolicy changed; " + notInPlace},
		},
		{
			name: "a changed hotUpgradeEmptyImage is an upgradeStrategy change",
			old:  base(withContainers(hotSidecar("sidecar1", "centos:6.7"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers = []appsv1beta1.SidecarContainer{hotSidecar("sidecar1", "centos:6.7")}
				s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = "busybox:2"
			},
			want: []string{"spec.containers[0] (sidecar1): upgradeStrategy changed; " + notInPlace},
		},
		{
			name: "the same quantity written in another unit changes the hash and is reported as a resize",
			old: base(func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
			}),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1073741824")}
			},
			want: []string{"spec.containers[0] (sidecar1): resources changed; " + resized + "reported, and keeps its resources"},
		},
		{
			name: "a resources and image change of a container is resized in place, or recreated where the resize cannot reach",
			old:  base(withAnnotation(appsv1beta1.RecreatePodsAnnotation, "true")),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Image = "centos:7"
				s.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			},
			want: []string{"spec.containers[0] (sidecar1): resources changed; " + resized + "recreated"},
		},
		{
			name: "a new resourcesPolicy of a native sidecar is a resize",
			old:  base(withInitContainers(nativeSidecar("native", "envoy:1"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum,
					ResourceExpr: appsv1beta1.ResourceExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%"}}}
			},
			want: []string{"spec.initContainers[0] (native): resourcesPolicy changed; " + resized + "reported, and keeps its resources"},
		},
		{
			name: "a resources change of a hot-upgrade sidecar cannot be resized",
			old:  base(withContainers(hotSidecar("sidecar1", "centos:6.7"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			},
			want: []string{"spec.containers[0] (sidecar1): resources changed; " + notInPlace},
		},
		{
			name:   "an env change with the recreate annotation recreates the running pods",
			old:    base(withAnnotation(appsv1beta1.RecreatePodsAnnotation, "true")),
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
			want:   []string{"spec.containers[0] (sidecar1): env changed; " + recreated},
		},
		{
			name: "an env change of a plain init container hashed with a native sidecar recreates the running pods",
			old: base(withAnnotation(appsv1beta1.RecreatePodsAnnotation, "true"),
				withInitContainers(sidecar("init", "busybox:1"), nativeSidecar("native", "envoy:1"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			},
			want: []string{"spec.initContainers[0] (init): env changed; init containers run only at pod creation: running pods are " +
				"recreated to get it (sidecarset-operator.dev/recreate-pods), evicted within the update strategy and their PodDisruptionBudgets"},
		},
		{
			name: "an env change of a plain init container not hashed reaches new pods only, even with the recreate annotation",
			old:  base(withAnnotation(appsv1beta1.RecreatePodsAnnotation, "true")),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			},
			want: []string{"spec.initContainers[0] (init): env changed; " + initOnly},
		},
		{
			name:   "an empty list where there was none is not a change",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env = []corev1.EnvVar{} },
		},
		{
			name: "an added and a removed container are accepted with warnings",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers = []appsv1beta1.SidecarContainer{s.Spec.Containers[0], sidecar("sidecar3", "redis:7")}
			},
			want: []string{
				"spec.containers (sidecar2): removed; this cannot be applied in place: only pods created from now on go without it, " +
					"existing pods keep their current sidecars (status shows them as not upgradable; " + recreateHint + ")",
				"spec.containers[1] (sidecar3): added; " + notInPlace,
			},
		},
		{
			name: "reordering containers changes the hash and is reported",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0], s.Spec.Containers[1] = s.Spec.Containers[1], s.Spec.Containers[0]
			},
			want: []string{"spec.containers: order changed from [sidecar1, sidecar2] to [sidecar2, sidecar1]; this cannot be " +
				"applied in place: only pods created from now on get the new order, existing pods keep their current sidecars " +
				"(status shows them as not upgradable; " + recreateHint + ")"},
		},
		{
			name:   "an image change of a plain init container reaches new pods only",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.InitContainers[0].Image = "busybox:2" },
			want:   []string{"spec.initContainers[0] (init): image changed; " + initOnly},
		},
		{
			name: "an added plain init container does not make pods not upgradable",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = append(s.Spec.InitContainers, sidecar("init2", "busybox:1"))
			},
			want: []string{"spec.initContainers[1] (init2): added; " + initOnly},
		},
		{
			name: "an image change of a native sidecar is applied in place",
			old:  base(withInitContainers(nativeSidecar("native", "envoy:1"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{nativeSidecar("native", "envoy:2")}
			},
		},
		{
			name: "an env change of a native sidecar reaches new pods only",
			old:  base(withInitContainers(nativeSidecar("native", "envoy:1"))),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{nativeSidecar("native", "envoy:1")}
				s.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			},
			want: []string{"spec.initContainers[0] (native): env changed; " + notInPlace},
		},
		{
			name: "volume changes reach new pods only",
			old: base(withVolumes(
				corev1.Volume{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			)),
			mutate: withVolumes(
				corev1.Volume{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: new(int32(0o644))}}},
				corev1.Volume{Name: "d"},
			),
			want: []string{`spec.volumes: "b" changed, "d" added, "a" removed; volumes reach only pods created from now on, ` +
				"existing pods keep the volumes they were created with"},
		},
		{
			name: "imagePullSecrets and patchPodMetadata changes are reported",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"}}}
			},
			want: []string{
				"spec.imagePullSecrets: changed; image pull secrets reach only pods created from now on, existing pods keep " +
					"theirs, so an in-place upgrade to an image that needs a new secret can fail to pull",
				"spec.patchPodMetadata: changed; existing pods get it at their next in-place upgrade: Overwrite and " +
					"MergePatchJson entries, and Retain entries for keys the pod lacks (a Retain key the pod has keeps its value)",
			},
		},
		{
			name: "a patchPolicy spelled out as the default is not a change",
			old:  base(withPatch("", map[string]string{"k": "v"})),
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"},
					PatchPolicy: appsv1beta1.SidecarSetRetainPatchPolicy}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old := tc.old
			if old == nil {
				old = base()
			}
			s := old.DeepCopy()
			tc.mutate(s)
			appsv1beta1.SetDefaults(s)
			errs, warnings := ValidateSidecarSet(s, old, Options{})
			checkErrors(t, nil, errs)
			checkWarnings(t, tc.want, warnings)
		})
	}
}

func TestUpdateWarnings_UndefaultedOldObject(t *testing.T) {
	t.Parallel()
	// The old object from storage may predate some defaults: comparing after
	// defaulting both sides keeps a pure image change silent.
	old := &appsv1beta1.SidecarSet{}
	old.Name = "s"
	old.Spec.Containers = []appsv1beta1.SidecarContainer{sidecar("sidecar1", "centos:6.7")}
	s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "centos:7" })
	old.Spec.Selector = s.Spec.Selector
	got := updateWarnings(s, old, field.NewPath("spec"))
	checkWarnings(t, nil, got)
}
