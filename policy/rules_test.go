package policy

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// shippedRules compiles the shipped rules once for all tests.
var shippedRules = sync.OnceValues(CompileRules)

func mustShippedRules(tb testing.TB) *Rules {
	tb.Helper()
	r, err := shippedRules()
	if err != nil {
		tb.Fatalf("CompileRules: %v", err)
	}
	return r
}

// validSidecarSet passes every shipped rule without warnings.
func validSidecarSet() *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Labels: map[string]string{"sidecar": "log-agent"}},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			InitContainers: []appsv1beta1.SidecarContainer{
				{Container: corev1.Container{Name: "init", Image: "busybox:1.36"}},
			},
			Containers: []appsv1beta1.SidecarContainer{{
				Container: corev1.Container{
					Name:         "sidecar1",
					Image:        "centos:7",
					VolumeMounts: []corev1.VolumeMount{{Name: "log-volume", MountPath: "/var/log"}},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "log-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"oom-score": `{"log-agent": 1}`}, PatchPolicy: appsv1beta1.SidecarSetMergePatchJSONPatchPolicy},
			},
		},
	}
}

func withSidecarSet(mutate func(s *appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	s := validSidecarSet()
	mutate(s)
	return s
}

func ruleError(rule string, t field.ErrorType, path, detail string) *field.Error {
	return &field.Error{Type: t, Field: path, BadValue: field.OmitValueType{}, Detail: detail, Origin: "sidecarset/" + rule}
}

func container(name, image string) appsv1beta1.SidecarContainer {
	return appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: image}}
}

var always = new(corev1.ContainerRestartPolicyAlways)

