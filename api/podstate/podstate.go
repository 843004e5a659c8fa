// Package podstate is the one codec of the SidecarSet annotations on pods.
//
// The webhook writes these annotations at injection and the controller
// rewrites them at each in-place upgrade; both read them through this
// package, which handles OpenKruise's legacy formats in one place and encodes
// byte-identically to OpenKruise (sorted keys, same field names and order),
// so a pod injected by either implementation can be managed by the other.
package podstate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// HashEntry is one SidecarSet's entry in the kruise.io/sidecarset-hash (or
// -without-image) annotation of a pod. Field order and names are OpenKruise's.
type HashEntry struct {
	// UpdateTimestamp is when the entry was written.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// Hash is the SidecarSet hash the pod's sidecars correspond to.
	Hash string `json:"hash"`
	// SidecarSetName names the SidecarSet.
	SidecarSetName string `json:"sidecarSetName"`
	// SidecarList is the sorted names of the SidecarSet's sidecars in the pod
	// (for hot-upgrade containers the base name, not the twins).
	SidecarList []string `json:"sidecarList"`
	// ControllerRevision names the ControllerRevision injected or upgraded
	// to; empty in the without-image annotation.
	ControllerRevision string `json:"controllerRevision,omitempty"`
}

// Hashes maps SidecarSet names to their entries.
type Hashes map[string]HashEntry

// InPlaceUpdateState is one SidecarSet's entry in the
// kruise.io/sidecarset-inplace-update-state annotation.
type InPlaceUpdateState struct {
	// Revision is the SidecarSet hash of the first in-place update.
	Revision string `json:"revision"`
	// UpdateTimestamp is when the entry was created.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// LastContainerStatuses records, per upgraded container, the image ID it
	// reported before its last upgrade: the upgrade is complete once the
	// container reports another one.
	LastContainerStatuses map[string]ContainerStatus `json:"lastContainerStatuses"`
}

// ContainerStatus is a container's status before an in-place upgrade.
type ContainerStatus struct {
	// ImageID is the image ID the container reported.
	ImageID string `json:"imageID,omitempty"`
}

// State is every SidecarSet annotation of a pod, decoded.
type State struct {
	// Hashes is kruise.io/sidecarset-hash.
	Hashes Hashes
	// HashesWithoutImage is kruise.io/sidecarset-hash-without-image.
	HashesWithoutImage Hashes
	// Injected is the sorted kruise.io/sidecarset-injected-list.
	Injected []string
	// InPlace is kruise.io/sidecarset-inplace-update-state.
	InPlace map[string]*InPlaceUpdateState
	// WorkingHotUpgrade maps each hot-upgrade sidecar to its working twin
	// (kruise.io/sidecarset-working-hotupgrade-container).
	WorkingHotUpgrade map[string]string
}

// Read decodes every SidecarSet annotation of a pod. Missing annotations
// decode to empty values; a malformed one is an error naming the annotation.
//
// A pod read from the operator's cache carries its state already decoded
// (CachedKey); Read returns it as it was decoded, its maps shared with the
// other pods holding the same state: read-only, as the cached pod is.
func Read(annotations map[string]string) (State, error) {
	if cached, ok := annotations[CachedKey]; ok {
		s := readCachedShared(cached)
		s.Injected = DecodeInjectedList(annotations[appsv1beta1.SidecarSetListAnnotation])
		return s, nil
	}
	var s State
	var err error
	if s.Hashes, err = DecodeHashes(annotations[appsv1beta1.SidecarSetHashAnnotation]); err != nil {
		return State{}, annotationError(appsv1beta1.SidecarSetHashAnnotation, err)
	}
	if s.HashesWithoutImage, err = DecodeHashes(annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]); err != nil {
		return State{}, annotationError(appsv1beta1.SidecarSetHashWithoutImageAnnotation, err)
	}
	s.Injected = DecodeInjectedList(annotations[appsv1beta1.SidecarSetListAnnotation])
	if s.InPlace, err = DecodeInPlaceState(annotations[appsv1beta1.InPlaceUpdateStateAnnotation]); err != nil {
		return State{}, annotationError(appsv1beta1.InPlaceUpdateStateAnnotation, err)
	}
	if s.WorkingHotUpgrade, err = decodeStringMap(annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation]); err != nil {
		return State{}, annotationError(appsv1beta1.WorkingHotUpgradeContainerAnnotation, err)
	}
	return s, nil
}

// injectionKeys are the pod annotations injection reads and writes.
var injectionKeys = []string{
	CachedKey,
	appsv1beta1.SidecarSetHashAnnotation,
	appsv1beta1.SidecarSetHashWithoutImageAnnotation,
	appsv1beta1.SidecarSetListAnnotation,
	appsv1beta1.WorkingHotUpgradeContainerAnnotation,
}

