// Package podmeta is the one rule for the pod annotations a SidecarSet's
// patchPodMetadata writes. The pod webhook applies it at injection (to the
// live SidecarSet or to a pinned revision restored from history) and the
// controller at each in-place upgrade, so both write exactly the same keys:
//
//   - the entries apply in order with OpenKruise's policies (Retain,
//     Overwrite, MergePatchJson; merge.go);
//   - a key holding SidecarSet state (podstate.Reserved) is never written:
//     a patch could otherwise forge the hash or the injected-list;
//   - a key the patchPodMetadata whitelist does not allow is not written:
//     the whitelist in force now decides (policy.Snapshot.Keys), not only
//     the one in force when the SidecarSet was admitted, since the
//     ConfigMap may have changed since and a pinned revision may patch keys
//     the live spec no longer does.
//
// A key not written is reported, so the webhook can warn the user creating
// the pod and the controller can emit an event.
//
// The rule lives here, under policy/, because it needs both api/podstate
// (the reserved keys) and policy (the whitelist), and api/ may import
// neither policy nor anything above it. It is pure, values in and values
// out, so the pure cores (webhooks/inject, controllers/rollout) call it
// directly.
package podmeta

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
)

// Whitelist is what decides the keys a SidecarSet may patch.
type Whitelist struct {
	// Snapshot is the whitelist in force; nil is the same as a missing
	// kruise-configuration ConfigMap.
	Snapshot *policy.Snapshot
	// DefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed
	// feature gate.
	DefaultsAllowed bool
}

// Result is what applying a SidecarSet's patchPodMetadata to a pod does.
type Result struct {
	// Changed are the annotations to write, with their new values.
	Changed map[string]string
	// Skipped are the annotations the patch would change but may not, in
	// key order.
	Skipped []Skip
}

// Skip is an annotation patchPodMetadata may not write.
type Skip struct {
	// Key is the annotation key.
	Key string
	// Reason says why, as the end of a sentence about the key.
	Reason string
}

// Warning describes a skipped key of a SidecarSet for the user.
func (s Skip) Warning(sidecarSet string) string {
	return fmt.Sprintf("SidecarSet %q: patchPodMetadata: annotation %s %s", sidecarSet, s.Key, s.Reason)
}

// reservedReason is the reason of a key holding SidecarSet state.
const reservedReason = "holds SidecarSet state and was not patched"

// Apply applies the patchPodMetadata of a SidecarSet version (the live
// object, or one restored from a revision: its labels are the live
// SidecarSet's, and select the whitelist rules) to a pod's annotations,
// which it does not modify. An error is a patch that cannot apply (a
// MergePatchJson into a value that is not JSON, an unknown policy).
func Apply(annotations map[string]string, s *appsv1beta1.SidecarSet, w Whitelist) (Result, error) {
	if len(s.Spec.PatchPodMetadata) == 0 {
		return Result{}, nil
	}
	changed, err := patch(annotations, s.Spec.PatchPodMetadata)
	if err != nil {
		return Result{}, err
	}
	allowed := w.Snapshot.Keys(w.DefaultsAllowed, s)
	res := Result{Changed: make(map[string]string, len(changed))}
	for _, k := range slices.Sorted(maps.Keys(changed)) {
		if podstate.Reserved(k) {
			res.Skipped = append(res.Skipped, Skip{Key: k, Reason: reservedReason})
			continue
		}
		if err := allowed.Check(k); err != nil {
			res.Skipped = append(res.Skipped, Skip{Key: k, Reason: "was not patched: " + err.Error()})
			continue
		}
		res.Changed[k] = changed[k]
	}
	return res, nil
}