func TestRules_ShippedRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		obj, old     *appsv1beta1.SidecarSet
		wantErrors   field.ErrorList
		wantWarnings []string
		maxCost      int64
	}{{
		name:    "a valid SidecarSet passes every rule",
		obj:     validSidecarSet(),
		maxCost: 2000,
	}, {
		name: "an init container and a container with the same name are duplicates",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, container("init", "x:1"))
		}),
		wantErrors: field.ErrorList{ruleError("container-names-unique", field.ErrorTypeDuplicate, "spec.containers[1].name",
			`container name "init" is used by both spec.initContainers[0] and spec.containers[1]: names must be unique across initContainers and containers, which are injected into the same pod`)},
		maxCost: 3000,
	}, {
		name: "two containers with the same name are duplicates",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, container("other", "x:1"), container("sidecar1", "x:1"))
		}),
		wantErrors: field.ErrorList{ruleError("container-names-unique", field.ErrorTypeDuplicate, "spec.containers[2].name",
			`container name "sidecar1" is used by both spec.containers[0] and spec.containers[2]: names must be unique across initContainers and containers, which are injected into the same pod`)},
		maxCost: 3000,
	}, {
		name: "a container named like the twin of a HotUpgrade sidecar collides with it",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
				UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1",
			}
			s.Spec.InitContainers[0].Name = "sidecar1-2"
		}),
		wantErrors: field.ErrorList{ruleError("hot-upgrade-twin-names-unique", field.ErrorTypeDuplicate, "spec.initContainers[0].name",
			`container name "sidecar1-2" collides with a twin of HotUpgrade sidecar "sidecar1", which is injected as "sidecar1-1" and "sidecar1-2"`)},
		maxCost: 3000,
	}, {
		name: "a HotUpgrade sidecar name longer than 61 characters leaves no room for its twins",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Name = strings.Repeat("a", 62)
			s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1beta1.SidecarContainerHotUpgrade
		}),
		wantErrors: field.ErrorList{ruleError("hot-upgrade-names-fit-twins", field.ErrorTypeInvalid, "spec.containers[0].name",
			`HotUpgrade sidecar name "`+strings.Repeat("a", 62)+`" is longer than 61 characters: its twins <name>-1 and <name>-2 must be valid container names (at most 63 characters)`)},
		maxCost: 3000,
	}, {
		name: "a volumeMount of a volume missing from spec.volumes points to shareVolumePolicy",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].VolumeMounts = append(s.Spec.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: "app-logs", MountPath: "/app/logs"})
		}),
		wantErrors: field.ErrorList{ruleError("volume-mounts-name-sidecarset-volumes", field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[1].name",
			`volumeMount "app-logs" of container "sidecar1" names no volume of spec.volumes: declare the volume in spec.volumes, or set shareVolumePolicy.type to enabled to mount the volumes of the pod's own containers`)},
		maxCost: 4000,
	}, {
		name: "a volumeMount of an init container is checked too",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
		}),
		wantErrors: field.ErrorList{ruleError("volume-mounts-name-sidecarset-volumes", field.ErrorTypeNotFound, "spec.initContainers[0].volumeMounts[0].name",
			`volumeMount "cache" of container "init" names no volume of spec.volumes: declare the volume in spec.volumes, or set shareVolumePolicy.type to enabled to mount the volumes of the pod's own containers`)},
		maxCost: 4000,
	}, {
		name: "a volumeDevice of a volume missing from spec.volumes points to shareVolumeDevicePolicy",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
		}),
		wantErrors: field.ErrorList{ruleError("volume-devices-name-sidecarset-volumes", field.ErrorTypeNotFound, "spec.containers[0].volumeDevices[0].name",
			`volumeDevice "disk" of container "sidecar1" names no volume of spec.volumes: declare the volume in spec.volumes, or set shareVolumeDevicePolicy.type to enabled to use the devices of the pod's own containers`)},
		maxCost: 4000,
	}, {
		name: "a volumeDevice of an emptyDir volume is invalid",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "log-volume", DevicePath: "/dev/xvda"}}
		}),
		wantErrors: field.ErrorList{ruleError("volume-devices-use-block-volumes", field.ErrorTypeInvalid, "spec.containers[0].volumeDevices[0].name",
			`volumeDevice "log-volume" of container "sidecar1" names a volume that is neither a persistentVolumeClaim nor an ephemeral volume: only those provide block devices`)},
		maxCost: 4000,
	}, {
		name: "a volumeDevice of a persistentVolumeClaim volume passes",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Volumes = append(s.Spec.Volumes, corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"},
			}})
			s.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
		}),
		maxCost: 4000,
	}, {
		name: "resourcesPolicy on an init container that is not a native sidecar is forbidden",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.InitContainers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum}
		}),
		wantErrors: field.ErrorList{ruleError("resources-policy-needs-native-sidecar", field.ErrorTypeForbidden, "spec.initContainers[0].resourcesPolicy",
			`resourcesPolicy is only supported for containers with RestartPolicy Always: init container "init" is not a native sidecar; set its restartPolicy to Always, or remove resourcesPolicy`)},
		maxCost: 3000,
	}, {
		name: "resourcesPolicy on a native sidecar of a NotUpdate SidecarSet passes without warning",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
			s.Spec.InitContainers[0].RestartPolicy = always
			s.Spec.InitContainers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum}
		}),
		maxCost: 3000,
	}, {
		name: "restartPolicy on a container is forbidden",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].RestartPolicy = always
		}),
		wantErrors: field.ErrorList{ruleError("containers-have-no-restart-policy", field.ErrorTypeForbidden, "spec.containers[0].restartPolicy",
			`restartPolicy is not allowed on spec.containers: to make "sidecar1" a native sidecar, move it to spec.initContainers with restartPolicy Always; otherwise remove restartPolicy`)},
		maxCost: 3000,
	}, {
		// OpenKruise rejects it: it cannot upgrade native sidecars in place.
		name: "a native sidecar of a RollingUpdate SidecarSet is accepted (it is upgraded in place)",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.InitContainers[0].RestartPolicy = always
			s.Spec.InitContainers[0].ShareVolumePolicy.Type = appsv1beta1.ShareVolumePolicyEnabled
		}),
		maxCost: 3000,
	}, {
		name: "an update of container images only gives no warning",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Image = "centos:8"
		}),
		old:     validSidecarSet(),
		maxCost: 3000,
	}, {
		name: "several problems are each reported once, in rule order",
		obj: withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			c := container("init", "x:1")
			c.RestartPolicy = always
			s.Spec.Containers = append(s.Spec.Containers, c)
		}),
		wantErrors: field.ErrorList{
			ruleError("container-names-unique", field.ErrorTypeDuplicate, "spec.containers[1].name",
				`container name "init" is used by both spec.initContainers[0] and spec.containers[1]: names must be unique across initContainers and containers, which are injected into the same pod`),
			ruleError("containers-have-no-restart-policy", field.ErrorTypeForbidden, "spec.containers[1].restartPolicy",
				`restartPolicy is not allowed on spec.containers: to make "init" a native sidecar, move it to spec.initContainers with restartPolicy Always; otherwise remove restartPolicy`),
		},
		maxCost: 4000,
	}}
	rules := mustShippedRules(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := rules.Evaluate(t.Context(), tc.obj, tc.old)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tc.wantErrors, got.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, got.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if got.Cost <= 0 || got.Cost > tc.maxCost {
				t.Errorf("cost = %d, want in (0, %d]", got.Cost, tc.maxCost)
			}
		})
	}
}