// ReadInjection decodes the annotations injection reads and writes (the
// hashes, the injected-list, the working hot-upgrade twins), as Read does.
// Only those: a malformed in-place update state, which injection neither
// reads nor writes, is no error here.
func ReadInjection(annotations map[string]string) (State, error) {
	used := make(map[string]string, len(injectionKeys))
	for _, k := range injectionKeys {
		if v, ok := annotations[k]; ok {
			used[k] = v
		}
	}
	return Read(used)
}

func annotationError(key string, err error) error {
	return fmt.Errorf("malformed annotation %s: %w", key, err)
}

// DecodeHashes decodes a hash annotation, in the current format (a map of
// HashEntry) or OpenKruise's legacy one (a map from SidecarSet name to hash).
func DecodeHashes(value string) (Hashes, error) {
	hashes := Hashes{}
	if value == "" {
		return hashes, nil
	}
	if err := json.Unmarshal([]byte(value), &hashes); err == nil {
		for name, e := range hashes {
			if e.SidecarSetName == "" {
				e.SidecarSetName = name
				hashes[name] = e
			}
		}
		return hashes, nil
	}
	var legacy map[string]string
	if err := json.Unmarshal([]byte(value), &legacy); err != nil {
		return nil, fmt.Errorf("neither a map of hash entries nor a map of hashes: %w", err)
	}
	hashes = make(Hashes, len(legacy))
	for name, h := range legacy {
		hashes[name] = HashEntry{Hash: h, SidecarSetName: name}
	}
	return hashes, nil
}

// Encode encodes the hashes with sorted keys, as OpenKruise does.
func (h Hashes) Encode() string {
	return mustMarshal(h)
}

// DecodeInjectedList splits the injected-list annotation into a sorted set.
func DecodeInjectedList(value string) []string {
	var names []string
	for n := range strings.SplitSeq(value, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// EncodeInjectedList joins a set of SidecarSet names, sorted and without
// duplicates.
func EncodeInjectedList(names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	return strings.Join(slices.Compact(sorted), ",")
}

// DecodeInPlaceState decodes the in-place update state annotation.
func DecodeInPlaceState(value string) (map[string]*InPlaceUpdateState, error) {
	state := map[string]*InPlaceUpdateState{}
	if value == "" {
		return state, nil
	}
	if err := json.Unmarshal([]byte(value), &state); err != nil {
		return nil, err
	}
	return state, nil
}

// EncodeInPlaceState encodes the in-place update state with sorted keys.
func EncodeInPlaceState(state map[string]*InPlaceUpdateState) string {
	return mustMarshal(state)
}

func decodeStringMap(value string) (map[string]string, error) {
	m := map[string]string{}
	if value == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(value), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeReach decodes a pod's sidecarset-operator.dev/reach annotation:
// per SidecarSet, the verbs its sidecars' reach in the pod needs, as
// written. ok is false when the annotation is missing or malformed.
func DecodeReach(annotations map[string]string) (reach map[string]string, ok bool) {
	raw, present := annotations[appsv1beta1.ReachAnnotation]
	if !present {
		return nil, false
	}
	m, err := decodeStringMap(raw)
	return m, err == nil
}

// DecodeRestricted decodes a pod's sidecarset-operator.dev/restricted
// annotation: per SidecarSet, what its sidecars were not given. A malformed
// one decodes to nothing (it is informational).
func DecodeRestricted(annotations map[string]string) map[string][]string {
	raw := annotations[appsv1beta1.RestrictedAnnotation]
	if raw == "" {
		return nil
	}
	var m map[string][]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil
	}
	return m
}

// EncodeStringMap encodes a map of strings with sorted keys.
func EncodeStringMap(m map[string]string) string {
	return mustMarshal(m)
}

// mustMarshal marshals values that cannot fail to marshal (maps of plain
// structs and strings).
func mustMarshal(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("podstate: marshalling %T: %v", v, err))
	}
	return string(data)
}

// VersionKey is the annotation holding a hot-upgrade twin's version.
func VersionKey(twin string) string {
	return appsv1beta1.HotUpgradeVersionAnnotationPrefix + twin
}

// VersionAltKey is the annotation holding the other twin's version, as seen
// by this twin.
func VersionAltKey(twin string) string {
	return appsv1beta1.HotUpgradeVersionAltAnnotationPrefix + twin
}

// DecodeUpgradable decodes the message of the SidecarSetUpgradable pod
// condition: a JSON map from SidecarSet name to whether the pod can be
// upgraded in place. An empty or malformed message decodes to an empty map.
func DecodeUpgradable(message string) map[string]bool {
	m := map[string]bool{}
	if message == "" {
		return m
	}
	if err := json.Unmarshal([]byte(message), &m); err != nil {
		return map[string]bool{} // a malformed message is rewritten whole, partial values and all
	}
	return m
}

// EncodeUpgradable encodes the SidecarSetUpgradable message with sorted keys.
func EncodeUpgradable(m map[string]bool) string {
	return mustMarshal(m)
}
