package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The attempts' fragments are YAML: merged onto a base object (Merge), or
// looked for in an object the API server returned (Contains).

// Image is the image of every sidecar the suite injects.
const Image = "busybox:1.36"

// SidecarContainer returns the attempt's sidecar: a plain one named name, mounting
// its volume if it has one, with the Sidecar fragment merged.
func (a *Attempt) SidecarContainer(name string) (appsv1beta1.SidecarContainer, error) {
	c := appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: Image, Command: []string{"sleep", "999d"}}}
	if a.Volume != "" && a.VolumeName == "" {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return Merge(c, a.Sidecar)
}

// Volumes returns the attempt's SidecarSet volumes: none, or its Volume
// named VolumeName ("data" by default).
func (a *Attempt) Volumes() ([]corev1.Volume, error) {
	return a.volumes(a.Volume)
}

// AuthorizedVolumes returns the authorized actor's SidecarSet volumes:
// AuthorizedVolume, or else Volume, named VolumeName.
func (a *Attempt) AuthorizedVolumes() ([]corev1.Volume, error) {
	if a.AuthorizedVolume != "" {
		return a.volumes(a.AuthorizedVolume)
	}
	return a.Volumes()
}

func (a *Attempt) volumes(fragment string) ([]corev1.Volume, error) {
	if fragment == "" {
		return nil, nil
	}
	source, err := Merge(corev1.VolumeSource{}, fragment)
	if err != nil {
		return nil, err
	}
	return []corev1.Volume{{Name: a.volumeName(), VolumeSource: source}}, nil
}

func (a *Attempt) volumeName() string {
	if a.VolumeName == "" {
		return "data"
	}
	return a.VolumeName
}

// ExpectedInPod is what the injected sidecar must contain when the
// authorized actor wrote it.
func (a *Attempt) ExpectedInPod() string {
	if a.InPod != "" {
		return a.InPod
	}
	return a.Sidecar
}

// Merge returns base with the YAML fragment merged onto it: maps merge
// recursively, lists and scalars replace. The result is decoded strictly,
// so a misspelled field in the fragment is an error.
func Merge[T any](base T, fragment string) (T, error) {
	var zero T
	if fragment == "" {
		return base, nil
	}
	raw, err := json.Marshal(base)
	if err != nil {
		return zero, err
	}
	var into, patch any
	if err := json.Unmarshal(raw, &into); err != nil {
		return zero, err
	}
	if err := yaml.Unmarshal([]byte(fragment), &patch); err != nil {
		return zero, fmt.Errorf("fragment %s: %w", fragment, err)
	}
	merged, err := json.Marshal(mergeValues(into, patch))
	if err != nil {
		return zero, err
	}
	out := reflect.New(reflect.TypeOf(base)).Interface()
	dec := json.NewDecoder(bytes.NewReader(merged))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return zero, fmt.Errorf("fragment %s: %w", fragment, err)
	}
	return *(out.(*T)), nil
}

func mergeValues(base, patch any) any {
	b, ok1 := base.(map[string]any)
	p, ok2 := patch.(map[string]any)
	if !ok1 || !ok2 {
		return patch
	}
	for k, v := range p {
		b[k] = mergeValues(b[k], v)
	}
	return b
}

// Contains reports whether obj holds everything the YAML fragment says:
// each field of a map, and each item of a list in some item of the
// object's list (the API server adds defaults and other items, such as the
// ServiceAccount token's mount).
func Contains(obj any, fragment string) (bool, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	var have, want any
	if err := json.Unmarshal(raw, &have); err != nil {
		return false, err
	}
	wantJSON, err := yaml.YAMLToJSON([]byte(fragment))
	if err != nil {
		return false, fmt.Errorf("fragment %s: %w", fragment, err)
	}
	if err := json.Unmarshal(wantJSON, &want); err != nil {
		return false, err
	}
	return contains(have, want), nil
}

func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, item := range w {
			found := false
			for _, candidate := range h {
				if contains(candidate, item) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
