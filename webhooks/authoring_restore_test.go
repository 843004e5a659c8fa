package webhooks

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// The on-call role's rights: the verbs pause-rollouts and rollback, no
// inject verb, no pods anywhere.
var onCall = allowOnly{"pause-rollouts sidecarsets ", "rollback sidecarsets "}

const (
	restoreNamespace = "sidecarset-system"
	everyVerb        = "inject-privileged,inject-secrets,inject-all-namespaces"
)

// clusterWide is the cluster-wide SidecarSet agent (UID uid-1), with a
// privileged sidecar running image, its authority record, defaulted as
// stored.
func clusterWide(image, record string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", UID: "uid-1", Annotations: map[string]string{authority.Annotation: record}},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{
				Name: "agent", Image: image, SecurityContext: &corev1.SecurityContext{Privileged: new(true)},
			}}},
		},
	}
	appsv1beta1.SetDefaults(s)
	return s
}

// revisionsOf records each SidecarSet as a revision, numbered from 1,
// controlled by owner.
func revisionsOf(t *testing.T, owner string, sets ...*appsv1beta1.SidecarSet) []client.Object {
	t.Helper()
	var out []client.Object
	for i, s := range sets {
		owned := s.DeepCopy()
		owned.UID = types.UID("uid-" + owner)
		rev, err := revision.New(owned, restoreNamespace, int64(i+1), nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rev)
	}
	return out
}

func restoreReader(objects ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects...).
		WithIndex(&appsv1.ControllerRevision{}, fieldindex.RevisionBySidecarSet, fieldindex.RevisionSidecarSet).Build()
}

// undone is old with the content of s, resumed and without a partition, as
// rollout undo writes it.
func undone(old, content *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
	s := old.DeepCopy()
	s.Spec.Containers = content.Spec.Containers
	s.Spec.UpdateStrategy.Paused, s.Spec.UpdateStrategy.Partition = false, nil
	return s
}

// The validating webhook: a restore by the verb rollback must put back a
// revision the SidecarSet owns, within its recorded authority, whoever
// evaluates the policy; one that does not is judged as anyone's write.
func TestAuthoringPolicy_RestoreByRollback(t *testing.T) {
	t.Parallel()
	compiled, err := authoring.Load()
	if err != nil {
		t.Fatal(err)
	}
	policy, binding, err := authoring.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	good, bad := clusterWide("agent:1", everyVerb), clusterWide("agent:2", everyVerb)
	bad.Spec.UpdateStrategy.Paused = true
	bad.Spec.UpdateStrategy.Partition = new(intstr.FromString("90%"))
	const allNamespaces = `requires permission to inject-all-namespaces sidecarsets.apps.kruise.io "agent", which user "oscar" does not have`
	for _, installed := range [][]client.Object{nil, {policy, binding}} {
		for _, tc := range []struct {
			name   string
			old, s *appsv1beta1.SidecarSet
			revs   []client.Object
			want   string // a part of the refusal, or "" for none
		}{{
			name: "undo to an owned revision", old: bad, s: undone(bad, good), revs: revisionsOf(t, "1", good, bad),
		}, {
			name: "a resume", old: bad, s: func() *appsv1beta1.SidecarSet { s := bad.DeepCopy(); s.Spec.UpdateStrategy.Paused = false; return s }(),
		}, {
			name: "content no revision records", old: bad, s: undone(bad, clusterWide("evil:1", everyVerb)), revs: revisionsOf(t, "1", good, bad),
			want: `(evaluated by the operator's webhook: without the verb rollback: spec: the content is not that of a revision SidecarSet "agent" owns) ` +
				`denied request: spec.namespaceSelector: changing a SidecarSet that injects into every namespace ` + allNamespaces,
		}, {
			name: "a revision of an earlier SidecarSet of the same name", old: bad, s: undone(bad, good), revs: revisionsOf(t, "0", good),
			want: allNamespaces,
		}, {
			name: "privileged content the recorded authority does not cover",
			old:  clusterWide("agent:2", "inject-all-namespaces"), s: undone(clusterWide("agent:2", "inject-all-namespaces"), good),
			revs: revisionsOf(t, "1", good),
			want: allNamespaces,
		}} {
			name := tc.name
			if installed != nil {
				name += ", the API server evaluating the policy"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				objects := append([]client.Object{}, tc.revs...)
				for _, o := range installed {
					objects = append(objects, o.DeepCopyObject().(client.Object))
				}
				a := &AuthoringPolicy{Policy: compiled, Reader: restoreReader(objects...), Authorizer: onCall, Namespace: restoreNamespace}
				ctx := admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					Operation: admissionv1.Update, Name: "agent", UserInfo: authenticationv1.UserInfo{Username: "oscar"},
				}})
				err := a.check(ctx, tc.s, tc.old)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("refused: %v", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("got %v, want a refusal saying %q", err, tc.want)
				}
			})
		}
	}
}

// The defaulting webhook keeps the authority record on a restore by the
// verb rollback (neither raised nor lowered to the on-call's verbs), and
// records the writer's verbs on any other change of what is injected.
func TestSidecarSetDefaulter_KeepsTheRecordOnARestore(t *testing.T) {
	t.Parallel()
	compiled, err := authoring.Load()
	if err != nil {
		t.Fatal(err)
	}
	good, bad := clusterWide("agent:1", everyVerb), clusterWide("agent:2", everyVerb)
	bad.Spec.UpdateStrategy.Paused = true
	for _, tc := range []struct {
		name   string
		s      *appsv1beta1.SidecarSet
		authz  allowOnly
		want   string
		leaves bool // the write leaves the record out
	}{
		{name: "undo by the on-call role", s: undone(bad, good), authz: onCall, want: everyVerb},
		{name: "undo by the on-call role, the record left out", s: undone(bad, good), authz: onCall, want: everyVerb, leaves: true},
		{name: "other content by the on-call role", s: undone(bad, clusterWide("evil:1", everyVerb)), authz: onCall, want: ""},
		{name: "undo without the verb rollback", s: undone(bad, good), authz: allowOnly{"inject-all-namespaces sidecarsets "}, want: "inject-all-namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &AuthoringPolicy{Policy: compiled, Reader: restoreReader(revisionsOf(t, "1", good, bad)...), Authorizer: tc.authz, Namespace: restoreNamespace}
			written := tc.s.DeepCopy()
			if tc.leaves {
				delete(written.Annotations, authority.Annotation)
			}
			raw, err := json.Marshal(written)
			if err != nil {
				t.Fatal(err)
			}
			oldRaw, err := json.Marshal(bad)
			if err != nil {
				t.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, Name: "agent", UserInfo: authenticationv1.UserInfo{Username: "oscar"},
				Kind:   metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "SidecarSet"},
				Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: oldRaw},
			}}
			resp := SidecarSetDefaulter{Authorizer: tc.authz, Restores: a}.Handle(t.Context(), req)
			if !resp.Allowed {
				t.Fatalf("refused: %s", resp.Result.Message)
			}
			out := patched(t, resp, raw)
			var got appsv1beta1.SidecarSet
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if r := got.Annotations[authority.Annotation]; r != tc.want {
				t.Errorf("record = %q, want %q", r, tc.want)
			}
		})
	}
}
