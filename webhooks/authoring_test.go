package webhooks

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
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

func TestSpecChangedByOthers(t *testing.T) {
	t.Parallel()
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		f := metav1.FieldsV1{}
		f.SetRawBytes([]byte(fields))
		return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: &f}
	}
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"only the manager wrote it", []metav1.ManagedFieldsEntry{entry(FieldOwner, `{"f:metadata":{},"f:spec":{}}`)}, false},
		{"someone else labelled it", []metav1.ManagedFieldsEntry{entry(FieldOwner, `{"f:spec":{}}`), entry("kubectl-label", `{"f:metadata":{"f:labels":{}}}`)}, false},
		{"an administrator edited its spec", []metav1.ManagedFieldsEntry{entry(FieldOwner, `{"f:spec":{}}`), entry("kubectl-edit", `{"f:spec":{"f:validationActions":{}}}`)}, true},
		{"kubectl applied it (config/default)", []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", `{"f:spec":{}}`)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := specChangedByOthers(tc.entries); got != tc.want {
				t.Errorf("specChangedByOthers = %v, want %v", got, tc.want)
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

// The SubjectAccessReview authorizer, with its cache of answers, is
// dropped a minute after it was made, even when nothing asks it again (the
// library's cache keeps expired answers until newer ones push them out),
// and made afresh at the next check.
func TestRenewedAuthorizer_DroppedAfterAMinute(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	made := 0
	var scheduled []func()
	r := &renewedAuthorizer{every: time.Minute, now: func() time.Time { return now },
		renew: func() (authorizer.Authorizer, error) {
			made++
			if made%2 == 1 {
				return authorizerfactory.NewAlwaysAllowAuthorizer(), nil
			}
			return authorizerfactory.NewAlwaysDenyAuthorizer(), nil
		},
		afterFunc: func(d time.Duration, f func()) {
			if d != time.Minute {
				t.Errorf("drop scheduled after %v, want a minute", d)
			}
			scheduled = append(scheduled, f)
		}}
	attrs := authorizer.AttributesRecord{Verb: "create", Resource: "pods"}
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 1 || len(scheduled) != 1 {
		t.Fatalf("first check: decision %v, %d made, %d drops scheduled; want allow, 1, 1", d, made, len(scheduled))
	}
	now = now.Add(30 * time.Second)
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 1 {
		t.Fatalf("within the minute: decision %v, %d made; want the same authorizer", d, made)
	}
	// A minute on, nothing asked: the drop lets it go.
	now = now.Add(30 * time.Second)
	scheduled[0]()
	r.mu.Lock()
	held := r.current
	r.mu.Unlock()
	if held != nil {
		t.Fatal("a minute after it was made and with no check since, the authorizer (and its cache) is still held")
	}
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionNoOpinion || made != 2 || len(scheduled) != 2 {
		t.Fatalf("after the drop: decision %v, %d made, %d drops scheduled; want a fresh authorizer's answer, 2, 2", d, made, len(scheduled))
	}
	// A drop scheduled for an older authorizer leaves a younger one.
	scheduled[0]()
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionNoOpinion || made != 2 {
		t.Fatalf("an old drop let the fresh authorizer go (decision %v, %d made)", d, made)
	}
	// Asked past its minute before the drop ran: made afresh at once.
	now = now.Add(time.Minute)
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 3 {
		t.Fatalf("past the minute: decision %v, %d made; want a fresh authorizer", d, made)
	}
}
