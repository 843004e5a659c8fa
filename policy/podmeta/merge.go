package podmeta

import (
	"encoding/json"
	"fmt"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// patch applies a SidecarSet's patchPodMetadata entries, in order, to a
// pod's annotations and returns the annotations it changes, with their new
// values (net of entries that undo each other). The input map is not
// modified. Apply filters the result.
//
//   - Retain sets a key only if the pod does not have it (an empty value
//     counts as present).
//   - Overwrite always sets the key.
//   - MergePatchJson merges the value into the pod's JSON value as an RFC 7386
//     merge patch, re-serialized with sorted keys; a pod without the key (or
//     with an empty value) gets the value as is.
//
// At an in-place upgrade, Retain entries are therefore re-added only if
// missing.
func patch(current map[string]string, patches []appsv1beta1.SidecarSetPatchPodMetadata) (map[string]string, error) {
	changed := map[string]string{}
	get := func(k string) (string, bool) {
		if v, ok := changed[k]; ok {
			return v, true
		}
		v, ok := current[k]
		return v, ok
	}
	for _, p := range patches {
		keys := make([]string, 0, len(p.Annotations))
		for k := range p.Annotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			value := p.Annotations[k]
			old, exists := get(k)
			switch p.PatchPolicy {
			case appsv1beta1.SidecarSetRetainPatchPolicy, "":
				if exists {
					continue
				}
			case appsv1beta1.SidecarSetOverwritePatchPolicy:
			case appsv1beta1.SidecarSetMergePatchJSONPatchPolicy:
				if old != "" {
					merged, err := mergeJSON(old, value)
					if err != nil {
						return nil, fmt.Errorf("annotation %s: merging %q into %q: %w", k, value, old, err)
					}
					value = merged
				}
			default:
				return nil, fmt.Errorf("annotation %s: unknown patchPolicy %q", k, p.PatchPolicy)
			}
			if !exists || old != value {
				changed[k] = value
			}
		}
	}
	// Two entries may set the same key; report only net changes, so that
	// applying the result and patching again changes nothing.
	for k, v := range changed {
		if old, ok := current[k]; ok && old == v {
			delete(changed, k)
		}
	}
	return changed, nil
}

// mergeJSON applies patch to doc as an RFC 7386 merge patch and re-encodes
// the result with sorted keys. Both are re-encoded first, so that a
// duplicate member means what encoding/json makes of it (the last one
// wins) rather than what the merge library does with it.
func mergeJSON(doc, patch string) (string, error) {
	docJSON, err := canonicalJSON(doc)
	if err != nil {
		return "", fmt.Errorf("the pod's value is not JSON")
	}
	patchJSON, err := canonicalJSON(patch)
	if err != nil {
		return "", fmt.Errorf("the SidecarSet's value is not JSON")
	}
	merged, err := jsonpatch.MergePatch(docJSON, patchJSON)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(merged, &v); err != nil {
		return "", err
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// canonicalJSON re-encodes a JSON value with sorted keys.
func canonicalJSON(s string) ([]byte, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
