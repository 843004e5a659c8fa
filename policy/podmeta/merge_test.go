package podmeta

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func entry(policy appsv1beta1.SidecarSetPatchPolicyType, annotations map[string]string) appsv1beta1.SidecarSetPatchPodMetadata {
	return appsv1beta1.SidecarSetPatchPodMetadata{Annotations: annotations, PatchPolicy: policy}
}

func TestPatch_Policies(t *testing.T) {
	t.Parallel()
	const (
		retain    = appsv1beta1.SidecarSetRetainPatchPolicy
		overwrite = appsv1beta1.SidecarSetOverwritePatchPolicy
		merge     = appsv1beta1.SidecarSetMergePatchJSONPatchPolicy
	)
	tests := []struct {
		name    string
		current map[string]string
		patches []appsv1beta1.SidecarSetPatchPodMetadata
		want    map[string]string
		wantErr string
	}{{
		name:    "the documented example merges JSON with sorted keys",
		current: map[string]string{"oom-score": `{"main": 2}`},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"log-agent": 1}`})},
		want:    map[string]string{"oom-score": `{"log-agent":1,"main":2}`},
	}, {
		name:    "MergePatchJson on a pod without the key sets the value verbatim",
		current: map[string]string{"other": "x"},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"log-agent": 1}`})},
		want:    map[string]string{"oom-score": `{"log-agent": 1}`},
	}, {
		name:    "MergePatchJson on an empty value sets the value verbatim",
		current: map[string]string{"oom-score": ""},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"b": 1}`})},
		want:    map[string]string{"oom-score": `{"b": 1}`},
	}, {
		name:    "MergePatchJson that changes nothing reports nothing",
		current: map[string]string{"oom-score": `{"a":1,"b":2}`},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"b":2}`})},
		want:    map[string]string{},
	}, {
		name:    "MergePatchJson with a null removes the member",
		current: map[string]string{"oom-score": `{"a":1,"b":2}`},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"a":null}`})},
		want:    map[string]string{"oom-score": `{"b":2}`},
	}, {
		name:    "MergePatchJson into a pod value that is not JSON is an error",
		current: map[string]string{"oom-score": "high"},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": `{"a":1}`})},
		wantErr: `annotation oom-score: merging "{\"a\":1}" into "high": the pod's value is not JSON`,
	}, {
		name:    "MergePatchJson of a SidecarSet value that is not JSON is an error",
		current: map[string]string{"oom-score": `{"a":1}`},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(merge, map[string]string{"oom-score": "{"})},
		wantErr: `annotation oom-score: merging "{" into "{\"a\":1}": the SidecarSet's value is not JSON`,
	}, {
		name:    "Retain keeps an existing empty value",
		current: map[string]string{"k": ""},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(retain, map[string]string{"k": "v"})},
		want:    map[string]string{},
	}, {
		name:    "Retain, the default policy, sets an absent key",
		current: map[string]string{},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry("", map[string]string{"k": "v"})},
		want:    map[string]string{"k": "v"},
	}, {
		name:    "Overwrite replaces a different value",
		current: map[string]string{"k": "old", "same": "v"},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry(overwrite, map[string]string{"k": "new", "same": "v"})},
		want:    map[string]string{"k": "new"},
	}, {
		name:    "entries apply in sequence, each on the result of the previous ones",
		current: map[string]string{"cfg": `{"z":0}`},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{
			entry(overwrite, map[string]string{"cfg": `{"a":1}`}),
			entry(merge, map[string]string{"cfg": `{"b":2}`}),
			entry(retain, map[string]string{"cfg": "ignored", "new": "1"}),
		},
		want: map[string]string{"cfg": `{"a":1,"b":2}`, "new": "1"},
	}, {
		name:    "entries that undo each other report no change",
		current: map[string]string{"k": "v"},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{
			entry(overwrite, map[string]string{"k": "x"}),
			entry(overwrite, map[string]string{"k": "v"}),
		},
		want: map[string]string{},
	}, {
		name:    "an unknown policy is an error",
		current: map[string]string{},
		patches: []appsv1beta1.SidecarSetPatchPodMetadata{entry("Append", map[string]string{"k": "v"})},
		wantErr: `annotation k: unknown patchPolicy "Append"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := maps.Clone(tc.current)
			got, err := patch(tc.current, tc.patches)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.current); diff != "" {
				t.Errorf("the input was modified (-before +after):\n%s", diff)
			}
		})
	}
}
