package podmeta

import (
	"errors"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

func TestApply(t *testing.T) {
	t.Parallel()
	seed, err := policy.ParseWhitelist(`{"rules":[{"selector":{"matchLabels":{"sidecar":"log-agent"}},` +
		`"allowedAnnotationKeyExprs":["^oom-score$","^version\\.sidecarset\\.kruise\\.io/"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	whitelisted := Whitelist{Snapshot: &policy.Snapshot{Whitelist: seed, Present: true}}
	anyKey := Whitelist{Snapshot: &policy.Snapshot{}, DefaultsAllowed: true}
	set := func(labels map[string]string, p appsv1beta1.SidecarSetPatchPolicyType, annotations map[string]string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: labels},
			Spec: appsv1beta1.SidecarSetSpec{PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{
				{PatchPolicy: p, Annotations: annotations},
			}},
		}
	}
	logAgent := map[string]string{"sidecar": "log-agent"}
	tests := []struct {
		name        string
		set         *appsv1beta1.SidecarSet
		whitelist   Whitelist
		annotations map[string]string
		want        Result
		wantErr     string
	}{
		{
			name:      "no patchPodMetadata changes nothing",
			set:       &appsv1beta1.SidecarSet{},
			whitelist: whitelisted,
		},
		{
			name:        "an allowed key is patched",
			set:         set(logAgent, appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"oom-score": "1"}),
			whitelist:   whitelisted,
			annotations: map[string]string{"oom-score": "0"},
			want:        Result{Changed: map[string]string{"oom-score": "1"}},
		},
		{
			name:        "a reserved key is never patched, even when the whitelist allows it",
			set:         set(logAgent, appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"version.sidecarset.kruise.io/envoy-1": "9"}),
			whitelist:   whitelisted,
			annotations: map[string]string{},
			want: Result{Changed: map[string]string{}, Skipped: []Skip{
				{Key: "version.sidecarset.kruise.io/envoy-1", Reason: "holds SidecarSet state and was not patched"}}},
		},
		{
			name:      "a key of a SidecarSet no rule selects is not patched",
			set:       set(nil, appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"oom-score": "1"}),
			whitelist: whitelisted,
			want: Result{Changed: map[string]string{}, Skipped: []Skip{{Key: "oom-score", Reason: "was not patched: " +
				`sidecarSet patch metadata annotation(oom-score) is not allowed: no rule of the whitelist allows a key for this SidecarSet (1 rules, 0 selecting its labels "")`}}},
		},
		{
			name:      "an invalid whitelist that never parsed allows nothing, whatever the gate",
			set:       set(logAgent, appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"oom-score": "1"}),
			whitelist: Whitelist{Snapshot: &policy.Snapshot{Present: true, LoadError: errors.New("rules[0]: bad")}, DefaultsAllowed: true},
			want: Result{Changed: map[string]string{}, Skipped: []Skip{{Key: "oom-score",
				Reason: "was not patched: SidecarSet patch metadata whitelist is invalid: rules[0]: bad"}}},
		},
		{
			name:        "a key that does not change is neither patched nor reported",
			set:         set(nil, appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"team": "web"}),
			whitelist:   Whitelist{},
			annotations: map[string]string{"team": "api"},
			want:        Result{Changed: map[string]string{}},
		},
		{
			name:        "the gate without ConfigMap allows every key but the reserved ones",
			set:         set(nil, appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"team": "web", "kruise.io/sidecarset-injected-list": "x"}),
			whitelist:   anyKey,
			annotations: map[string]string{},
			want: Result{Changed: map[string]string{"team": "web"}, Skipped: []Skip{
				{Key: "kruise.io/sidecarset-injected-list", Reason: "holds SidecarSet state and was not patched"}}},
		},
		{
			name:        "a merge error is an error",
			set:         set(logAgent, appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{"oom-score": `{"a":1}`}),
			whitelist:   whitelisted,
			annotations: map[string]string{"oom-score": "high"},
			wantErr:     `annotation oom-score: merging "{\"a\":1}" into "high": the pod's value is not JSON`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := maps.Clone(tc.annotations)
			got, err := Apply(tc.annotations, tc.set, tc.whitelist)
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.annotations); diff != "" {
				t.Errorf("Apply modified the annotations (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSkipWarning(t *testing.T) {
	t.Parallel()
	got := Skip{Key: "kruise.io/sidecarset-hash", Reason: "holds SidecarSet state and was not patched"}.Warning("proxy")
	want := `SidecarSet "proxy": patchPodMetadata: annotation kruise.io/sidecarset-hash holds SidecarSet state and was not patched`
	if got != want {
		t.Errorf("Warning = %q, want %q", got, want)
	}
}
