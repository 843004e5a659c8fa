package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func hot(name string, native bool, emptyImage string) *appsv1beta1.SidecarContainer {
	sc := &appsv1beta1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: name + ":1"},
		UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage,
		},
	}
	if native {
		sc.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	}
	return sc
}

func TestHotUpgradeTwins_WorkingAndIdle(t *testing.T) {
	t.Parallel()
	c := corev1.Container{Name: "envoy", Image: "envoy:1.30", Env: []corev1.EnvVar{
		env("A", "1"), env(appsv1beta1.SidecarEnvVersion, "user-set"), injectedEnv,
	}}
	versionEnv := func(twin string) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "SIDECARSET_VERSION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1", FieldPath: "metadata.annotations['version.sidecarset.kruise.io/" + twin + "']"}}},
			{Name: "SIDECARSET_VERSION_ALT", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1", FieldPath: "metadata.annotations['versionalt.sidecarset.kruise.io/" + twin + "']"}}},
		}
	}
	working, idle := hotUpgradeTwins(c, "empty:1")
	wantWorking := corev1.Container{Name: "envoy-1", Image: "envoy:1.30",
		Env: append([]corev1.EnvVar{env("A", "1"), injectedEnv}, versionEnv("envoy-1")...)}
	wantIdle := corev1.Container{Name: "envoy-2", Image: "empty:1",
		Env: append([]corev1.EnvVar{env("A", "1"), injectedEnv}, versionEnv("envoy-2")...)}
	if diff := cmp.Diff(wantWorking, working); diff != "" {
		t.Errorf("working twin (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantIdle, idle); diff != "" {
		t.Errorf("idle twin (-want +got):\n%s", diff)
	}
	if len(c.Env) != 3 || c.Name != "envoy" {
		t.Errorf("the source container was modified: %+v", c)
	}
}

func TestRecordHotUpgrade_VersionsAndWorkingTwin(t *testing.T) {
	t.Parallel()
	annotations := map[string]string{"keep": "me"}
	working := map[string]string{"other": "other-2"}
	recordHotUpgrade(annotations, working, "envoy")
	wantAnnotations := map[string]string{
		"keep":                                 "me",
		"version.sidecarset.kruise.io/envoy-1": "1",
		"versionalt.sidecarset.kruise.io/envoy-1": "0",
		"version.sidecarset.kruise.io/envoy-2":    "0",
		"versionalt.sidecarset.kruise.io/envoy-2": "1",
	}
	if diff := cmp.Diff(wantAnnotations, annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"other": "other-2", "envoy": "envoy-1"}, working); diff != "" {
		t.Errorf("working twins (-want +got):\n%s", diff)
	}
}

func TestCheckHotUpgrade_EmptyImageDeniesThePod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		inits   []appsv1beta1.SidecarContainer
		conts   []appsv1beta1.SidecarContainer
		wantErr string
	}{
		{name: "hot-upgrade sidecars with empty images pass", conts: []appsv1beta1.SidecarContainer{*hot("envoy", false, "empty:1")}},
		{name: "a hot-upgrade plain init container needs no empty image", inits: []appsv1beta1.SidecarContainer{*hot("setup", false, "")}},
		{name: "a hot-upgrade container without empty image is denied", conts: []appsv1beta1.SidecarContainer{*hot("envoy", false, "")},
			wantErr: `SidecarSet "mesh": container "envoy" has upgradeType HotUpgrade but no upgradeStrategy.hotUpgradeEmptyImage; ` +
				`pods matching it cannot be created until it is set`},
		{name: "a hot-upgrade native sidecar without empty image is denied", inits: []appsv1beta1.SidecarContainer{*hot("envoy", true, "")},
			wantErr: `SidecarSet "mesh": container "envoy" has upgradeType HotUpgrade but no upgradeStrategy.hotUpgradeEmptyImage; ` +
				`pods matching it cannot be created until it is set`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := newSidecarSet("mesh", "web")
			set.Spec.InitContainers, set.Spec.Containers = tc.inits, tc.conts
			err := checkHotUpgrade(&version{name: "mesh", set: set})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("error = %q, want %q", got, tc.wantErr)
			}
		})
	}
}
