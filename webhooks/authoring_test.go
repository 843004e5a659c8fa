package webhooks

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
)

func TestAuthoringPolicy_EnforcedByAPIServerWhenPolicyAndBindingExist(t *testing.T) {
	t.Parallel()
	policy, binding, err := authoring.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := authoring.Load()
	if err != nil {
		t.Fatal(err)
	}
	otherBinding := binding.DeepCopy()
	otherBinding.Spec.PolicyName = "someone-else"
	tests := []struct {
		name    string
		objects []client.Object
		want    bool
	}{
		{"both exist", []client.Object{policy, binding}, true},
		{"no binding: nothing enforces the policy", []client.Object{policy}, false},
		{"no policy: the binding binds nothing", []client.Object{binding}, false},
		{"a binding of that name for another policy", []client.Object{policy, otherBinding}, false},
		{"nothing installed", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objects := make([]client.Object, 0, len(tc.objects))
			for _, o := range tc.objects {
				objects = append(objects, o.DeepCopyObject().(client.Object))
			}
			reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects...).Build()
			a := &AuthoringPolicy{Policy: compiled, Reader: reader}
			got, err := a.enforcedByAPIServer(t.Context())
			if err != nil || got != tc.want {
				t.Errorf("enforcedByAPIServer = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestStatusCode_FollowsThePolicyReason(t *testing.T) {
	t.Parallel()
	for reason, want := range map[metav1.StatusReason]int32{
		metav1.StatusReasonForbidden: 403, metav1.StatusReasonInvalid: 422, metav1.StatusReasonUnauthorized: 401, "": 422,
	} {
		if got := statusCode(reason); got != want {
			t.Errorf("statusCode(%q) = %d, want %d", reason, got, want)
		}
	}
}
