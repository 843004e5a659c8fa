// Command apidocs writes the SidecarSet API reference (docs/reference/api.md)
// from the CRD's OpenAPI schema (make docs). The schema's descriptions are
// the Go doc comments of api/, which controller-gen copies into the CRD
// (make manifests), so the page follows the types: a field, a default or a
// validation rule changed in api/ reaches the page through the CRD.
//
// Fields of the Kubernetes core types embedded in a SidecarSet (a sidecar's
// container fields, the volumes) have no description in the CRD (hack/crd
// trims them); the page lists them without descending into them, and
// points to the Kubernetes API reference.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	crdPath := flag.String("crd", "config/crd/bases/apps.kruise.io_sidecarsets.yaml", "The CRD to document.")
	out := flag.String("out", "docs/reference/api.md", "The page to write.")
	flag.Parse()
	crd, err := readCRD(*crdPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, Render(crd, *crdPath), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

// readCRD reads a CustomResourceDefinition written as YAML.
func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}
