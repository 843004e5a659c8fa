package webhooks

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

// holds is an authorizer that allows exactly the given custom verbs.
type holds authority.Verbs

func (h holds) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	v, err := authority.Parse(a.GetVerb())
	if err == nil && v != authority.None && authority.Verbs(h).Has(v) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// recordOf runs the defaulting webhook for a user holding verbs and returns
// the patched object's authority record ("-" when it has none) or the
// refusal's message.
func recordOf(t *testing.T, verbs authority.Verbs, op admissionv1.Operation, object, old string) string {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Kind: metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "SidecarSet"},
		Object: runtime.RawExtension{Raw: []byte(object)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	resp := SidecarSetDefaulter{Authorizer: holds(verbs)}.Handle(context.Background(), req)
	if !resp.Allowed {
		return resp.Result.Message
	}
	out := patched(t, resp, []byte(object))
	var got appsv1beta1.SidecarSet
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if r, ok := got.Annotations[authority.Annotation]; ok {
		return r
	}
	return "-"
}

// The authority record (issue 22): written from the writer's permissions on
// a create and on a change of what is injected, kept otherwise, never
// written by a user.
func TestSidecarSetDefaulter_RecordsTheAuthority(t *testing.T) {
	t.Parallel()
	const (
		plain  = `{"metadata":{"name":"a"},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:1"}]}}`
		paused = `{"metadata":{"name":"a"},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:1"}],"updateStrategy":{"paused":true}}}`
		image2 = `{"metadata":{"name":"a"},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:2"}]}}`
	)
	withRecord := func(obj, record string) string {
		return strings.Replace(obj, `"name":"a"}`, `"name":"a","annotations":{"sidecarset-operator.dev/authority":"`+record+`"}}`, 1)
	}
	tests := []struct {
		name        string
		verbs       authority.Verbs
		op          admissionv1.Operation
		object, old string
		want        string
	}{
		{"a create records the writer's verbs", authority.Secrets | authority.AllNamespaces, admissionv1.Create, plain, "", "inject-secrets,inject-all-namespaces"},
		{"a create by a writer with no verb records none", authority.None, admissionv1.Create, plain, "", ""},
		{"a create carrying a record other than the writer's is refused", authority.Secrets, admissionv1.Create, withRecord(plain, "inject-privileged"), "",
			`sidecarsets.apps.kruise.io "a" is forbidden: metadata.annotations[sidecarset-operator.dev/authority]: a new SidecarSet may not carry it (the operator records "inject-secrets", the verbs you hold); remove it; only the operator writes it, from the permissions of whoever changes what the SidecarSet injects`},
		{"a create carrying a lesser record is refused too", authority.All, admissionv1.Create, withRecord(plain, "inject-privileged"), "",
			`sidecarsets.apps.kruise.io "a" is forbidden: metadata.annotations[sidecarset-operator.dev/authority]: a new SidecarSet may not carry it (the operator records "inject-privileged,inject-secrets,inject-all-namespaces", the verbs you hold); remove it; only the operator writes it, from the permissions of whoever changes what the SidecarSet injects`},
		{"a copy carrying the writer's own record is accepted", authority.Secrets, admissionv1.Create, withRecord(plain, "inject-secrets"), "", "inject-secrets"},
		{"a pause keeps the record", authority.None, admissionv1.Update, paused, withRecord(plain, "inject-privileged"), "inject-privileged"},
		{"a pause of a SidecarSet without a record adds none", authority.None, admissionv1.Update, paused, plain, "-"},
		{"an update that leaves the record out keeps it", authority.None, admissionv1.Update, paused, withRecord(plain, "inject-secrets"), "inject-secrets"},
		{"an update with the same record keeps it", authority.None, admissionv1.Update, withRecord(paused, "inject-secrets"), withRecord(plain, "inject-secrets"), "inject-secrets"},
		{"an update that changes the record is refused", authority.All, admissionv1.Update, withRecord(paused, "inject-privileged"), withRecord(plain, ""),
			`sidecarsets.apps.kruise.io "a" is forbidden: metadata.annotations[sidecarset-operator.dev/authority]: the request changes it; remove it from the object you write; only the operator writes it, from the permissions of whoever changes what the SidecarSet injects`},
		{"a new image records the writer's verbs", authority.AllNamespaces, admissionv1.Update, image2, withRecord(plain, "inject-privileged,inject-secrets"), "inject-all-namespaces"},
		{"a new image of a SidecarSet without a record records the writer's verbs", authority.Privileged, admissionv1.Update, image2, plain, "inject-privileged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := recordOf(t, tc.verbs, tc.op, tc.object, tc.old); got != tc.want {
				t.Errorf("record = %q, want %q", got, tc.want)
			}
		})
	}
}

