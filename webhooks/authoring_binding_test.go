package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
)

// allowOnly is a fake authorizer allowing the checks it lists, written
// "<verb> <resource>[/<subresource>] <namespace>".
type allowOnly []string

func (a allowOnly) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if slices.Contains(a, fmt.Sprintf("%s %s %s", attrs.GetVerb(), resource, attrs.GetNamespace())) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// TestAuthoringPolicy_NamespaceRightsWhateverTheBinding: while the policy
// and its binding exist, the webhook leaves the policy's validations to the
// API server, so a binding tuned to Warn and Audit is honoured (a
// privileged sidecar without inject-privileged goes through the webhook);
// the rights in each namespace are checked by the webhook whatever the
// binding says; without the binding the webhook enforces the policy again.
func TestAuthoringPolicy_NamespaceRightsWhateverTheBinding(t *testing.T) {
	t.Parallel()
	compiled, err := authoring.Load()
	if err != nil {
		t.Fatal(err)
	}
	policy, binding, err := authoring.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
	set := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			NamespaceSelector: appsv1beta1.SelectNamespace("team-a"),
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{
				Name: "agent", Image: "agent:1", SecurityContext: &corev1.SecurityContext{Privileged: new(true)},
			}}},
		},
	}
	ctx := admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Name: set.Name, UserInfo: authenticationv1.UserInfo{Username: "bob"},
	}})
	for _, tc := range []struct {
		name      string
		installed []client.Object
		allowed   allowOnly
		want      string // a part of the refusal, or "" for none
	}{{
		name: "binding tuned to Warn: pods in the namespace are enough at the webhook", installed: []client.Object{policy, binding},
		allowed: allowOnly{"create pods team-a"},
	}, {
		name: "binding tuned to Warn: the rights in the namespace are still checked", installed: []client.Object{policy, binding},
		want: `requires permission to create pods in namespace "team-a"`,
	}, {
		name: "no binding: the webhook enforces the policy", installed: []client.Object{policy},
		allowed: allowOnly{"create pods team-a"},
		want:    "injecting privileged settings requires permission to inject-privileged",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objects := make([]client.Object, 0, len(tc.installed))
			for _, o := range tc.installed {
				objects = append(objects, o.DeepCopyObject().(client.Object))
			}
			a := &AuthoringPolicy{
				Policy:     compiled,
				Reader:     fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects...).Build(),
				Authorizer: tc.allowed,
			}
			err := a.check(ctx, set.DeepCopy(), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
