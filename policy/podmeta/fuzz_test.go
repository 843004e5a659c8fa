package podmeta

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The seed corpus is under testdata/fuzz/FuzzPatchPodMetadata; `go test`
// runs it, `go test -fuzz=FuzzPatchPodMetadata ./policy/podmeta/` explores
// further.

// FuzzPatchPodMetadata: patching never panics; Retain and Overwrite are
// idempotent (applying the changes and patching again changes nothing);
// MergePatchJson is idempotent once applied to an existing value, and
// merging a value without null members into itself is a fixed point.
func FuzzPatchPodMetadata(f *testing.F) {
	f.Fuzz(func(t *testing.T, podValue string, podHasKey bool, value string, policy uint8, second string) {
		policies := []appsv1beta1.SidecarSetPatchPolicyType{
			appsv1beta1.SidecarSetRetainPatchPolicy,
			appsv1beta1.SidecarSetOverwritePatchPolicy,
			appsv1beta1.SidecarSetMergePatchJSONPatchPolicy,
		}
		p := policies[int(policy)%len(policies)]
		current := map[string]string{"other": "x"}
		if podHasKey {
			current["k"] = podValue
		}
		patches := []appsv1beta1.SidecarSetPatchPodMetadata{entry(p, map[string]string{"k": value})}
		if p != appsv1beta1.SidecarSetMergePatchJSONPatchPolicy {
			// A second entry with the other non-merge policy on the same key.
			other := policies[(int(policy)+1)%2]
			patches = append(patches, entry(other, map[string]string{"k": second, "k2": second}))
		}
		changes, err := patch(current, patches)
		if err != nil {
			if p != appsv1beta1.SidecarSetMergePatchJSONPatchPolicy {
				t.Fatalf("patch(%v): %v", p, err)
			}
			return
		}
		applied := maps.Clone(current)
		maps.Copy(applied, changes)
		if p == appsv1beta1.SidecarSetMergePatchJSONPatchPolicy && (!podHasKey || podValue == "") {
			// The value was set verbatim, not merged: nothing to re-check.
			return
		}
		again, err := patch(applied, patches)
		if err != nil {
			t.Fatalf("patching again: %v", err)
		}
		if len(again) != 0 {
			t.Fatalf("patching again changed %v (first changes %v)", again, changes)
		}
		if p == appsv1beta1.SidecarSetMergePatchJSONPatchPolicy {
			merged := applied["k"]
			var v any
			if json.Unmarshal([]byte(merged), &v) != nil || hasNullMember(v) {
				return
			}
			self, err := patch(map[string]string{"k": merged}, []appsv1beta1.SidecarSetPatchPodMetadata{
				entry(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{"k": merged}),
			})
			if err != nil || len(self) != 0 {
				t.Fatalf("merging %q into itself: changes %v, error %v; want none", merged, self, err)
			}
		}
	})
}

// hasNullMember reports whether a JSON value has an object member that is
// null: a merge patch deletes such members.
func hasNullMember(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, m := range v {
			if m == nil || hasNullMember(m) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, hasNullMember)
	}
	return false
}
