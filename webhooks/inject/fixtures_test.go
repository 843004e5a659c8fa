package inject

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// anyKey lets patchPodMetadata write any key that does not hold SidecarSet
// state: no whitelist ConfigMap, with SidecarSetPatchPodMetadataDefaultsAllowed on.
var anyKey = podmeta.Whitelist{Snapshot: &policy.Snapshot{}, DefaultsAllowed: true}

// newSidecarSet returns a defaulted SidecarSet selecting app=<app>, with
// one container per name.
func newSidecarSet(name, app string, containers ...string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	for _, c := range containers {
		s.Spec.Containers = append(s.Spec.Containers, appsv1beta1.SidecarContainer{
			Container: corev1.Container{Name: c, Image: c + ":1.0"},
		})
	}
	appsv1beta1.SetDefaults(s)
	return s
}

// newPod returns a pod labelled app=<app> with one container per name.
func newPod(app string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "pod", Namespace: "default", Labels: map[string]string{"app": app},
	}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: c + ":1.0"})
	}
	return p
}

// candidateOf wraps a SidecarSet with its hashes.
func candidateOf(s *appsv1beta1.SidecarSet) Candidate {
	h, err := appsv1beta1.ComputeHashes(&s.Spec)
	if err != nil {
		panic(err)
	}
	return Candidate{SidecarSet: s, Hashes: h}
}
