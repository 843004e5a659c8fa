// Package revision is the codec of SidecarSet ControllerRevisions, shared by
// the controller (which records them) and the pod webhook (which injects a
// pinned one). The data is byte-compatible with OpenKruise's, so revisions
// recorded by either implementation are reused, not duplicated, by the other.
package revision

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// HashLabel is the upstream controller-history hash label.
const HashLabel = "controller.kubernetes.io/hash"

// lastAppliedAnnotation is kubectl's client-side apply record.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maxNamePrefix keeps revision names within the 253-character limit.
const maxNamePrefix = 223

// Data is the part of a SidecarSet spec a revision records.
type Data struct {
	Containers       []appsv1beta1.SidecarContainer           `json:"containers"`
	InitContainers   []appsv1beta1.SidecarContainer           `json:"initContainers"`
	Volumes          []corev1.Volume                          `json:"volumes"`
	ImagePullSecrets []corev1.LocalObjectReference            `json:"imagePullSecrets"`
	PatchPodMetadata []appsv1beta1.SidecarSetPatchPodMetadata `json:"patchPodMetadata"`
}

// Encode returns a revision's data for a SidecarSet: the JSON object
// {"spec": {"$patch": "replace", containers, imagePullSecrets,
// initContainers, patchPodMetadata, volumes}} with keys sorted at every level
// and null for absent fields, exactly as OpenKruise writes it.
func Encode(spec *appsv1beta1.SidecarSetSpec) ([]byte, error) {
	typed, err := json.Marshal(Data{
		Containers:       spec.Containers,
		InitContainers:   spec.InitContainers,
		Volumes:          spec.Volumes,
		ImagePullSecrets: spec.ImagePullSecrets,
		PatchPodMetadata: spec.PatchPodMetadata,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding revision data: %w", err)
	}
	// Re-marshal through a generic map so that every nested object's keys
	// are sorted, as OpenKruise's re-marshalled map is.
	var generic map[string]any
	if err := json.Unmarshal(typed, &generic); err != nil {
		return nil, fmt.Errorf("encoding revision data: %w", err)
	}
	generic["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": generic})
}

// Decode reads the spec fields a revision recorded.
func Decode(raw []byte) (Data, error) {
	var doc struct {
		Spec Data `json:"spec"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Data{}, fmt.Errorf("decoding revision data: %w", err)
	}
	return doc.Spec, nil
}

// Restore returns a copy of the SidecarSet whose containers, init
// containers, volumes, image pull secrets and patchPodMetadata are those the
// revision recorded; the rest of the spec (selectors, strategies) is the
// live SidecarSet's. Its hash annotations and status.latestRevision describe
// the revision.
func Restore(live *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) (*appsv1beta1.SidecarSet, error) {
	data, err := Decode(rev.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	s := live.DeepCopy()
	s.Spec.Containers = data.Containers
	s.Spec.InitContainers = data.InitContainers
	s.Spec.Volumes = data.Volumes
	s.Spec.ImagePullSecrets = data.ImagePullSecrets
	s.Spec.PatchPodMetadata = data.PatchPodMetadata
	s.Status.LatestRevision = rev.Name
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	h, hw := rev.Annotations[appsv1beta1.SidecarSetHashAnnotation], rev.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]
	if h == "" || hw == "" {
		hashes, err := appsv1beta1.ComputeHashes(&s.Spec)
		if err != nil {
			return nil, err
		}
		h, hw = hashes.Hash, hashes.WithoutImage
	}
	s.Annotations[appsv1beta1.SidecarSetHashAnnotation] = h
	s.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = hw
	return s, nil
}

// Name is the name of a SidecarSet's revision: <sidecarset>-<hash>, where the
// hash is the upstream controller-history hash (32-bit FNV of the data and
// the collision count, safe-encoded).
func Name(sidecarSet string, data []byte, collisionCount *int32) string {
	prefix := sidecarSet
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return prefix + "-" + Hash(data, collisionCount)
}

// Hash is the upstream controller-history hash of revision data.
func Hash(data []byte, collisionCount *int32) string {
	hf := fnv.New32()
	_, _ = hf.Write(data) // hash.Hash writes never fail
	if collisionCount != nil {
		_, _ = hf.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// New builds the ControllerRevision recording a SidecarSet's current spec,
// labelled and annotated as OpenKruise 1.9 does (the SidecarSet's labels,
// its name, the data's hash and spec.customVersion), in the given
// namespace, owned through apps.kruise.io/v1beta1.
func New(s *appsv1beta1.SidecarSet, namespace string, number int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := Encode(&s.Spec)
	if err != nil {
		return nil, err
	}
	hash := Hash(data, collisionCount)
	labels := make(map[string]string, len(s.Labels)+2)
	maps.Copy(labels, s.Labels)
	labels[appsv1beta1.SidecarSetNameLabel] = s.Name
	labels[HashLabel] = hash
	if s.Spec.CustomVersion != "" {
		labels[appsv1beta1.SidecarSetCustomVersionLabel] = s.Spec.CustomVersion
	}
	// The SidecarSet's annotations are copied, as OpenKruise does, except
	// kubectl's last-applied-configuration: it duplicates the whole object
	// and only bloats every revision.
	annotations := make(map[string]string, len(s.Annotations))
	for k, v := range s.Annotations {
		if k != lastAppliedAnnotation {
			annotations[k] = v
		}
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(s.Name, data, collisionCount),
			Namespace:       namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1beta1.GroupVersion.WithKind("SidecarSet"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}, nil
}
