package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// lastAppliedLimit is the API server's limit on an object's annotations
// (256 KiB), which kubectl's client-side apply fills with the whole object.
const lastAppliedLimit = 256 << 10

func readCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/bases/apps.kruise.io_sidecarsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// The committed CRD fits the last-applied-configuration annotation of a
// client-side apply (kubectl apply -k config/default), with room for what
// kustomize adds (labels, the conversion webhook): it is about 140 KB
// trimmed, 430 KB with every description.
func TestCRD_FitsClientSideApply(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(readCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	if room := lastAppliedLimit - len(data); room < 64<<10 {
		t.Errorf("the CRD is %d bytes of JSON: %d bytes below kubectl's client-side apply limit, want at least 64 KiB of room", len(data), room)
	}
}

// Trim drops the descriptions of the core types and keeps ours: a sidecar's
// own fields (podInjectPolicy, resourcesPolicy, ...) and the spec's.
func TestTrim_KeepsTheSidecarSetsOwnDescriptions(t *testing.T) {
	t.Parallel()
	crd := readCRD(t)
	if err := Trim(crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if spec.Properties["selector"].Description == "" {
			t.Errorf("%s: spec.selector lost its description", v.Name)
		}
		container := spec.Properties["containers"].Items.Schema
		for _, own := range []string{"podInjectPolicy", "upgradeStrategy", "shareVolumePolicy", "shareVolumeDevicePolicy", "transferEnv", "resourcesPolicy"} {
			if container.Properties[own].Description == "" {
				t.Errorf("%s: containers[].%s lost its description", v.Name, own)
			}
		}
		for _, core := range []string{"image", "env", "securityContext"} {
			if container.Properties[core].Description != "" {
				t.Errorf("%s: containers[].%s kept its description", v.Name, core)
			}
		}
		if spec.Properties["volumes"].Items.Schema.Properties["hostPath"].Description != "" {
			t.Errorf("%s: volumes[].hostPath kept its description", v.Name)
		}
	}
}
