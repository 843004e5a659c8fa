package podstate

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// OperatorKeyPrefix is the prefix of this operator's own keys
// (sidecarset-operator.dev/reach, /restricted, and any it adds later).
const OperatorKeyPrefix = "sidecarset-operator.dev/"

// Reserved reports whether a pod annotation key holds SidecarSet state: the
// annotations this package encodes, the hot-upgrade version keys and every
// key of this operator's own prefix (OperatorKeyPrefix: the reach and
// restricted records among them). Only injection and the controller's own
// bookkeeping write them; patchPodMetadata never does, or it could corrupt
// the pod's state (forge a hash, hide a SidecarSet from the controller,
// swap the working twin, forge the reach record the in-place upgrade's
// authority check trusts).
func Reserved(key string) bool {
	switch key {
	case appsv1beta1.SidecarSetHashAnnotation,
		appsv1beta1.SidecarSetHashWithoutImageAnnotation,
		appsv1beta1.SidecarSetListAnnotation,
		appsv1beta1.InPlaceUpdateStateAnnotation,
		appsv1beta1.WorkingHotUpgradeContainerAnnotation:
		return true
	}
	return strings.HasPrefix(key, appsv1beta1.HotUpgradeVersionAnnotationPrefix) ||
		strings.HasPrefix(key, appsv1beta1.HotUpgradeVersionAltAnnotationPrefix) ||
		strings.HasPrefix(key, OperatorKeyPrefix)
}

// SidecarList is the sidecarList a pod records for a SidecarSet spec: the
// sorted, distinct names of its containers and of its native-sidecar init
// containers (a hot-upgrade sidecar by its base name, not its twins'). Plain
// init containers are not listed; a spec without sidecars has a nil list
// (recorded as null).
func SidecarList(spec *appsv1beta1.SidecarSetSpec) []string {
	var names []string
	for i := range spec.InitContainers {
		if appsv1beta1.IsNativeSidecar(&spec.InitContainers[i].Container) {
			names = append(names, spec.InitContainers[i].Name)
		}
	}
	for i := range spec.Containers {
		names = append(names, spec.Containers[i].Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Version describes the version of a SidecarSet a pod runs: what its hash
// entries record.
type Version struct {
	// SidecarSet names the SidecarSet.
	SidecarSet string
	// Hashes are the hashes of the version's spec (of the pinned revision
	// when one was injected).
	Hashes appsv1beta1.Hashes
	// SidecarList is SidecarList of the version's spec.
	SidecarList []string
	// ControllerRevision names the version's ControllerRevision; it may be
	// empty (a SidecarSet the controller has not recorded yet).
	ControllerRevision string
}

// Entries returns the kruise.io/sidecarset-hash and
// kruise.io/sidecarset-hash-without-image entries recording a version at a
// time, truncated to seconds as the annotation stores it. The
// without-image entry has no controllerRevision, as in OpenKruise. The
// webhook records both at injection; the controller rewrites only the first
// at each in-place upgrade.
func (v Version) Entries(now time.Time) (HashEntry, HashEntry) {
	entry := HashEntry{
		UpdateTimestamp:    metav1.NewTime(now.Truncate(time.Second)),
		Hash:               v.Hashes.Hash,
		SidecarSetName:     v.SidecarSet,
		SidecarList:        slices.Clone(v.SidecarList),
		ControllerRevision: v.ControllerRevision,
	}
	withoutImage := entry
	withoutImage.Hash = v.Hashes.WithoutImage
	withoutImage.SidecarList = slices.Clone(v.SidecarList)
	withoutImage.ControllerRevision = ""
	return entry, withoutImage
}
