package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The parts of the spec and the status that both versions share are
// v1beta1's types; they are documented there.
type (
	// SidecarContainer is v1beta1.SidecarContainer.
	SidecarContainer = v1beta1.SidecarContainer
	// SidecarSetUpdateStrategy is v1beta1.SidecarSetUpdateStrategy.
	SidecarSetUpdateStrategy = v1beta1.SidecarSetUpdateStrategy
	// SidecarSetInjectionStrategy is v1beta1.SidecarSetInjectionStrategy.
	SidecarSetInjectionStrategy = v1beta1.SidecarSetInjectionStrategy
	// SidecarSetPatchPodMetadata is v1beta1.SidecarSetPatchPodMetadata.
	SidecarSetPatchPodMetadata = v1beta1.SidecarSetPatchPodMetadata
	// SidecarSetStatus is v1beta1.SidecarSetStatus.
	SidecarSetStatus = v1beta1.SidecarSetStatus
)

// SidecarSetCustomVersionLabel is where v1alpha1 keeps v1beta1's
// spec.customVersion: a label of the SidecarSet.
const SidecarSetCustomVersionLabel = v1beta1.SidecarSetCustomVersionLabel

// SidecarSetSpec is v1beta1's spec with spec.namespace, and without
// spec.customVersion (the label apps.kruise.io/sidecarset-custom-version
// carries it).
// +kubebuilder:validation:XValidation:rule="(has(self.containers) && size(self.containers) > 0) || (has(self.initContainers) && size(self.initContainers) > 0)",message="at least one container or initContainer is required",fieldPath=".containers"
type SidecarSetSpec struct {
	// selector is a label query over the pods that get the sidecars. It
	// must not be empty.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must not be empty: it would match every pod in the cluster"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// namespace restricts the SidecarSet to the pods of one namespace. It is
	// stored as the namespaceSelector {kubernetes.io/metadata.name: <name>}
	// (so it reads back as that selector), and wins over a namespaceSelector
	// given with it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// namespaceSelector restricts the SidecarSet to the pods of the
	// namespaces whose labels match. Nil means every namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="namespaceSelector must not be empty: omit it to select every namespace"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// initContainers are injected into new pods' initContainers.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	InitContainers []SidecarContainer `json:"initContainers,omitempty"`

	// containers are injected into new pods and upgraded in running ones.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Containers []SidecarContainer `json:"containers,omitempty"`

	// volumes the sidecars may mount.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// updateStrategy controls the in-place upgrade of running pods.
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// injectionStrategy controls injection into new pods.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// imagePullSecrets are merged into the pods' imagePullSecrets.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// revisionHistoryLimit is the number of ControllerRevisions kept (at
	// most 100: a larger value is accepted, with a warning, and the
	// controller keeps 100).
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// patchPodMetadata lists annotations written onto the pods.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarSet injects sidecar containers into matching pods at creation and
// upgrades them in place afterwards (the v1alpha1 view; stored as v1beta1).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods injected with and managed by the SidecarSet."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods running the latest sidecars."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of matched pods that are ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="NOT-INJECTED",type="integer",JSONPath=".status.notInjectedPods",priority=1,description="The number of pods the SidecarSet selects that run without its sidecars."
type SidecarSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the sidecars, where they go and how they are upgraded.
	// +optional
	Spec SidecarSetSpec `json:"spec,omitempty"`

	// status is the observed state of the SidecarSet.
	// +optional
	Status SidecarSetStatus `json:"status,omitempty"`
}

// SidecarSetList is a list of SidecarSets.
// +kubebuilder:object:root=true
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
