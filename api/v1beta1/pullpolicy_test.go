package v1beta1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWithoutImageHashWithPullPolicies_Substitution(t *testing.T) {
	t.Parallel()
	spec := func(image string, policy corev1.PullPolicy) *SidecarSetSpec {
		s := &SidecarSet{Spec: SidecarSetSpec{Containers: []SidecarContainer{{Container: corev1.Container{
			Name: "sidecar", Image: image, ImagePullPolicy: policy, Command: []string{"sleep", "999d"},
		}}}}}
		SetDefaults(s)
		return &s.Spec
	}
	hashes := func(s *SidecarSetSpec) Hashes {
		h, err := ComputeHashes(s)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	pod := func(p corev1.PullPolicy) func(string) (corev1.PullPolicy, bool) {
		return func(name string) (corev1.PullPolicy, bool) { return p, name == "sidecar" }
	}
	tests := []struct {
		name            string
		injected, now   *SidecarSetSpec
		podPolicy       corev1.PullPolicy
		wantSubstituted bool
		wantMatch       bool
	}{
		{"a replace moving the tag to latest without a policy matches the pod injected before",
			spec("centos:6.7", ""), spec("centos:latest", ""), corev1.PullIfNotPresent, true, true},
		{"a replace moving the tag from latest without a policy matches the pod injected before",
			spec("centos:latest", ""), spec("centos:7", ""), corev1.PullAlways, true, true},
		{"an untagged image defaults like latest",
			spec("centos", ""), spec("centos:7", ""), corev1.PullAlways, true, true},
		{"an explicit policy that is not the image's default is a real change",
			spec("centos:6.7", ""), spec("centos:7", corev1.PullAlways), corev1.PullIfNotPresent, false, false},
		{"the same policy substitutes nothing",
			spec("centos:6.7", ""), spec("centos:7", ""), corev1.PullIfNotPresent, false, false},
		{"a change beyond the policy still differs",
			spec("centos:6.7", ""), func() *SidecarSetSpec {
				s := spec("centos:latest", "")
				s.Containers[0].Command = []string{"sleep", "1d"}
				return s
			}(), corev1.PullIfNotPresent, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, substituted, err := WithoutImageHashWithPullPolicies(tc.now, pod(tc.podPolicy))
			if err != nil {
				t.Fatal(err)
			}
			if substituted != tc.wantSubstituted {
				t.Fatalf("substituted = %v, want %v", substituted, tc.wantSubstituted)
			}
			if match := got == hashes(tc.injected).WithoutImage; match != tc.wantMatch {
				t.Errorf("matches the injected without-image hash: %v, want %v", match, tc.wantMatch)
			}
			if now := hashes(tc.now); now.WithoutImage == hashes(tc.injected).WithoutImage && tc.wantSubstituted {
				t.Errorf("the stored without-image hashes are equal: the case does not exercise the substitution")
			}
		})
	}
}

// The substitution leaves the spec and its stored hashes alone.
func TestWithoutImageHashWithPullPolicies_StoredHashUnchanged(t *testing.T) {
	t.Parallel()
	s := &SidecarSet{Spec: SidecarSetSpec{Containers: []SidecarContainer{{Container: corev1.Container{Name: "c", Image: "a:latest"}}}}}
	SetDefaults(s)
	before, err := ComputeHashes(&s.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := WithoutImageHashWithPullPolicies(&s.Spec, func(string) (corev1.PullPolicy, bool) { return corev1.PullNever, true }); err != nil {
		t.Fatal(err)
	}
	after, err := ComputeHashes(&s.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if before != after || s.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("the spec changed: %+v -> %+v, policy %s", before, after, s.Spec.Containers[0].ImagePullPolicy)
	}
}
