package match

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestNotInjected(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	set := func(mutate ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", CreationTimestamp: metav1.NewTime(created)}}
		s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "proxy"}}}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	pod := func(at time.Time, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(at)}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		return p
	}
	recorded := func(list ...string) podstate.Hashes {
		return podstate.Hashes{"mesh": {Hash: "h", SidecarSetName: "mesh", SidecarList: list}}
	}
	after, before := created.Add(time.Minute), created.Add(-time.Minute)
	hot := func(s *appsv1beta1.SidecarSet) {
		s.Spec.Containers[0].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerHotUpgrade}
	}
	tests := []struct {
		name     string
		set      *appsv1beta1.SidecarSet
		pod      *corev1.Pod
		recorded podstate.Hashes
		want     string
	}{
		{"injected: recorded, and its sidecar is there", set(), pod(after, "proxy", "app"), recorded("proxy"), ""},
		{"a legacy entry without a list: the spec's sidecars are there", set(), pod(after, "proxy", "app"), recorded(), ""},
		{"a hot-upgrade sidecar is there as its twins", set(hot), pod(after, "proxy-1", "proxy-2", "app"), recorded("proxy"), ""},
		{"recorded but the sidecar is missing (annotations written by hand)", set(), pod(after, "app"), recorded("proxy"), NotInjectedAtAdmission},
		{"created before the SidecarSet", set(), pod(before, "app"), nil, NotInjectedCreatedBefore},
		{"created in the same second as the SidecarSet (both stored to the second)", set(), pod(created, "app"), nil, NotInjectedCreatedBefore},
		{"injection paused", set(func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true }), pod(after, "app"), nil, NotInjectedPaused},
		{"the pod has its own container of the sidecar's name", set(), pod(after, "proxy", "app"), nil, NotInjectedNameConflict},
		{"created after, not injected: admitted without it", set(), pod(after, "app"), nil, NotInjectedAtAdmission},
		{"carrying the operator's label (exempted by OLM's objectSelector)", set(), func() *corev1.Pod {
			p := pod(after, "app")
			p.Labels = map[string]string{appsv1beta1.OperatorPodLabel: appsv1beta1.OperatorPodName}
			return p
		}(), nil, NotInjectedOperatorLabel},
		{"a SidecarSet with only patchPodMetadata never misses a pod", set(func(s *appsv1beta1.SidecarSet) { s.Spec.Containers = nil }),
			pod(after, "app"), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := NotInjected(tc.set, tc.pod, tc.recorded); got != tc.want {
				t.Errorf("NotInjected = %q, want %q", got, tc.want)
			}
		})
	}
}
