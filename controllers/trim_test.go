package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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
	got, err := NewPodCache(NewInterner()).Trim(pod)
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
