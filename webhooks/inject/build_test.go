package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func mount(name, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: path}
}
func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

var injectedEnv = env(appsv1beta1.SidecarEnvInjected, "true")

func TestShareMounts_OwnPathsWinAndSubPathEnvFollows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		own        corev1.Container
		apps       []corev1.Container
		wantMounts []corev1.VolumeMount
		wantEnv    []corev1.EnvVar
	}{
		{
			name: "the sidecar gets every app mount in container and mount order",
			apps: []corev1.Container{
				{Name: "a", VolumeMounts: []corev1.VolumeMount{mount("v1", "/a1"), mount("v2", "/a2")}},
				{Name: "b", VolumeMounts: []corev1.VolumeMount{mount("v3", "/b1")}},
			},
			wantMounts: []corev1.VolumeMount{mount("v1", "/a1"), mount("v2", "/a2"), mount("v3", "/b1")},
		},
		{
			name: "the sidecar's own mount and device paths win, then the first app container",
			own: corev1.Container{
				VolumeMounts:  []corev1.VolumeMount{mount("own", "/a1")},
				VolumeDevices: []corev1.VolumeDevice{{Name: "dev", DevicePath: "/a2"}},
			},
			apps: []corev1.Container{
				{Name: "a", VolumeMounts: []corev1.VolumeMount{mount("v1", "/a1"), mount("v2", "/a2"), mount("v3", "/shared")}},
				{Name: "b", VolumeMounts: []corev1.VolumeMount{mount("v4", "/shared")}},
			},
			wantMounts: []corev1.VolumeMount{mount("v3", "/shared")},
		},
		{
			name: "a subPathExpr brings the env it references from the same app container",
			apps: []corev1.Container{
				{Name: "a", Env: []corev1.EnvVar{env("POD", "p"), env("NS", "n"), env("OTHER", "o")},
					VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs", SubPathExpr: "$(NS)/$(POD)/$(MISSING)"}}},
				{Name: "b", Env: []corev1.EnvVar{env("POD", "from-b")}},
			},
			wantMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs", SubPathExpr: "$(NS)/$(POD)/$(MISSING)"}},
			wantEnv:    []corev1.EnvVar{env("NS", "n"), env("POD", "p")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			apps := appContainers(tc.apps)
			mounts, envs := shareMounts(&tc.own, apps)
			if diff := cmp.Diff(tc.wantMounts, mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEnv, envs); diff != "" {
				t.Errorf("envs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppContainers_ExcludeInjectedSidecars(t *testing.T) {
	t.Parallel()
	containers := []corev1.Container{
		{Name: "sidecar", Env: []corev1.EnvVar{injectedEnv}},
		{Name: "app"},
		{Name: "not-really", Env: []corev1.EnvVar{env(appsv1beta1.SidecarEnvInjected, "false")}},
	}
	var got []string
	for _, c := range appContainers(containers) {
		got = append(got, c.Name)
	}
	if diff := cmp.Diff([]string{"app", "not-really"}, got); diff != "" {
		t.Errorf("app containers (-want +got):\n%s", diff)
	}
}

func TestShareDevices_DeduplicatedByDevicePath(t *testing.T) {
	t.Parallel()
	own := corev1.Container{
		VolumeMounts:  []corev1.VolumeMount{mount("m", "/dev/taken-by-mount")},
		VolumeDevices: []corev1.VolumeDevice{{Name: "own", DevicePath: "/dev/own"}},
	}
	apps := appContainers([]corev1.Container{
		{Name: "a", VolumeDevices: []corev1.VolumeDevice{{Name: "d1", DevicePath: "/dev/own"}, {Name: "d2", DevicePath: "/dev/xvda"},
			{Name: "d3", DevicePath: "/dev/taken-by-mount"}}},
		{Name: "b", VolumeDevices: []corev1.VolumeDevice{{Name: "d4", DevicePath: "/dev/xvda"}, {Name: "d5", DevicePath: "/dev/xvdb"}}},
		{Name: "c", Env: []corev1.EnvVar{injectedEnv}, VolumeDevices: []corev1.VolumeDevice{{Name: "d6", DevicePath: "/dev/xvdc"}}},
	})
	want := []corev1.VolumeDevice{{Name: "d2", DevicePath: "/dev/xvda"}, {Name: "d5", DevicePath: "/dev/xvdb"}}
	if diff := cmp.Diff(want, shareDevices(&own, apps)); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestMergeEnv_OwnEnvWinsAndOrderIsKruises(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		own   []corev1.EnvVar
		extra [][]corev1.EnvVar
		want  []corev1.EnvVar
	}{
		{
			name:  "own env, IS_INJECTED, transferred, then subPathExpr envs",
			own:   []corev1.EnvVar{env("A", "1")},
			extra: [][]corev1.EnvVar{{env("T", "t")}, {env("S", "s")}},
			want:  []corev1.EnvVar{env("A", "1"), injectedEnv, env("T", "t"), env("S", "s")},
		},
		{
			name:  "a name the sidecar defines is neither overridden nor duplicated",
			own:   []corev1.EnvVar{env("A", "own")},
			extra: [][]corev1.EnvVar{{env("A", "transferred"), env("B", "first")}, {env("B", "second"), env("A", "subpath")}},
			want:  []corev1.EnvVar{env("A", "own"), injectedEnv, env("B", "first")},
		},
		{
			name: "an IS_INJECTED the user set is not duplicated",
			own:  []corev1.EnvVar{env(appsv1beta1.SidecarEnvInjected, "true"), env("A", "1")},
			want: []corev1.EnvVar{env(appsv1beta1.SidecarEnvInjected, "true"), env("A", "1")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, mergeEnv(tc.own, tc.extra...)); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransferEnv_SourceContainerResolution(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "main", Labels: map[string]string{"c": "main"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Env: []corev1.EnvVar{env("Z", "z"), env("A", "a"), env("M", "m")}},
			{Name: "other", Env: []corev1.EnvVar{env("A", "other-a")}},
		}},
	}
	from := func(path string) *appsv1beta1.SourceContainerNameSource {
		return &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	tests := []struct {
		name         string
		transfer     []appsv1beta1.TransferEnvVar
		annotations  map[string]string
		want         []corev1.EnvVar
		wantWarnings []string
	}{
		{
			name:     "envName and envNames are merged, deduplicated and sorted; missing ones are skipped",
			transfer: []appsv1beta1.TransferEnvVar{{SourceContainerName: "main", EnvName: "Z", EnvNames: []string{"A", "Z", "NOPE"}}},
			want:     []corev1.EnvVar{env("A", "a"), env("Z", "z")},
		},
		{
			name:     "the source container is read from a pod label",
			transfer: []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: from("metadata.labels['c']"), EnvName: "M"}},
			want:     []corev1.EnvVar{env("M", "m")},
		},
		{
			name:        "the source container is read from a (patched) pod annotation",
			transfer:    []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: from("metadata.annotations['src']"), EnvName: "A"}},
			annotations: map[string]string{"src": "other"},
			want:        []corev1.EnvVar{env("A", "other-a")},
		},
		{
			name:     "the source container is named like the pod (metadata.name)",
			transfer: []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: from("metadata.name"), EnvName: "Z"}},
			want:     []corev1.EnvVar{env("Z", "z")},
		},
		{
			name:     "a missing label or container transfers nothing",
			transfer: []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: from("metadata.labels['none']"), EnvName: "A"}, {SourceContainerName: "ghost", EnvName: "A"}},
		},
		{
			name:     "an unsupported fieldPath skips the entry with a warning",
			transfer: []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: from("metadata.namespace"), EnvName: "A"}, {SourceContainerName: "main", EnvName: "M"}},
			want:     []corev1.EnvVar{env("M", "m")},
			wantWarnings: []string{`SidecarSet "s": container "agent": transferEnv sourceContainerNameFrom: unsupported fieldPath "metadata.namespace" ` +
				`(want metadata.name, metadata.labels['<key>'] or metadata.annotations['<key>']); the entry is ignored`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &builder{pod: pod, annotations: tc.annotations, setName: "s"}
			sc := &appsv1beta1.SidecarContainer{Container: corev1.Container{Name: "agent"}, TransferEnv: tc.transfer}
			if diff := cmp.Diff(tc.want, b.transferEnv(sc)); diff != "" {
				t.Errorf("envs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, b.warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPlan_VolumesAndSidecarList(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	set := newSidecarSet("s", "web")
	set.Spec.InitContainers = []appsv1beta1.SidecarContainer{
		{Container: corev1.Container{Name: "plain-init", Image: "i", VolumeMounts: []corev1.VolumeMount{mount("init-vol", "/i")}}},
		{Container: corev1.Container{Name: "native", Image: "n", RestartPolicy: &always}},
	}
	set.Spec.Containers = []appsv1beta1.SidecarContainer{
		{Container: corev1.Container{Name: "zeta", Image: "z",
			VolumeMounts:  []corev1.VolumeMount{mount("c-vol", "/c"), mount("pod-vol", "/p"), mount("ghost", "/g"), mount("init-vol", "/i")},
			VolumeDevices: []corev1.VolumeDevice{{Name: "dev-vol", DevicePath: "/dev/x"}}}},
		{Container: corev1.Container{Name: "hot", Image: "h"},
			UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"}},
	}
	vol := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	set.Spec.Volumes = []corev1.Volume{vol("dev-vol"), vol("c-vol"), vol("init-vol"), vol("unused")}
	set.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	pod := newPod("web", "app")
	pod.Spec.Volumes = []corev1.Volume{vol("pod-vol")}

	p, err := buildPlan(&version{name: "s", set: set}, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff([]corev1.Volume{vol("init-vol"), vol("c-vol"), vol("dev-vol")}, p.volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hot", "native", "zeta"}, p.sidecarList); diff != "" {
		t.Errorf("sidecarList (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hot"}, p.hotUpgrade); diff != "" {
		t.Errorf("hot-upgrade sidecars (-want +got):\n%s", diff)
	}
	var got []string
	for _, s := range append(p.initContainers, p.containers...) {
		got = append(got, s.container.Name)
	}
	if diff := cmp.Diff([]string{"plain-init", "native", "zeta", "hot-1", "hot-2"}, got); diff != "" {
		t.Errorf("built containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "pull"}}, p.pullSecrets); diff != "" {
		t.Errorf("pull secrets (-want +got):\n%s", diff)
	}
	wantWarnings := []string{`SidecarSet "s": container "zeta" uses volume "ghost", which neither the SidecarSet nor the pod defines`}
	if diff := cmp.Diff(wantWarnings, p.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if set.Spec.Containers[0].Env != nil {
		t.Errorf("building modified the SidecarSet's container env: %v", set.Spec.Containers[0].Env)
	}
}

func TestBuildPlan_EmptyVersionInjectsNothing(t *testing.T) {
	t.Parallel()
	set := newSidecarSet("s", "web")
	set.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	set.Spec.Volumes = []corev1.Volume{{Name: "v"}}
	p, err := buildPlan(&version{name: "s", set: set}, newPod("web", "app"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.empty() || p.pullSecrets != nil || p.volumes != nil {
		t.Errorf("plan of an empty version = %+v, want nothing to inject", p)
	}
}