// TestRules_EveryShippedRuleCanFire fails when a validation or warning is
// added to the shipped policies without an input that makes it fire.
func TestRules_EveryShippedRuleCanFire(t *testing.T) {
	t.Parallel()
	rules := mustShippedRules(t)
	old := withSidecarSet(func(s *appsv1beta1.SidecarSet) {
		s.Annotations = map[string]string{"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "first"}
	})
	errorsFired, warningsFired := map[string]bool{}, map[string]bool{}
	for _, obj := range []*appsv1beta1.SidecarSet{everyRuleFails(), everyRuleFailsOnCanary()} {
		res, err := rules.Evaluate(t.Context(), obj, old)
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		for _, e := range res.Errors {
			errorsFired[e.Origin] = true
		}
		for _, w := range res.Warnings {
			warningsFired[w] = true
		}
	}
	var missing []string
	warnings := 0
	for _, p := range rules.policies {
		for _, v := range p.validations {
			if !errorsFired[v.name] {
				missing = append(missing, v.name)
			}
		}
		warnings += len(p.warnings)
	}
	if len(missing) > 0 {
		t.Errorf("validations that never fired: %v", missing)
	}
	if len(warningsFired) != warnings {
		t.Errorf("%d distinct warnings fired, want %d (one per warning rule): %v", len(warningsFired), warnings, warningsFired)
	}
}

// everyRuleFails breaks every non-canary validation and triggers every
// warning at once.
func everyRuleFails() *appsv1beta1.SidecarSet {
	return withSidecarSet(func(s *appsv1beta1.SidecarSet) {
		s.Spec.InitContainers = append(s.Spec.InitContainers,
			appsv1beta1.SidecarContainer{
				Container:       corev1.Container{Name: "native", Image: "x:1", RestartPolicy: always},
				ResourcesPolicy: nil,
			},
			appsv1beta1.SidecarContainer{
				Container:         corev1.Container{Name: "plain", Image: "x:1"},
				ShareVolumePolicy: appsv1beta1.ShareVolumePolicy{Type: appsv1beta1.ShareVolumePolicyEnabled},
				ResourcesPolicy:   &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeMax},
			})
		s.Spec.Volumes = append(s.Spec.Volumes, corev1.Volume{Name: "new"})
		s.Spec.Containers = append(s.Spec.Containers,
			container("init", ""),
			container("Bad", "x:1"),
			appsv1beta1.SidecarContainer{
				Container: corev1.Container{Name: strings.Repeat("h", 62), Image: "x:1"},
				UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{
					UpgradeType: appsv1beta1.SidecarContainerHotUpgrade,
				},
			},
			container(strings.Repeat("h", 62)+"-1", "x:1"),
			appsv1beta1.SidecarContainer{Container: corev1.Container{
				Name: "mounts", Image: "x:1", RestartPolicy: always,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "missing", MountPath: "/a"}, {Name: "log-volume", MountPath: "/a"},
				},
				VolumeDevices: []corev1.VolumeDevice{{Name: "gone", DevicePath: "/b"}, {Name: "log-volume", DevicePath: "/a"}},
			}})
		s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata,
			appsv1beta1.SidecarSetPatchPodMetadata{Annotations: map[string]string{"oom-score": "1", "Not Valid": "1"}})
	})
}

func everyRuleFailsOnCanary() *appsv1beta1.SidecarSet {
	return withSidecarSet(func(s *appsv1beta1.SidecarSet) {
		s.Annotations = map[string]string{"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "log-agent"}
	})
}

func TestRules_ValidateReturnsWhatEvaluateFinds(t *testing.T) {
	t.Parallel()
	rules := mustShippedRules(t)
	obj := everyRuleFails()
	want, err := rules.Evaluate(t.Context(), obj, validSidecarSet())
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	errs, warnings, err := rules.Validate(t.Context(), obj, validSidecarSet())
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if diff := cmp.Diff(want.Errors, errs); diff != "" {
		t.Errorf("errors (-Evaluate +Validate):\n%s", diff)
	}
	if diff := cmp.Diff(want.Warnings, warnings); diff != "" {
		t.Errorf("warnings (-Evaluate +Validate):\n%s", diff)
	}
}
