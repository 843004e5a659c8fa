package policy

import (
	"os"
	"slices"
	"testing"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{{
		name: "absent lists and maps become empty, along present objects only",
		in:   map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"updateStrategy": map[string]any{}}},
		want: map[string]any{
			"metadata": map[string]any{"name": "x", "labels": map[string]any{}, "annotations": map[string]any{}},
			"spec": map[string]any{
				"initContainers": []any{}, "containers": []any{}, "volumes": []any{}, "patchPodMetadata": []any{},
				"updateStrategy": map[string]any{},
			},
		},
	}, {
		name: "list items are normalized, explicit nulls read as absent",
		in: map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "a", "volumeMounts": nil, "resourcesPolicy": nil}},
		}},
		want: map[string]any{"spec": map[string]any{
			"initContainers": []any{}, "volumes": []any{}, "patchPodMetadata": []any{},
			"containers": []any{map[string]any{"name": "a", "volumeMounts": []any{}, "volumeDevices": []any{}, "transferEnv": []any{}}},
		}},
	}, {
		name: "undeclared fields and values of unexpected types are left alone",
		in:   map[string]any{"status": map[string]any{"x": nil}, "spec": "not an object"},
		want: map[string]any{"status": map[string]any{"x": nil}, "spec": "not an object"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			normalize(tc.in, objectType())
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("normalized (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObjectType_MatchesTheCRD checks that every field the rules may read
// exists in the generated CRD with the same type, and that the bounds the
// estimator assumes are at least the CRD's.
func TestObjectType_MatchesTheCRD(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../config/crd/bases/apps.kruise.io_sidecarsets.yaml")
	if err != nil {
		t.Fatalf("reading the CRD: %v", err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema crdSchema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("parsing the CRD: %v", err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v struct {
		Name   string `json:"name"`
		Schema struct {
			OpenAPIV3Schema crdSchema `json:"openAPIV3Schema"`
		} `json:"schema"`
	}) bool {
		return v.Name == "v1alpha1"
	})
	if i < 0 {
		t.Fatal("the CRD has no v1alpha1 version")
	}
	root := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
	var compare func(path string, decl *apiservercel.DeclType, s *crdSchema)
	compare = func(path string, decl *apiservercel.DeclType, s *crdSchema) {
		switch {
		case decl.IsObject():
			if s.Type != "object" {
				t.Errorf("%s: declared an object, the CRD has %q", path, s.Type)
				return
			}
			for name, f := range decl.Fields {
				prop, ok := s.Properties[name]
				if !ok {
					t.Errorf("%s.%s: declared, but not in the CRD", path, name)
					continue
				}
				compare(path+"."+name, f.Type, &prop)
			}
		case decl.IsList():
			if s.Type != "array" || s.Items == nil {
				t.Errorf("%s: declared a list, the CRD has %q", path, s.Type)
				return
			}
			if s.MaxItems != nil && decl.MaxElements < *s.MaxItems {
				t.Errorf("%s: assumed at most %d items, the CRD allows %d", path, decl.MaxElements, *s.MaxItems)
			}
			compare(path+"[]", decl.ElemType, s.Items)
		case decl.IsMap():
			if s.Type != "object" || s.AdditionalProperties == nil {
				t.Errorf("%s: declared a map, the CRD has %q without additionalProperties", path, s.Type)
				return
			}
			if s.MaxProperties != nil && decl.MaxElements < *s.MaxProperties {
				t.Errorf("%s: assumed at most %d entries, the CRD allows %d", path, decl.MaxElements, *s.MaxProperties)
			}
			compare(path+"{}", decl.ElemType, s.AdditionalProperties)
		default:
			want := map[string]string{"string": "string", "bool": "boolean", "int": "integer"}[decl.TypeName()]
			if s.Type != want {
				t.Errorf("%s: declared %s, the CRD has %q", path, decl.TypeName(), s.Type)
			}
			if s.MaxLength != nil && decl.MaxElements < *s.MaxLength {
				t.Errorf("%s: assumed at most %d characters, the CRD allows %d", path, decl.MaxElements, *s.MaxLength)
			}
		}
	}
	decl := objectType()
	spec := decl.Fields["spec"]
	compare("spec", spec.Type, new(root.Properties["spec"]))
	// metadata is ObjectMeta, served by the API server, not in the CRD schema.
	if root.Properties["metadata"].Type != "object" {
		t.Errorf("metadata: the CRD has %q, want object", root.Properties["metadata"].Type)
	}
}

type crdSchema struct {
	Type                 string               `json:"type"`
	Properties           map[string]crdSchema `json:"properties"`
	Items                *crdSchema           `json:"items"`
	AdditionalProperties *crdSchema           `json:"additionalProperties"`
	MaxItems             *int64               `json:"maxItems"`
	MaxProperties        *int64               `json:"maxProperties"`
	MaxLength            *int64               `json:"maxLength"`
}

// fakeNode is an estimator input with only a path.
type fakeNode struct{ path []string }

func (n fakeNode) Path() []string                      { return n.path }
func (n fakeNode) Type() *types.Type                   { return types.DynType }
func (n fakeNode) Expr() ast.Expr                      { return nil }
func (n fakeNode) ComputedSize() *checker.SizeEstimate { return nil }

func TestSizeEstimator_EstimateSize(t *testing.T) {
	t.Parallel()
	e := newSizeEstimator(objectType(), "object", "oldObject")
	tests := []struct {
		name string
		path []string
		want *checker.SizeEstimate
	}{{
		name: "a list from the root has its declared bound",
		path: []string{"object", "spec", "containers"},
		want: &checker.SizeEstimate{Max: maxSidecars},
	}, {
		name: "oldObject has the same bounds",
		path: []string{"oldObject", "spec", "containers", "@items", "volumeMounts"},
		want: &checker.SizeEstimate{Max: maxVolumeMounts},
	}, {
		name: "a string from the root has its declared bound",
		path: []string{"object", "spec", "containers", "@items", "volumeMounts", "@items", "mountPath"},
		want: &checker.SizeEstimate{Max: maxPathLength},
	}, {
		name: "map keys have the key bound",
		path: []string{"object", "spec", "patchPodMetadata", "@items", "annotations", "@keys"},
		want: &checker.SizeEstimate{Max: maxAnnotationKey},
	}, {
		name: "a path whose root was lost resolves from its first field name",
		path: []string{"@items", "volumeDevices", "@items", "devicePath"},
		want: &checker.SizeEstimate{Max: maxPathLength},
	}, {
		name: "a field name declared with several bounds takes the largest",
		path: []string{"@items", "name"},
		want: &checker.SizeEstimate{Max: maxNameLength},
	}, {
		name: "an undeclared field has no estimate",
		path: []string{"object", "spec", "selector"},
	}, {
		name: "an unknown root has no estimate",
		path: []string{"other", "spec", "containers"},
	}, {
		name: "an object has no size",
		path: []string{"object", "spec"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, e.EstimateSize(fakeNode{tc.path})); diff != "" {
				t.Errorf("EstimateSize(%v) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}
