package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParseFieldPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    *field.Path
		wantErr string
	}{{
		name: "a single field name",
		in:   "spec",
		want: field.NewPath("spec"),
	}, {
		name: "list indexes and fields nest",
		in:   "spec.containers[2].volumeMounts[0].name",
		want: field.NewPath("spec", "containers").Index(2).Child("volumeMounts").Index(0).Child("name"),
	}, {
		name: "an unquoted key may contain dots and slashes",
		in:   "metadata.annotations[apps.kruise.io/sidecarset-base]",
		want: field.NewPath("metadata", "annotations").Key("apps.kruise.io/sidecarset-base"),
	}, {
		name: "a quoted key may be all digits or hold brackets",
		in:   "spec.patchPodMetadata[0].annotations['12'].x['a[b]']",
		want: field.NewPath("spec", "patchPodMetadata").Index(0).Child("annotations").Key("12").Child("x").Key("a[b]"),
	}, {
		name: "subscripts may follow each other",
		in:   "a[1][k]",
		want: field.NewPath("a").Index(1).Key("k"),
	}, {
		name: "a number with a leading zero is a key",
		in:   "a[01]",
		want: field.NewPath("a").Key("01"),
	}, {
		name:    "an empty path is an error",
		in:      "",
		wantErr: "the path is empty",
	}, {
		name:    "an empty field name is an error",
		in:      "spec..containers",
		wantErr: `"spec..containers": invalid field name ""`,
	}, {
		name:    "a trailing dot is an error",
		in:      "spec.",
		wantErr: `"spec.": invalid field name ""`,
	}, {
		name:    "an unterminated subscript is an error",
		in:      "spec.containers[2",
		wantErr: `"spec.containers[2": empty or unterminated subscript`,
	}, {
		name:    "an empty subscript is an error",
		in:      "spec[]",
		wantErr: `"spec[]": empty or unterminated subscript`,
	}, {
		name:    "an unterminated quoted subscript is an error",
		in:      "spec['a]",
		wantErr: `"spec['a]": unterminated quoted subscript`,
	}, {
		name:    "text after a subscript must start with a dot",
		in:      "spec[0]name",
		wantErr: `"spec[0]name": unexpected "name"`,
	}, {
		name:    "a field name with a space is an error",
		in:      "spec.my field",
		wantErr: `"spec.my field": invalid field name "my field"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseFieldPath(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("parseFieldPath(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFieldPath(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want.String(), got.String()); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(field.Path{})); diff != "" {
				t.Errorf("path structure (-want +got):\n%s", diff)
			}
		})
	}
}
