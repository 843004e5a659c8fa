package inject

import (
	"strings"
	"testing"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// TestInject_TokenBeforeAdmission (issue 22): a manifest injected offline
// by the kubectl plugin has no token yet; the API server's ServiceAccount
// admission mounts it into every container without a mount at its path
// when the pod is created, and the webhook leaves an already injected pod
// alone. So a sidecar whose author lacks inject-secrets gets the empty
// directory at the token's path before admission, and the pod records it.
func TestInject_TokenBeforeAdmission(t *testing.T) {
	t.Parallel()
	sidecarMount := func(out Output) string {
		for _, c := range out.Pod.Spec.Containers {
			if c.Name != "agent" {
				continue
			}
			for _, m := range c.VolumeMounts {
				if m.MountPath == serviceAccountMountPath {
					return m.Name
				}
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name            string
		record          *string
		beforeAdmission bool
		automount       *bool
		mount           string // the volume at the sidecar's token path
		restricted      bool
	}{
		{name: "offline, an author without inject-secrets: the empty directory, recorded", record: new(""), beforeAdmission: true, mount: noTokenVolume, restricted: true},
		{name: "offline, an author holding inject-secrets: the token, later", record: new(authority.VerbSecrets), beforeAdmission: true},
		{name: "offline, a SidecarSet without a record (OpenKruise's): the token, later", beforeAdmission: true},
		{name: "offline, a pod that opts out of the token: nothing to withhold", record: new(""), beforeAdmission: true, automount: new(false)},
		{name: "at admission, a pod without a token has none to withhold", record: new("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("agents", "web", "agent")
			if tc.record != nil {
				s.Annotations = map[string]string{authority.Annotation: *tc.record}
			}
			pod := newPod("web", "main")
			pod.Spec.AutomountServiceAccountToken = tc.automount
			out, err := Inject(Input{Pod: pod, Candidates: []Candidate{candidateOf(s)}, Options: Options{BeforeAdmission: tc.beforeAdmission}})
			if err != nil {
				t.Fatal(err)
			}
			if got := sidecarMount(out); got != tc.mount {
				t.Errorf("the sidecar mounts %q at the token's path, want %q", got, tc.mount)
			}
			hasVolume := false
			for _, v := range out.Pod.Spec.Volumes {
				hasVolume = hasVolume || v.Name == noTokenVolume
			}
			if hasVolume != (tc.mount == noTokenVolume) {
				t.Errorf("the pod has the volume %s: %v", noTokenVolume, hasVolume)
			}
			recorded := out.Pod.Annotations[appsv1beta1.RestrictedAnnotation]
			if got := strings.Contains(recorded, "was not given the pod's ServiceAccount token"); got != tc.restricted {
				t.Errorf("restricted annotation %q", recorded)
			}
			if got := len(out.Restricted) > 0; got != tc.restricted {
				t.Errorf("restrictions %v", out.Restricted)
			}
		})
	}
}
