// Command crd trims the SidecarSet CRD that controller-gen writes (make
// manifests): it drops the descriptions of the Kubernetes core types
// embedded in its schemas (the container fields of the sidecars, the
// volumes), in both versions.
//
// Both versions carry full schemas, so the CRD with every description is
// about 430 KB of JSON. kubectl's client-side apply records the whole
// object in the last-applied-configuration annotation, and annotations are
// limited to 256 KiB: `kubectl apply -k config/default` would be refused.
// The trimmed CRD is about 140 KB. The dropped texts are those of the
// Kubernetes API reference (kubectl explain pod.spec.containers has them);
// every field of the SidecarSet's own keeps its description.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func main() {
	path := flag.String("file", "config/crd/bases/apps.kruise.io_sidecarsets.yaml", "The CRD file to trim in place.")
	flag.Parse()
	if err := trimFile(*path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func trimFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := Trim(crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Written as controller-gen writes it: sorted keys, no status and no
	// creationTimestamp (which the typed object would add).
	js, err := json.Marshal(crd)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o600)
}

// Trim drops the descriptions of the core types in every version's schema:
// the fields of each sidecar that come from corev1.Container, and the
// volumes.
func Trim(crd *apiextensionsv1.CustomResourceDefinition) error {
	own := ownContainerFields()
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no schema", v.Name)
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return fmt.Errorf("version %s has no spec", v.Name)
		}
		for _, list := range []string{"containers", "initContainers"} {
			items := spec.Properties[list].Items
			if items == nil || items.Schema == nil {
				return fmt.Errorf("version %s: spec.%s has no item schema", v.Name, list)
			}
			for name, field := range items.Schema.Properties {
				if !own[name] {
					dropDescriptions(&field)
					items.Schema.Properties[name] = field
				}
			}
		}
		volumes := spec.Properties["volumes"].Items
		if volumes == nil || volumes.Schema == nil {
			return fmt.Errorf("version %s: spec.volumes has no item schema", v.Name)
		}
		dropDescriptions(volumes.Schema)
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	return nil
}

// ownContainerFields are the JSON names of the fields SidecarContainer
// adds to corev1.Container.
func ownContainerFields() map[string]bool {
	out := map[string]bool{}
	for f := range reflect.TypeFor[appsv1beta1.SidecarContainer]().Fields() {
		if f.Anonymous {
			continue
		}
		name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
		out[string(name)] = true
	}
	return out
}

// dropDescriptions clears the description of a schema and of everything
// below it.
func dropDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for k, p := range s.Properties {
		dropDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		if s.Items.Schema != nil {
			dropDescriptions(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			dropDescriptions(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		dropDescriptions(s.AdditionalProperties.Schema)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			dropDescriptions(&list[i])
		}
	}
}
