package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestValidateSidecarSet_Name(t *testing.T) {
	t.Parallel()
	namePath := field.NewPath("metadata", "name")
	const formatMsg = "must consist of lowercase letters, digits and '-', and start and end with a letter or digit " +
		"(regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$), such as 'istio-proxy': the name is copied into label " +
		"values and pod annotations, which must stay valid"
	long := strings.Repeat("a", 64)
	tests := []struct {
		name     string
		setName  string
		isUpdate bool
		want     field.ErrorList
	}{
		{name: "a lowercase name with dashes is accepted", setName: "istio-proxy-2"},
		{name: "a name of 63 characters is accepted", setName: strings.Repeat("a", 63)},
		{
			name: "an uppercase name is rejected with the accepted format", setName: "Sidecar",
			want: field.ErrorList{field.Invalid(namePath, "Sidecar", formatMsg)},
		},
		{
			name: "a dotted name is rejected", setName: "my.sidecar",
			want: field.ErrorList{field.Invalid(namePath, "my.sidecar", formatMsg)},
		},
		{
			name: "a name ending with a dash is rejected", setName: "sidecar-",
			want: field.ErrorList{field.Invalid(namePath, "sidecar-", formatMsg)},
		},
		{
			name: "a name of 64 characters is rejected because it is copied into a label value", setName: long,
			want: field.ErrorList{field.Invalid(namePath, long, "must be at most 63 characters (it has 64): the name is "+
				"copied into the label kruise.io/sidecarset-name of the SidecarSet's ControllerRevisions, and label "+
				"values are limited to 63 characters")},
		},
		{
			name: "an empty name is required", setName: "",
			want: field.ErrorList{field.Required(namePath, "a SidecarSet needs a name")},
		},
		{name: "an existing SidecarSet with a legacy dotted name stays editable", setName: "my.sidecar", isUpdate: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet(tc.setName, "nginx")
			var old *appsv1beta1.SidecarSet
			if tc.isUpdate {
				old = s.DeepCopy()
			}
			errs, warnings := ValidateSidecarSet(s, old, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_PatchPodMetadata(t *testing.T) {
	t.Parallel()
	entries := field.NewPath("spec", "patchPodMetadata")
	tests := []struct {
		name    string
		entries []appsv1beta1.SidecarSetPatchPodMetadata
		want    field.ErrorList
	}{
		{
			name: "valid keys in distinct entries are accepted",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"example.com/log": "on"}},
				{Annotations: map[string]string{"example.com/config": `{"a":1}`}, PatchPolicy: appsv1beta1.SidecarSetMergePatchJSONPatchPolicy},
			},
		},
		{
			name: "an invalid annotation key is rejected on its entry",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"bad key": "v"}},
			},
			want: field.ErrorList{field.Invalid(entries.Index(0).Child("annotations"), "bad key",
				"name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "+
					"alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "+
					"'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")},
		},
		{
			name: "an uppercase annotation key is accepted, as annotation keys are case-insensitive",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"Example.COM/Log": "v"}},
			},
		},
		{
			name: "a key set by two entries is a duplicate on the later entry",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"a": "1", "k": "1"}},
				{Annotations: map[string]string{"k": "2"}, PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy},
				{Annotations: map[string]string{"k": "3"}},
			},
			want: field.ErrorList{
				withDetail(field.Duplicate(entries.Index(1).Child("annotations").Key("k"), "k"),
					"spec.patchPodMetadata[0] already sets this annotation: keep each key in one entry"),
				withDetail(field.Duplicate(entries.Index(2).Child("annotations").Key("k"), "k"),
					"spec.patchPodMetadata[0] already sets this annotation: keep each key in one entry"),
			},
		},
		{
			name: "a MergePatchJson value that is not a JSON object is rejected",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"ok": `{"x":true}`, "list": `[1]`, "text": "plain"},
					PatchPolicy: appsv1beta1.SidecarSetMergePatchJSONPatchPolicy},
			},
			want: field.ErrorList{
				field.Invalid(entries.Index(0).Child("annotations").Key("list"), "[1]",
					"must be a JSON object with patchPolicy MergePatchJson: it is merged into the pod's value as a JSON merge patch"),
				field.Invalid(entries.Index(0).Child("annotations").Key("text"), "plain",
					"must be a JSON object with patchPolicy MergePatchJson: it is merged into the pod's value as a JSON merge patch"),
			},
		},
		{
			name: "a non-JSON value is fine with Overwrite",
			entries: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{"text": "plain"}, PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.PatchPodMetadata = tc.entries })
			errs, warnings := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_FailurePolicy(t *testing.T) {
	t.Parallel()
	key := field.NewPath("metadata", "annotations").Key(appsv1beta1.FailurePolicyAnnotation)
	tests := []struct {
		name  string
		value *string
		want  field.ErrorList
	}{
		{name: "no annotation: required (Fail)"},
		{name: "Fail is accepted", value: new(appsv1beta1.FailurePolicyFail)},
		{name: "Ignore is accepted", value: new(appsv1beta1.FailurePolicyIgnore)},
		{
			name: "another value is refused with the supported ones", value: new("ignore"),
			want: field.ErrorList{field.NotSupported(key, "ignore", []string{"Fail", "Ignore"})},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("agent", "nginx")
			if tc.value != nil {
				s.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: *tc.value}
			}
			errs, warnings := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_Recreate(t *testing.T) {
	t.Parallel()
	annotations := field.NewPath("metadata", "annotations")
	turnedOn := "metadata.annotations[sidecarset-operator.dev/recreate-pods]: running pods the SidecarSet selects that lack " +
		"its sidecars, or that cannot get its changes in place, are recreated: evicted through the Eviction API (their " +
		"PodDisruptionBudgets apply), paced by spec.updateStrategy, and only where their controller recreates them; " +
		"kubectl sidecarset plan agent shows which"
	tests := []struct {
		name         string
		old, now     map[string]string
		want         field.ErrorList
		wantWarnings []string
	}{
		{name: "no annotation: no recreation, nothing to say"},
		{name: "turning recreation on at creation warns", now: map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"},
			wantWarnings: []string{turnedOn}},
		{
			name: "turning recreation on by an update warns", old: map[string]string{appsv1beta1.RecreatePodsAnnotation: "false"},
			now: map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"}, wantWarnings: []string{turnedOn},
		},
		{
			name: "keeping recreation on says nothing more", old: map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"},
			now: map[string]string{appsv1beta1.RecreatePodsAnnotation: "true", appsv1beta1.RecreateJobPodsAnnotation: "true"},
		},
		{
			name: "the Job opt-in alone has no effect", now: map[string]string{appsv1beta1.RecreateJobPodsAnnotation: "true"},
			wantWarnings: []string{`metadata.annotations[sidecarset-operator.dev/recreate-job-pods]: has no effect without ` +
				`sidecarset-operator.dev/recreate-pods: "true"`},
		},
		{
			name: "another value than true or false is refused",
			now:  map[string]string{appsv1beta1.RecreatePodsAnnotation: "yes", appsv1beta1.RecreateJobPodsAnnotation: "True"},
			want: field.ErrorList{
				field.NotSupported(annotations.Key(appsv1beta1.RecreateJobPodsAnnotation), "True", []string{"true", "false"}),
				field.NotSupported(annotations.Key(appsv1beta1.RecreatePodsAnnotation), "yes", []string{"true", "false"}),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var old *appsv1beta1.SidecarSet
			if tc.old != nil {
				old = newSidecarSet("agent", "nginx")
				old.Annotations = tc.old
			}
			s := newSidecarSet("agent", "nginx")
			s.Annotations = tc.now
			errs, warnings := ValidateSidecarSet(s, old, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, tc.wantWarnings, warnings)
		})
	}
}

func TestValidateSidecarSet_RolloutGuards(t *testing.T) {
	t.Parallel()
	annotations := field.NewPath("metadata", "annotations")
	tests := []struct {
		name         string
		annotations  map[string]string
		want         field.ErrorList
		wantWarnings []string
	}{
		{name: "no guard is accepted"},
		{
			name: "every guard with a whole number is accepted",
			annotations: map[string]string{
				appsv1beta1.ProgressDeadlineAnnotation: "600", appsv1beta1.FailureBudgetAnnotation: "0",
				appsv1beta1.FailureWindowAnnotation: "60", appsv1beta1.MinReadyAnnotation: "0",
			},
		},
		{
			name: "values that would turn a guard off are refused, each at its key",
			annotations: map[string]string{
				appsv1beta1.ProgressDeadlineAnnotation: "10m", appsv1beta1.FailureBudgetAnnotation: "three",
				appsv1beta1.MinReadyAnnotation: "-1",
			},
			want: field.ErrorList{
				field.Invalid(annotations.Key(appsv1beta1.FailureBudgetAnnotation), "three",
					"must be a whole number of pods from 0 to 2147483647"),
				field.Invalid(annotations.Key(appsv1beta1.MinReadyAnnotation), "-1",
					"must be a whole number of seconds from 0 to 2147483647"),
				field.Invalid(annotations.Key(appsv1beta1.ProgressDeadlineAnnotation), "10m",
					"must be a whole number of seconds from 1 to 2147483647"),
			},
		},
		{
			name:        "a failure window without a failure budget is accepted with a warning",
			annotations: map[string]string{appsv1beta1.FailureWindowAnnotation: "60"},
			wantWarnings: []string{"metadata.annotations[sidecarset-operator.dev/failure-window-seconds]: " +
				"has no effect without the annotation sidecarset-operator.dev/failure-budget"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("agent", "nginx")
			s.Annotations = tc.annotations
			errs, warnings := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, tc.wantWarnings, warnings)
		})
	}
}
