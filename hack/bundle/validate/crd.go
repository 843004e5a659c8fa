package validate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func crdRules() []Rule {
	return []Rule{
		{Name: RuleCRDValid, Doc: "Every CRD is apiextensions.k8s.io/v1 with known fields and passes the API server's own CRD validation (structural schema, CEL rules and their cost), run offline.", Check: checkCRDsOffline},
	}
}

func checkCRDsOffline(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.CRDs() {
		for _, msg := range validateCRD(o.Unstructured) {
			out = append(out, errorf("%s: %s", o.File, msg))
		}
	}
	return out
}

// validateCRD runs the validation the API server runs on a CRD's creation:
// defaulting, conversion to the internal version, the storage version
// recorded as on create, then apiextensions' ValidateCustomResourceDefinition.
func validateCRD(u *unstructured.Unstructured) []string {
	if u.GetAPIVersion() != apiextensionsv1.SchemeGroupVersion.String() {
		return []string{fmt.Sprintf("apiVersion %q: only %s CRDs are served by current clusters", u.GetAPIVersion(), apiextensionsv1.SchemeGroupVersion)}
	}
	v1 := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, v1, true); err != nil {
		return []string{err.Error()}
	}
	scheme := runtime.NewScheme()
	install.Install(scheme)
	scheme.Default(v1)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(v1, internal, nil); err != nil {
		return []string{err.Error()}
	}
	internal.Status = apiextensions.CustomResourceDefinitionStatus{}
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = []string{v.Name}
			break
		}
	}
	var out []string
	for _, e := range apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
		out = append(out, e.Error())
	}
	return out
}

// APIServer is a real API server to install the CRDs into.
type APIServer interface {
	// InstallCRD creates the CRD and waits until it is established.
	InstallCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error
	// DryRunCreate creates the object with dryRun=All.
	DryRunCreate(ctx context.Context, obj *unstructured.Unstructured) error
}

// CheckOnAPIServer installs every CRD of the bundle into a real API server
// (rule crd/apiserver), then creates each alm-example there in dry-run, so
// that the examples pass the CRD's schema and CEL rules (rule
// crd/examples-apiserver).
func CheckOnAPIServer(ctx context.Context, b *Bundle, api APIServer) []Finding {
	var out []Finding
	for _, o := range b.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd)
		if err == nil {
			err = api.InstallCRD(ctx, crd)
		}
		if err != nil {
			out = append(out, Finding{Rule: RuleCRDAPIServer, Severity: Error, Message: fmt.Sprintf("%s: the API server rejects the CRD: %v", o.File, err)})
		}
	}
	if len(out) > 0 || b.CSV == nil {
		return out
	}
	examples, err := Examples(b.CSV)
	if err != nil {
		return out // reported by csv/alm-examples
	}
	for i, e := range examples {
		if err := api.DryRunCreate(ctx, e); err != nil {
			out = append(out, Finding{Rule: RuleExamplesAPI, Severity: Error,
				Message: fmt.Sprintf("alm-examples[%d] (%s %s) is rejected by the API server: %v", i, e.GetKind(), e.GetName(), err)})
		}
	}
	return out
}
