package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// SidecarSetSpec declares which pods get which sidecars, and how existing
// pods are upgraded when the sidecars change.
// +kubebuilder:validation:XValidation:rule="(has(self.containers) && size(self.containers) > 0) || (has(self.initContainers) && size(self.initContainers) > 0)",message="at least one container or initContainer is required",fieldPath=".containers"
type SidecarSetSpec struct {
	// selector is a label query over the pods that get the sidecars injected
	// at creation and upgraded in place afterwards. It must not be empty.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must not be empty: it would match every pod in the cluster"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// namespaceSelector restricts the SidecarSet to pods in namespaces whose
	// labels match. Nil means every namespace; if set it must not be empty.
	// One namespace is matchLabels {kubernetes.io/metadata.name: <name>}
	// (what v1alpha1's spec.namespace converts to).
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="namespaceSelector must not be empty: omit it to select every namespace"
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// customVersion tags this version of the sidecars with a version of
	// your own: the ControllerRevision recorded from it carries the label
	// apps.kruise.io/sidecarset-custom-version, and
	// injectionStrategy.revision.customVersion pins new pods to it. It is
	// the label apps.kruise.io/sidecarset-custom-version of the v1alpha1 view.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CustomVersion string `json:"customVersion,omitempty"`

	// initContainers are injected into pod.spec.initContainers when a pod is
	// created, sorted by name. A container with restartPolicy Always is a
	// native (Kubernetes 1.28+) sidecar. Init containers are never added to
	// existing pods.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	InitContainers []SidecarContainer `json:"initContainers,omitempty"`

	// containers are injected into pod.spec.containers when a pod is created.
	// Changing only their images upgrades existing pods in place, following
	// updateStrategy; any other change reaches newly created pods only.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Containers []SidecarContainer `json:"containers,omitempty"`

	// volumes the sidecars may mount. Only the volumes a sidecar actually
	// mounts are added to a pod, after the pod's own volumes; a pod volume of
	// the same name wins.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// updateStrategy controls the in-place upgrade of the sidecars of
	// existing pods: whether it happens, how many pods at a time, in which
	// order, and which pods are held back.
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// injectionStrategy controls injection into newly created pods.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// imagePullSecrets are merged into the pod's imagePullSecrets at
	// injection, without duplicates. The secrets must exist in the pod's
	// namespace.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// revisionHistoryLimit is the number of ControllerRevisions kept for this
	// SidecarSet (default 10, at least 1, at most 100: a larger value is
	// accepted, with a warning, and the controller keeps 100). Revisions
	// still recorded by pods or pinned by injectionStrategy.revision are
	// never deleted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// patchPodMetadata lists annotations written onto pods at injection and,
	// for the Overwrite and MergePatchJson policies, again at each in-place
	// upgrade. Keys must be allowed by the SidecarSet_PatchPodMetadata_WhiteList
	// of the kruise-configuration ConfigMap.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarContainer is a Kubernetes container plus the fields that say how it
// is injected and upgraded.
// +kubebuilder:validation:XValidation:rule="!has(self.resourcesPolicy) || !has(self.resources) || ((!has(self.resources.limits) || size(self.resources.limits) == 0) && (!has(self.resources.requests) || size(self.resources.requests) == 0))",message="resourcesPolicy and resources cannot be configured together",fieldPath=".resourcesPolicy"
type SidecarContainer struct {
	corev1.Container `json:",inline"`

	// podInjectPolicy places the sidecar before (BeforeAppContainer, the
	// default for containers) or after (AfterAppContainer, the default for
	// initContainers) the pod's own containers.
	// +optional
	// +kubebuilder:validation:Enum=BeforeAppContainer;AfterAppContainer
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`

	// upgradeStrategy chooses between a cold upgrade (the container restarts
	// with the new image) and a hot upgrade (two twin containers take turns,
	// so the sidecar never stops serving).
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// shareVolumePolicy, when enabled, mounts every volumeMount of the pod's
	// own containers into the sidecar at the same path (the sidecar's own
	// mounts win).
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`

	// shareVolumeDevicePolicy, when enabled, shares the volumeDevices of the
	// pod's own containers with the sidecar, like shareVolumePolicy.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`

	// transferEnv copies environment variables from one of the pod's own
	// containers into the sidecar at injection. The sidecar's own env wins.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`

	// resourcesPolicy computes the sidecar's resources at pod creation from
	// the resources of the pod's own containers.
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// PodInjectPolicyType is where a sidecar goes relative to the pod's containers.
type PodInjectPolicyType string

const (
	// BeforeAppContainerType injects the sidecar before the pod's containers.
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	// AfterAppContainerType injects the sidecar after the pod's containers.
	AfterAppContainerType PodInjectPolicyType = "AfterAppContainer"
)

// ShareVolumePolicyType switches volume sharing on or off.
type ShareVolumePolicyType string

const (
	// ShareVolumePolicyEnabled shares the app containers' mounts.
	ShareVolumePolicyEnabled ShareVolumePolicyType = "enabled"
	// ShareVolumePolicyDisabled shares nothing.
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// ShareVolumePolicy says whether the sidecar shares the volumes of the pod's
// own containers.
type ShareVolumePolicy struct {
	// type is enabled or disabled (the default).
	// +optional
	// +kubebuilder:validation:Enum=enabled;disabled
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// TransferEnvVar copies env vars from one of the pod's own containers.
// +kubebuilder:validation:XValidation:rule="has(self.sourceContainerName) != has(self.sourceContainerNameFrom)",message="exactly one of sourceContainerName and sourceContainerNameFrom is required"
// +kubebuilder:validation:XValidation:rule="has(self.envName) || (has(self.envNames) && size(self.envNames) > 0)",message="at least one of envName and envNames is required"
type TransferEnvVar struct {
	// sourceContainerName is the name of the container to copy from.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	SourceContainerName string `json:"sourceContainerName,omitempty"`

	// sourceContainerNameFrom reads the source container's name from the
	// pod: metadata.name, metadata.labels['<key>'] or
	// metadata.annotations['<key>'].
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`

	// envName is one env var to copy.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	EnvName string `json:"envName,omitempty"`

	// envNames are more env vars to copy.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource reads a container name from the pod's metadata.
type SourceContainerNameSource struct {
	// fieldRef selects metadata.name, metadata.labels['<key>'] or
	// metadata.annotations['<key>'] of the pod.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.fieldPath == 'metadata.name' || ((self.fieldPath.startsWith(\"metadata.labels['\") || self.fieldPath.startsWith(\"metadata.annotations['\")) && self.fieldPath.endsWith(\"']\"))",message="fieldPath must be metadata.name, metadata.labels['<key>'] or metadata.annotations['<key>']"
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// SidecarContainerUpgradeType is how a sidecar is upgraded in place.
type SidecarContainerUpgradeType string

const (
	// SidecarContainerColdUpgrade restarts the sidecar with the new image.
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	// SidecarContainerHotUpgrade upgrades the idle twin, then idles the old one.
	SidecarContainerHotUpgrade SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy says how a sidecar is upgraded in place.
// +kubebuilder:validation:XValidation:rule="!has(self.upgradeType) || self.upgradeType != 'HotUpgrade' || (has(self.hotUpgradeEmptyImage) && size(self.hotUpgradeEmptyImage) > 0)",message="hotUpgradeEmptyImage is required when upgradeType is HotUpgrade",fieldPath=".hotUpgradeEmptyImage"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.upgradeType) || size(oldSelf.upgradeType) == 0 || (has(self.upgradeType) && self.upgradeType == oldSelf.upgradeType)",message="upgradeType is immutable: create a new SidecarSet to change it",fieldPath=".upgradeType"
type SidecarContainerUpgradeStrategy struct {
	// upgradeType is ColdUpgrade (the default) or HotUpgrade. It cannot be
	// changed once set. HotUpgrade injects two twins, <name>-1 and <name>-2.
	// +optional
	// +kubebuilder:validation:Enum=ColdUpgrade;HotUpgrade
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`

	// hotUpgradeEmptyImage is the image of the idle twin during a hot
	// upgrade: same configuration as the sidecar, doing nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}

// ResourcesPolicy computes a sidecar's resources from the pod's containers.
type ResourcesPolicy struct {
	// targetContainersMode aggregates the target containers' resources by
	// sum or max.
	// +required
	// +kubebuilder:validation:Enum=sum;max
	TargetContainerMode TargetContainerModeType `json:"targetContainersMode"`

	// targetContainersNameRegex selects the target containers by name
	// (default ".*").
	// +optional
	// +kubebuilder:default=".*"
	// +kubebuilder:validation:MaxLength=256
	TargetContainersNameRegex string `json:"targetContainersNameRegex,omitempty"`

	// resourcesExpr holds the expressions over the aggregate, such as
	// "cpu*50%" or "max(memory*20%, 100Mi)".
	// +required
	ResourceExpr ResourceExpr `json:"resourcesExpr"`
}

// TargetContainerModeType is how target containers' resources are aggregated.
type TargetContainerModeType string

const (
	// TargetContainerModeSum adds the target containers' resources up.
	TargetContainerModeSum TargetContainerModeType = "sum"
	// TargetContainerModeMax takes the largest target container's resources.
	TargetContainerModeMax TargetContainerModeType = "max"
)

// ResourceExpr are the limit and request expressions of a resourcesPolicy.
// +kubebuilder:validation:XValidation:rule="has(self.limits) || has(self.requests)",message="at least one of limits and requests is required"
type ResourceExpr struct {
	// limits expressions.
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`
	// requests expressions.
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits are the limit expressions.
type ResourceExprLimits struct {
	// cpu limit expression over the variable cpu.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CPU string `json:"cpu,omitempty"`
	// memory limit expression over the variable memory.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests are the request expressions.
type ResourceExprRequests struct {
	// cpu request expression over the variable cpu.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CPU string `json:"cpu,omitempty"`
	// memory request expression over the variable memory.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Memory string `json:"memory,omitempty"`
}

// SidecarSetUpdateStrategyType is whether existing pods are upgraded.
type SidecarSetUpdateStrategyType string

const (
	// RollingUpdateSidecarSetStrategyType upgrades existing pods in place.
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
	// NotUpdateSidecarSetStrategyType only injects; existing pods keep their sidecars.
	NotUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "NotUpdate"
)

// SidecarSetUpdateStrategy controls the in-place upgrade of existing pods.
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'NotUpdate') || !has(self.selector) || !has(self.partition) || (type(self.partition) == int && self.partition == 0)",message="partition and selector cannot be used together in a RollingUpdate strategy",fieldPath=".partition"
type SidecarSetUpdateStrategy struct {
	// type is RollingUpdate (the default: upgrade existing pods in place) or
	// NotUpdate (inject into new pods only, never touch existing ones).
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;NotUpdate
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`

	// paused stops in-place upgrades; injection into new pods goes on.
	// Upgraded pods keep their version, the others wait.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// selector limits the upgrade to the matched pods that it also matches:
	// label the canary pods, upgrade them first, then widen.
	// +optional
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must not be empty: omit it to upgrade every matched pod"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// partition is the number, or percentage of matched pods, kept on the old
	// sidecars: with 100 matched pods, partition 90 (or 90%) upgrades 10.
	// Percentages round up, but below 100% at least one pod is upgraded.
	// Default 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^(100|[1-9]?[0-9])%$') : self >= 0",message="partition must be a non-negative integer or a percentage from 0% to 100%"
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// maxUnavailable is the number, or percentage of matched pods, of
	// upgraded pods that may be unavailable (upgrading or not ready) at the
	// same time. A non-zero percentage never resolves to 0. Default 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^(100|[1-9]?[0-9])%$') : self >= 0",message="maxUnavailable must be a non-negative integer or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// priorityStrategy orders the upgrade by label weights or label values.
	// +optional
	PriorityStrategy *UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// scatterStrategy spreads the pods with the given labels evenly over the
	// upgrade order. value "*" means every value of the key.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=value
	// +kubebuilder:validation:MaxItems=16
	ScatterStrategy UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// UpdatePriorityStrategy orders the upgrade. weightPriority and orderPriority
// are mutually exclusive.
// +kubebuilder:validation:XValidation:rule="!(has(self.weightPriority) && size(self.weightPriority) > 0 && has(self.orderPriority) && size(self.orderPriority) > 0)",message="weightPriority and orderPriority are mutually exclusive"
type UpdatePriorityStrategy struct {
	// orderPriority orders pods by the integer at the end of the value of the
	// first listed label key they carry: larger first ("sts-10" before "sts-5").
	// +optional
	// +kubebuilder:validation:MaxItems=16
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`

	// weightPriority scores each pod by the sum of the weights of the terms
	// whose selector matches it; higher scores are upgraded first.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm names a label whose value orders the pods.
type UpdatePriorityOrderTerm struct {
	// orderedKey is the label key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm gives a weight to the pods its selector matches.
type UpdatePriorityWeightTerm struct {
	// weight from 1 to 100.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// matchSelector selects the pods that get the weight. It must not be empty.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="matchSelector must not be empty"
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// UpdateScatterStrategy is a list of label terms to scatter.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key and value to scatter.
type UpdateScatterTerm struct {
	// key is the label key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// value is the label value, or "*" for every value of key.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value"`
}

// SidecarSetInjectionStrategy controls injection into new pods.
type SidecarSetInjectionStrategy struct {
	// paused stops injection into newly created pods. Upgrades of existing
	// pods go on.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// revision pins the injected version to a ControllerRevision of this
	// SidecarSet, by name or by custom version.
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevision names a historical version of the SidecarSet.
// +kubebuilder:validation:XValidation:rule="has(self.revisionName) || has(self.customVersion)",message="one of revisionName and customVersion is required"
type SidecarSetInjectRevision struct {
	// customVersion is the spec.customVersion the SidecarSet had when the
	// revision was recorded (the revision's
	// apps.kruise.io/sidecarset-custom-version label). The newest such
	// revision is used.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CustomVersion *string `json:"customVersion,omitempty"`

	// revisionName is the name of a ControllerRevision of this SidecarSet
	// (see status.latestRevision and
	// kubectl get controllerrevisions -l kruise.io/sidecarset-name=<name>).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RevisionName *string `json:"revisionName,omitempty"`

	// policy is Always (inject the pinned revision into every new pod) or
	// Partial (pods selected by updateStrategy.selector, and the share of pods
	// beyond updateStrategy.partition, get the latest version).
	// +optional
	// +kubebuilder:default=Always
	// +kubebuilder:validation:Enum=Always;Partial
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetInjectRevisionPolicy is how a pinned revision is injected.
type SidecarSetInjectRevisionPolicy string

const (
	// AlwaysSidecarSetInjectRevisionPolicy always injects the pinned revision.
	AlwaysSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Always"
	// PartialSidecarSetInjectRevisionPolicy injects the latest into part of the pods.
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetPatchPodMetadata is a set of annotations patched onto pods.
type SidecarSetPatchPodMetadata struct {
	// annotations to write on the pod.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`

	// patchPolicy is Retain (the default: set only absent keys), Overwrite
	// (always set) or MergePatchJson (JSON merge-patch into the existing value).
	// +optional
	// +kubebuilder:validation:Enum=Retain;Overwrite;MergePatchJson
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetPatchPolicyType is how an annotation is patched onto a pod.
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy keeps an existing value.
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy replaces an existing value.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJSONPatchPolicy merges JSON into an existing value.
	SidecarSetMergePatchJSONPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarSetStatus is the observed state of a SidecarSet.
type SidecarSetStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// matchedPods is the number of pods injected with and managed by this
	// SidecarSet.
	MatchedPods int32 `json:"matchedPods"`

	// updatedPods is the number of matched pods running the latest sidecars.
	UpdatedPods int32 `json:"updatedPods"`

	// readyPods is the number of matched pods that are ready with no in-place
	// upgrade in flight.
	ReadyPods int32 `json:"readyPods"`

	// updatedReadyPods is the number of pods both updated and ready.
	// +optional
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`

	// notInjectedPods is the number of running pods the SidecarSet selects
	// (selector, namespace, namespaceSelector) that do not carry its
	// sidecars: created before it, while injection was paused, with a
	// container of a sidecar's name, or admitted without it. The Injected
	// condition names some of them and why. An addition of this operator:
	// OpenKruise clients ignore it.
	// +optional
	NotInjectedPods int32 `json:"notInjectedPods,omitempty"`

	// resizePendingPods is the number of matched pods whose in-place resize
	// of the sidecars' CPU or memory the kubelet has not applied: deferred
	// until the node has room, infeasible on its node, or stuck. The Resized
	// condition names some of them and why. An addition of this operator:
	// OpenKruise clients ignore it.
	// +optional
	ResizePendingPods int32 `json:"resizePendingPods,omitempty"`

	// recreatePendingPods is the number of pods the rollout is to recreate
	// (metadata.annotations[sidecarset-operator.dev/recreate-pods]) and has
	// not evicted yet: waiting for their turn, for the update strategy's
	// budget or for their PodDisruptionBudget. The Recreated condition says
	// why they wait. An addition of this operator: OpenKruise clients ignore
	// it.
	// +optional
	RecreatePendingPods int32 `json:"recreatePendingPods,omitempty"`

	// latestRevision is the name of the ControllerRevision of the current spec.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LatestRevision string `json:"latestRevision,omitempty"`

	// collisionCount counts ControllerRevision name collisions; it salts the
	// name of the next revision.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// conditions say whether the rollout is progressing and, if not, why.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SidecarSet injects sidecar containers into matching pods at creation and
// upgrades them in place afterwards.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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

// Hub marks v1beta1 as the version the others convert through.
func (*SidecarSet) Hub() {}