// defaulted runs the defaulting webhook on a SidecarSet written in its own
// apiVersion and returns the patched object's JSON.
func defaulted(t *testing.T, raw []byte) []byte {
	t.Helper()
	var meta metav1.TypeMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	gv, _ := strings.CutPrefix(meta.APIVersion, "apps.kruise.io/")
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create,
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: gv, Kind: "SidecarSet"},
		Object:    runtime.RawExtension{Raw: raw},
	}}
	// No namespace and no SidecarSet exist: nothing is recorded of them.
	empty := fake.NewClientBuilder().WithScheme(emptyScheme()).Build()
	resp := SidecarSetDefaulter{Authorizer: holds(authority.All), Reader: empty}.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("defaulting denied: %v", resp.Result)
	}
	out := patched(t, resp, raw)
	return out
}

// TestSidecarSetDefaulter_AsOpenKruise19 applies the defaulting webhook to
// the manifests OpenKruise 1.9 was given, through the version each was
// written in, and compares the result, decoded as the API server stores it,
// with what OpenKruise stored: the same defaulted spec and the same two
// hashes.
func TestSidecarSetDefaulter_AsOpenKruise19(t *testing.T) {
	t.Parallel()
	inputs, err := fixtures.KruiseRawDocs(fixtures.Kruise19, "input-sidecarsets.yaml", "SidecarSet")
	if err != nil {
		t.Fatal(err)
	}
	stored := fixtures.MustList[appsv1beta1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-injected-v1beta1.yaml")
	if len(inputs) != len(stored) {
		t.Fatalf("%d inputs, %d stored SidecarSets", len(inputs), len(stored))
	}
	versions := map[string]bool{}
	for _, raw := range inputs {
		var meta metav1.TypeMeta
		_ = json.Unmarshal(raw, &meta)
		versions[meta.APIVersion] = true
		got, _, errs, err := DecodeSidecarSet(strings.TrimPrefix(meta.APIVersion, "apps.kruise.io/"), defaulted(t, raw))
		if err != nil || len(errs) > 0 {
			t.Fatalf("decoding: %v %v", err, errs)
		}
		want := fixtures.MustNamed(t, stored, got.Name, func(s *appsv1beta1.SidecarSet) string { return s.Name })
		for _, key := range []string{appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation} {
			if got.Annotations[key] != want.Annotations[key] {
				t.Errorf("%s (%s): %s = %s, OpenKruise wrote %s", got.Name, meta.APIVersion, key, got.Annotations[key], want.Annotations[key])
			}
		}
		if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
			t.Errorf("%s (%s): defaulted spec differs from OpenKruise's (-kruise +ours):\n%s", got.Name, meta.APIVersion, diff)
		}
	}
	if !versions["apps.kruise.io/v1alpha1"] || !versions["apps.kruise.io/v1beta1"] {
		t.Errorf("the inputs cover %v, want both versions", versions)
	}
}

