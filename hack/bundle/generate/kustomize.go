package generate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kustomize builds a kustomization as `kustomize build` would (kustomize API
// v0.21.2, in-process) and returns its objects in kustomize's output order.
func Kustomize(fsys filesys.FileSystem, dir string) ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objects []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON, so that numbers are int64 or float64 as in any
		// object read from the API.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objects = append(objects, u)
	}
	return objects, nil
}
