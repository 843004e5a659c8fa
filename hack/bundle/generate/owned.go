package generate

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// ownedPerVersion expands each owned API of the CSV base that names no
// version into one entry per version its CRD serves, storage version first,
// as OLM and consoles expect: the same texts and resources, and only the
// spec and status descriptors whose path the version's schema has (a field
// one version has and the other lacks is described once in the base). An
// entry that names a version is kept as it is.
func ownedPerVersion(owned []csv.CRDDescription, crds []*unstructured.Unstructured) ([]csv.CRDDescription, error) {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		byName[crd.Name] = crd
	}
	var out []csv.CRDDescription
	for _, d := range owned {
		crd, ok := byName[d.Name]
		if d.Version != "" || !ok {
			out = append(out, d) // checkOwned reports a missing CRD
			continue
		}
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range crd.Spec.Versions {
			switch {
			case !v.Served:
			case v.Storage:
				versions = append([]apiextensionsv1.CustomResourceDefinitionVersion{v}, versions...)
			default:
				versions = append(versions, v)
			}
		}
		for _, v := range versions {
			e := d
			e.Version = v.Name
			e.SpecDescriptors = describedIn(d.SpecDescriptors, v.Schema, "spec")
			e.StatusDescriptors = describedIn(d.StatusDescriptors, v.Schema, "status")
			out = append(out, e)
		}
	}
	return out, nil
}

// describedIn keeps the descriptors whose dotted path exists under the
// given top-level property of a version's schema.
func describedIn(descriptors []csv.Descriptor, schema *apiextensionsv1.CustomResourceValidation, top string) []csv.Descriptor {
	if schema == nil || schema.OpenAPIV3Schema == nil {
		return descriptors
	}
	root, ok := schema.OpenAPIV3Schema.Properties[top]
	if !ok {
		return nil
	}
	var out []csv.Descriptor
	for _, d := range descriptors {
		node, found := root, true
		for field := range strings.SplitSeq(d.Path, ".") {
			if node, found = node.Properties[field]; !found {
				break
			}
		}
		if found {
			out = append(out, d)
		}
	}
	return out
}
