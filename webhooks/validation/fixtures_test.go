package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ignoreOrigin drops the machine-readable origin some apimachinery helpers
// set; the tests assert type, path, value and message.
var ignoreOrigin = cmpopts.IgnoreFields(field.Error{}, "Origin")

// newSidecarSet returns a valid, defaulted SidecarSet selecting app=<app>
// with one container sidecar1, after applying the mutations.
func newSidecarSet(name, app string, mutate ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []appsv1beta1.SidecarContainer{sidecar("sidecar1", "centos:6.7")},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	appsv1beta1.SetDefaults(s)
	return s
}

func sidecar(name, image string) appsv1beta1.SidecarContainer {
	return appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: image}}
}

func nativeSidecar(name, image string) appsv1beta1.SidecarContainer {
	c := sidecar(name, image)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func hotSidecar(name, image string) appsv1beta1.SidecarContainer {
	c := sidecar(name, image)
	c.UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
		UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "busybox:empty"}
	return c
}

// checkErrors compares the whole error list.
func checkErrors(t *testing.T, want, got field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, got, ignoreOrigin, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// checkWarnings compares the whole warning list.
func checkWarnings(t *testing.T, want, got []string) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// cmpDiffSidecarSet diffs two SidecarSets exactly (nil and empty differ).
func cmpDiffSidecarSet(want, got *appsv1beta1.SidecarSet) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() }))
}

func withAnnotation(key, value string) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[key] = value
	}
}
