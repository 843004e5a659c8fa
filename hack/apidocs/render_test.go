package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const (
	crdFile = "../../config/crd/bases/apps.kruise.io_sidecarsets.yaml"
	page    = "../../docs/reference/api.md"
	source  = "config/crd/bases/apps.kruise.io_sidecarsets.yaml"
)

// The committed page is what the generator writes from the committed CRD.
func TestPageIsCurrent(t *testing.T) {
	t.Parallel()
	crd, err := readCRD(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	want := Render(crd, source)
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run make docs and commit it", page)
	}
	// Every version and the fields users set most are documented.
	for _, s := range []string{"## v1alpha1", "## v1beta1", "`spec.selector`", "`spec.updateStrategy.partition`", "`spec.namespace`", "`spec.namespaceSelector`"} {
		if !bytes.Contains(got, []byte(s)) {
			t.Errorf("%s does not document %s", page, s)
		}
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", Plural: "things"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Description: "spec is the thing.", Required: []string{"size"},
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Format: "int32", Description: "size | count.",
								Minimum: new(1.0), Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
							"mode": {Type: "string", Description: "mode <m>.", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}},
							"items": {Type: "array", Description: "items are core.", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
								Type: "object", Required: []string{"name"},
								Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}, "image": {Type: "string"}},
							}}},
						},
						XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size > 0", Message: "size must be positive"}},
					},
				},
			}},
		}},
	}}
	got := string(Render(crd, "thing.yaml"))
	for _, want := range []string{
		"| `spec` | object |  | rule `self.size > 0`: size must be positive | spec is the thing. |",
		"| `spec.size` | integer (int32) | `3` | required; minimum 1 | size \\| count. |",
		"| `spec.mode` | string |  | one of `\"a\"`, `\"b\"` | mode &lt;m&gt;. |",
		"| `spec.items` | []object |  |  | items are core. |",
		"| `spec.items[].*` |  |  |  | The fields of the Kubernetes core type",
		"`image`, `name` (required).",
		"| [`v1`](#v1) | yes | yes |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the page lacks %q:\n%s", want, got)
		}
	}
}
