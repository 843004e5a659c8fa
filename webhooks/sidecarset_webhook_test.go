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
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

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
	resp := SidecarSetDefaulter{}.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("defaulting denied: %v", resp.Result)
	}
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
