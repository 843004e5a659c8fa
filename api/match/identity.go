package match

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// A SidecarSet's reach and a canary's base are judged by name when the
// SidecarSet is written; the objects those names stand for can be deleted
// and created again, for someone else, while the SidecarSet stays. The
// mutating webhook records the UIDs of the objects judged
// (appsv1beta1.NamespaceUIDsAnnotation, appsv1beta1.CanaryBaseUIDAnnotation)
// and the functions here tell whether the object of a name is still the one
// judged. A SidecarSet without a record (written by OpenKruise, or before
// the operator recorded them) is matched by name, as before.

// NamespaceUIDs decodes a SidecarSet's record of the UIDs of the
// namespaces it names: nil when it has none.
func NamespaceUIDs(s *appsv1beta1.SidecarSet) (map[string]types.UID, error) {
	raw, ok := s.Annotations[appsv1beta1.NamespaceUIDsAnnotation]
	if !ok {
		return nil, nil
	}
	uids := map[string]types.UID{}
	if err := json.Unmarshal([]byte(raw), &uids); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", appsv1beta1.NamespaceUIDsAnnotation, err)
	}
	return uids, nil
}

// FormatNamespaceUIDs encodes a record of namespace UIDs, keys sorted; ""
// for an empty one (no annotation).
func FormatNamespaceUIDs(uids map[string]types.UID) string {
	if len(uids) == 0 {
		return ""
	}
	raw, _ := json.Marshal(uids) // a map of strings always encodes
	return string(raw)
}

// PinsNamespace reports whether the SidecarSet records the UID of a
// namespace of this name, or has a record that cannot be read: telling
// whether it applies there then takes the namespace's UID.
func PinsNamespace(s *appsv1beta1.SidecarSet, name string) bool {
	uids, err := NamespaceUIDs(s)
	if err != nil {
		return true
	}
	_, ok := uids[name]
	return ok
}

// NeedsNamespace reports whether deciding if a SidecarSet applies in the
// namespace takes the namespace's metadata: its labels
// (NeedsNamespaceLabels) or its UID (PinsNamespace).
func NeedsNamespace(s *appsv1beta1.SidecarSet, name string) bool {
	return NeedsNamespaceLabels(s) || PinsNamespace(s, name)
}

// SameNamespace reports whether the namespace of this name and UID is the
// one the SidecarSet was judged for, and when it is not, why, in a
// sentence. A name the SidecarSet records no UID for (a namespace that did
// not exist when the SidecarSet was written, or no record at all) is
// matched by name, and so is a namespace whose UID the caller does not
// know (""; the pod webhook and the controller always pass the UID they
// read, and fail the SidecarSet when they cannot read it; the kubectl
// plugin's offline state has none). A record that cannot be read matches
// no namespace. The pod webhook and the rollout both ask this.
func SameNamespace(s *appsv1beta1.SidecarSet, name string, uid types.UID) (bool, string) {
	uids, err := NamespaceUIDs(s)
	if err != nil {
		return false, fmt.Sprintf("its record of the namespaces it was written for cannot be read (%v): write the SidecarSet again", err)
	}
	if recorded, ok := uids[name]; ok && uid != "" && recorded != uid {
		return false, fmt.Sprintf("namespace %q was deleted and created again since the SidecarSet was written (UID %s then, %s now): "+
			"it applies there only once someone allowed to create pods there writes it again", name, recorded, uid)
	}
	return true, ""
}

// CanaryBaseUID returns the UID of the base a canary SidecarSet was judged
// against, "" when it records none (it replaces its base by name).
func CanaryBaseUID(s *appsv1beta1.SidecarSet) types.UID {
	return types.UID(s.Annotations[appsv1beta1.CanaryBaseUIDAnnotation])
}

// CanaryReplaces reports whether a canary replaces a base of its base's
// name: the base is the one the canary was judged against, or the canary
// records none. When it does not, the message says why.
func CanaryReplaces(canary, base *appsv1beta1.SidecarSet) (bool, string) {
	uid := CanaryBaseUID(canary)
	if uid == "" || uid == base.UID {
		return true, ""
	}
	return false, fmt.Sprintf("its base %q was deleted and created again since the canary was written (UID %s then, %s now): "+
		"the canary is left out, and the base applies, until the canary is written again", base.Name, uid, base.UID)
}

// InNamespace reports whether a SidecarSet applies in a namespace: its
// namespace selection selects it (Namespace) and it is the namespace of
// that name the SidecarSet was written for (SameNamespace). The rollout
// asks it of the pods it upgrades, as Applicable does of the pods the
// webhook injects.
func InNamespace(s *appsv1beta1.SidecarSet, ns PodNamespace) (bool, error) {
	ok, err := Namespace(s, ns.Name, ns.Labels)
	if err != nil || !ok {
		return false, err
	}
	same, _ := SameNamespace(s, ns.Name, ns.UID)
	return same, nil
}