// TestSidecarSetDefaulter_KeepsWhatV1alpha1Wrote: defaulting a v1alpha1
// SidecarSet leaves spec.namespace, a namespaceSelector given with it and
// the custom-version label as written (the API server converts them when it
// stores the object).
func TestSidecarSetDefaulter_KeepsWhatV1alpha1Wrote(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"SidecarSet",` +
		`"metadata":{"name":"a","labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}},` +
		`"spec":{"namespace":"team-a","namespaceSelector":{"matchLabels":{"env":"prod"}},` +
		`"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"agent","image":"agent:1"}]}}`)
	var got map[string]any
	if err := json.Unmarshal(defaulted(t, raw), &got); err != nil {
		t.Fatal(err)
	}
	spec := got["spec"].(map[string]any)
	if spec["namespace"] != "team-a" || spec["namespaceSelector"] == nil {
		t.Errorf("spec.namespace and spec.namespaceSelector changed: %v, %v", spec["namespace"], spec["namespaceSelector"])
	}
	if _, ok := spec["customVersion"]; ok {
		t.Error("a v1alpha1 object got spec.customVersion")
	}
	labels := got["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["apps.kruise.io/sidecarset-custom-version"] != "v1" {
		t.Errorf("the custom-version label changed: %v", labels)
	}
	if spec["updateStrategy"].(map[string]any)["type"] != "RollingUpdate" {
		t.Errorf("not defaulted: %v", spec["updateStrategy"])
	}
}

func TestDecodeSidecarSet_WarningsAndErrorsOfEachVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, version, object string
		wantWarning, wantErr  string
		wantSelector          map[string]string
		wantCustomVersion     string
	}{{
		name: "v1alpha1 namespace becomes the namespaceSelector", version: "v1alpha1",
		object:       `{"spec":{"namespace":"team-a"}}`,
		wantSelector: map[string]string{"kubernetes.io/metadata.name": "team-a"},
	}, {
		name: "v1alpha1 namespace with a namespaceSelector: accepted, the namespace wins, with a warning", version: "v1alpha1",
		object:       `{"spec":{"namespace":"team-a","namespaceSelector":{"matchLabels":{"env":"prod"}}}}`,
		wantSelector: map[string]string{"kubernetes.io/metadata.name": "team-a"},
		wantWarning:  `spec.namespaceSelector is dropped: spec.namespace "team-a" wins`,
	}, {
		name: "v1alpha1 namespace that is no namespace name is refused", version: "v1alpha1",
		object:  `{"spec":{"namespace":"Team A"}}`,
		wantErr: `spec.namespace: Invalid value: "Team A"`,
	}, {
		name: "v1alpha1 custom-version label becomes spec.customVersion", version: "v1alpha1",
		object:            `{"metadata":{"labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}}}`,
		wantCustomVersion: "v1",
	}, {
		name: "v1beta1 with the v1alpha1 label only: the label is ignored, with a warning", version: "v1beta1",
		object:      `{"metadata":{"labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}}}`,
		wantWarning: "the label is ignored in apps.kruise.io/v1beta1",
	}, {
		name: "v1beta1 with the label equal to spec.customVersion: no warning", version: "v1beta1",
		object:            `{"metadata":{"labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}},"spec":{"customVersion":"v1"}}`,
		wantCustomVersion: "v1",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, warnings, errs, err := DecodeSidecarSet(tc.version, []byte(tc.object))
			if err != nil {
				t.Fatal(err)
			}
			if got := errs.ToAggregate(); (got == nil) != (tc.wantErr == "") || (got != nil && !strings.Contains(got.Error(), tc.wantErr)) {
				t.Errorf("errors = %v, want %q", got, tc.wantErr)
			}
			hasWarning := slices.ContainsFunc(warnings, func(w string) bool { return tc.wantWarning != "" && strings.Contains(w, tc.wantWarning) })
			if hasWarning != (tc.wantWarning != "") || (tc.wantWarning == "" && len(warnings) > 0) {
				t.Errorf("warnings = %q, want one containing %q", warnings, tc.wantWarning)
			}
			if tc.wantSelector != nil && (s.Spec.NamespaceSelector == nil || !cmp.Equal(s.Spec.NamespaceSelector.MatchLabels, tc.wantSelector)) {
				t.Errorf("namespaceSelector = %v, want matchLabels %v", s.Spec.NamespaceSelector, tc.wantSelector)
			}
			if s.Spec.CustomVersion != tc.wantCustomVersion {
				t.Errorf("customVersion = %q, want %q", s.Spec.CustomVersion, tc.wantCustomVersion)
			}
		})
	}
}

// patched applies an allowed admission response's JSON patch to the
// object's JSON it answered, as the API server does.
func patched(t *testing.T, resp admission.Response, raw []byte) []byte {
	t.Helper()
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
