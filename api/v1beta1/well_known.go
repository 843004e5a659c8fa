package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Annotation, label and condition keys shared with OpenKruise. Pods injected
// by either implementation carry the same keys with the same formats, so each
// implementation can manage the other's pods.
const (
	// SidecarSetHashAnnotation is, on a SidecarSet, its hash, and on a pod,
	// the JSON map of the injected or upgraded hash per SidecarSet.
	SidecarSetHashAnnotation = "kruise.io/sidecarset-hash"
	// SidecarSetHashWithoutImageAnnotation is the same, ignoring images.
	SidecarSetHashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetListAnnotation is the sorted, comma-joined list of the
	// SidecarSets injected into a pod.
	SidecarSetListAnnotation = "kruise.io/sidecarset-injected-list"
	// InPlaceUpdateStateAnnotation records, per SidecarSet, the container
	// image IDs a pod had before its last in-place upgrade.
	InPlaceUpdateStateAnnotation = "kruise.io/sidecarset-inplace-update-state"
	// WorkingHotUpgradeContainerAnnotation maps each hot-upgrade sidecar to
	// its working twin.
	WorkingHotUpgradeContainerAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	// HotUpgradeVersionAnnotationPrefix prefixes the version annotation of a
	// hot-upgrade twin (version.sidecarset.kruise.io/<twin>).
	HotUpgradeVersionAnnotationPrefix = "version.sidecarset.kruise.io/"
	// HotUpgradeVersionAltAnnotationPrefix prefixes the other twin's version
	// (versionalt.sidecarset.kruise.io/<twin>).
	HotUpgradeVersionAltAnnotationPrefix = "versionalt.sidecarset.kruise.io/"

	// SidecarSetCustomVersionLabel tags a SidecarSet, and the
	// ControllerRevisions recorded from it, with a user version.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// NamespaceNameLabel is the label the API server puts on every
	// namespace, with its name. v1alpha1's spec.namespace is the
	// namespaceSelector {matchLabels: {kubernetes.io/metadata.name: <name>}}.
	NamespaceNameLabel = "kubernetes.io/metadata.name"

	// SidecarSetNameLabel names the SidecarSet of a ControllerRevision.
	SidecarSetNameLabel = "kruise.io/sidecarset-name"
	// SidecarSetCanaryAnnotation marks a canary SidecarSet ("true").
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	// SidecarSetBaseAnnotation names the base SidecarSet of a canary.
	SidecarSetBaseAnnotation = "apps.kruise.io/sidecarset-base"

	// SidecarEnvInjected marks an injected container (IS_INJECTED=true).
	SidecarEnvInjected = "IS_INJECTED"
	// SidecarEnvVersion is the hot-upgrade twin's own version.
	SidecarEnvVersion = "SIDECARSET_VERSION"
	// SidecarEnvVersionAlt is the other hot-upgrade twin's version.
	SidecarEnvVersionAlt = "SIDECARSET_VERSION_ALT"

	// SidecarSetUpgradableCondition is the pod condition saying, as a JSON
	// map from SidecarSet name to bool, whether the pod can be upgraded in place.
	SidecarSetUpgradableCondition = "SidecarSetUpgradable"
	// AllSidecarSetUpgradableReason is its reason when every entry is true.
	AllSidecarSetUpgradableReason = "AllSidecarsetUpgradable"
	// UpdateImmutableFieldReason is its reason when some entry is false.
	UpdateImmutableFieldReason = "UpdateImmutableField"

	// PatchPodMetadataWhiteListKey is the data key of the whitelist in the
	// kruise-configuration ConfigMap.
	PatchPodMetadataWhiteListKey = "SidecarSet_PatchPodMetadata_WhiteList"
	// ConfigurationConfigMapName is the ConfigMap holding the whitelist.
	ConfigurationConfigMapName = "kruise-configuration"
)

// SidecarSet status condition types and reasons. They explain, in
// `kubectl describe sidecarset`, whether a rollout progresses and why not.
const (
	// SidecarSetConditionUpdated is True when every upgradable pod runs the
	// latest sidecars.
	SidecarSetConditionUpdated = "Updated"
	// SidecarSetConditionProgressing is True while an in-place rollout can
	// make progress, False with a reason when it is held or stalled.
	SidecarSetConditionProgressing = "Progressing"
	// SidecarSetConditionInjected is False, with reason PodsNotInjected,
	// while pods the SidecarSet selects run without its sidecars; it is
	// absent when every such pod carries them.
	SidecarSetConditionInjected = "Injected"

	// SidecarSetConditionResized is False while the kubelet has not applied
	// some pods' in-place resize of the sidecars (reasons ResizeDeferred,
	// ResizeInfeasible, ResizeStuck, or ResizeRefused when the API server
	// or the rule of the resize refuses it); it is absent when every resize
	// was applied.
	SidecarSetConditionResized = "Resized"
	// SidecarSetConditionRecreated is False while pods wait to be
	// recreated (reasons Recreating, WaitingForPodDisruptionBudget,
	// WaitingForUnavailablePods, PartitionHeld, Paused, PodsNotRecreatable);
	// it is absent when no pod needs a recreation.
	SidecarSetConditionRecreated = "Recreated"

	// ReasonPodsNotInjected: some selected pods run without the sidecars;
	// the message names a few and why.
	ReasonPodsNotInjected = "PodsNotInjected"

	// ReasonResizePending: the rollout waits for the kubelet to apply some
	// pods' resizes (the Resized condition says why).
	ReasonResizePending = "ResizePending"
	// ReasonResizeDeferred: the kubelet deferred a resize until its node
	// has room (PodResizePending, reason Deferred); it retries by itself.
	ReasonResizeDeferred = "ResizeDeferred"
	// ReasonResizeInfeasible: the pod's node can never fit the new
	// resources (PodResizePending, reason Infeasible).
	ReasonResizeInfeasible = "ResizeInfeasible"
	// ReasonResizeStuck: the kubelet reports an error applying a resize, or
	// has not finished it in time.
	ReasonResizeStuck = "ResizeStuck"
	// ReasonResizeRefused: the resize cannot be made on the pod (its QoS
	// class would change, a request or limit would be removed, the node or
	// the cluster does not support resizing, ...).
	ReasonResizeRefused = "ResizeRefused"

	// ReasonRecreating: pods are being evicted and replaced.
	ReasonRecreating = "Recreating"
	// ReasonWaitingForPodDisruptionBudget: the Eviction API refused an
	// eviction (HTTP 429): a PodDisruptionBudget allows no disruption now.
	ReasonWaitingForPodDisruptionBudget = "WaitingForPodDisruptionBudget"
	// ReasonPodsNotRecreatable: pods need a recreation but no controller of
	// theirs would recreate them (bare pods, or Jobs' pods and pods with
	// restartPolicy Never without the Job opt-in).
	ReasonPodsNotRecreatable = "PodsNotRecreatable"
	// SidecarSetConditionRestricted is True, with reason SidecarsRestricted,
	// while some of the SidecarSet's pods run its sidecars without parts its
	// authority did not cover (a volume of the pod mounted by name, the
	// pod's token); it is absent when there is none.
	SidecarSetConditionRestricted = "Restricted"
	// ReasonSidecarsRestricted: the message names a few pods and what their
	// sidecars were not given.
	ReasonSidecarsRestricted = "SidecarsRestricted"

	// SidecarSetConditionScoped is False, with reason ScopeDegraded, while
	// the pod webhooks' scope leaves the SidecarSet out (it could not fit the
	// API server's limits): its pods go to the best-effort webhook, and are
	// admitted without its sidecars while the operator is unreachable. It is
	// absent otherwise.
	SidecarSetConditionScoped = "Scoped"
	// ReasonScopeDegraded: the message says why and what it means.
	ReasonScopeDegraded = "ScopeDegraded"

	// ReasonRolloutComplete: every selected pod runs the latest sidecars.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonUpdating: pods are being upgraded.
	ReasonUpdating = "Updating"
	// ReasonNotUpdate: the strategy is NotUpdate; existing pods are left alone.
	ReasonNotUpdate = "NotUpdateStrategy"
	// ReasonPaused: updateStrategy.paused is true.
	ReasonPaused = "Paused"
	// ReasonPartitionHeld: the remaining pods are held back by partition.
	ReasonPartitionHeld = "PartitionHeld"
	// ReasonWaitingForUnavailablePods: maxUnavailable is used up by pods
	// that are upgrading or not ready.
	ReasonWaitingForUnavailablePods = "WaitingForUnavailablePods"
	// ReasonMaxUnavailableIsZero: maxUnavailable resolves to 0.
	ReasonMaxUnavailableIsZero = "MaxUnavailableIsZero"
	// ReasonNotUpgradablePods: some pods cannot be upgraded in place because
	// a field other than an image changed.
	ReasonNotUpgradablePods = "NotUpgradablePods"
	// ReasonUpdatedPodsUnavailable: every pod that can be upgraded was, but
	// some upgraded pods are not available (not ready, or the new sidecar
	// image is not running: for example it cannot be pulled).
	ReasonUpdatedPodsUnavailable = "UpdatedPodsUnavailable"
	// ReasonNotSelected: the remaining pods are outside updateStrategy.selector.
	ReasonNotSelected = "NotSelectedByUpdateSelector"
	// ReasonBlockedPods: some pods that need the upgrade cannot be patched:
	// their SidecarSet annotations are unreadable, patchPodMetadata cannot
	// be applied to them, or the SidecarSet's current authority does not
	// cover what its sidecars reach in them (their reach annotation).
	ReasonBlockedPods = "BlockedPods"
	// ReasonProgressDeadlineExceeded: no pod was newly updated and ready for
	// longer than the progress deadline (ProgressDeadlineAnnotation).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonFailureBudgetExceeded: more pods upgraded in place fail on the
	// current revision than the failure budget (FailureBudgetAnnotation)
	// allows; the controller paused the rollout.
	ReasonFailureBudgetExceeded = "FailureBudgetExceeded"
)

// Keys of this operator (not OpenKruise's): OpenKruise ignores them.
const (
	// FailurePolicyAnnotation, on a SidecarSet, says what happens to a pod
	// it selects when its sidecars cannot be injected (the operator is
	// unreachable, or the SidecarSet cannot be applied to this pod):
	// FailurePolicyFail (the default, as OpenKruise) refuses the pod, a
	// required sidecar; FailurePolicyIgnore admits it without the
	// SidecarSet, a best-effort sidecar.
	FailurePolicyAnnotation = "sidecarset-operator.dev/failure-policy"
	// ReachAnnotation, on a pod, records per SidecarSet the custom verbs
	// what its sidecars were given in this pod needs (the volumes their
	// mounts and devices resolve to, their own settings), as a JSON map from
	// SidecarSet name to a comma-separated list of verbs. The injector
	// writes it; the controller upgrades a sidecar in place only while its
	// SidecarSet's authority still covers it.
	ReachAnnotation = "sidecarset-operator.dev/reach"
	// RestrictedAnnotation, on a pod, lists per SidecarSet what its sidecars
	// were not given because its authority did not cover it, as a JSON map
	// from SidecarSet name to sentences.
	RestrictedAnnotation = "sidecarset-operator.dev/restricted"
	// NamespaceUIDsAnnotation, on a SidecarSet, records the UIDs of the
	// namespaces it names one by one (match.IndexValues) that existed when
	// it was last written and judged, as a JSON map from namespace name to
	// UID. The mutating webhook writes it, overwriting whatever the author
	// wrote; the operator's pause and the garbage collector's writes keep
	// it. A SidecarSet does not apply in a namespace of a recorded name
	// whose UID differs (the namespace was deleted and created again).
	NamespaceUIDsAnnotation = "sidecarset-operator.dev/namespace-uids"
	// CanaryBaseUIDAnnotation, on a canary SidecarSet, records the UID of
	// the base SidecarSet judged when the canary was last written. The
	// mutating webhook writes it, like NamespaceUIDsAnnotation. A canary
	// replaces only the base of that UID.
	CanaryBaseUIDAnnotation = "sidecarset-operator.dev/canary-base-uid"

	// OperatorPodLabel and OperatorPodName mark the operator's own pods. In
	// the operator's namespace, and only there, they are never injected
	// (the pod webhooks' scope leaves them out, so that the operator can
	// always start) nor counted as missing their sidecars. Under OLM, whose
	// webhook definitions cannot carry the namespace, the label exempts a
	// pod in any namespace only until the operator has written the pod
	// webhooks' scope, which drops that exemption, and again after OLM
	// rewrites its webhook configurations, until the next write
	// (docs/security.md).
	OperatorPodLabel = "app.kubernetes.io/name"
	OperatorPodName  = "sidecarset-operator"

	// FailurePolicyFail: the sidecar is required.
	FailurePolicyFail = "Fail"
	// FailurePolicyIgnore: the sidecar is best-effort.
	FailurePolicyIgnore = "Ignore"

	// RecreatePodsAnnotation, on a SidecarSet, set to "true", lets its
	// rollout recreate the running pods that cannot get its sidecars in
	// place: a change other than images and resources, a resize the API
	// server or the kubelet refuses, and pods it selects that lack its
	// sidecars (created before it). The pods are evicted through the
	// Eviction API (their PodDisruptionBudgets apply), paced by the update
	// strategy, and only when their controller recreates them; the pod
	// webhook injects the current revision into the replacement. Unset or
	// "false": such changes reach new pods only (OpenKruise's behavior).
	RecreatePodsAnnotation = "sidecarset-operator.dev/recreate-pods"
	// RecreateJobPodsAnnotation, set to "true" with RecreatePodsAnnotation,
	// extends the recreate path to the pods of Jobs and pods with
	// restartPolicy Never, which a recreation restarts from the beginning
	// (and counts against a Job's backoffLimit).
	RecreateJobPodsAnnotation = "sidecarset-operator.dev/recreate-job-pods"
	// The rollout guards, opt-in per SidecarSet (ParseRolloutGuards reads
	// them). Without them a rollout behaves as OpenKruise's: it never
	// times out and never stops itself.
	//
	// ProgressDeadlineAnnotation is how many seconds a rollout may go
	// without a pod newly updated and ready before its Progressing
	// condition turns False with reason ProgressDeadlineExceeded, as a
	// Deployment's progressDeadlineSeconds. It only reports: the rollout
	// goes on.
	ProgressDeadlineAnnotation = "sidecarset-operator.dev/progress-deadline-seconds"
	// FailureBudgetAnnotation is how many pods upgraded in place may fail
	// on the current revision (a new sidecar does not become ready within
	// the failure window, or restarts repeatedly) before the controller
	// sets updateStrategy.paused: one more pauses the rollout.
	FailureBudgetAnnotation = "sidecarset-operator.dev/failure-budget"
	// FailureWindowAnnotation is how many seconds an upgraded pod's new
	// sidecars have to become ready before the pod counts against the
	// failure budget (DefaultFailureWindow when absent).
	FailureWindowAnnotation = "sidecarset-operator.dev/failure-window-seconds"
	// MinReadyAnnotation is how many seconds a pod's sidecars upgraded in
	// place must run ready before the rollout counts the pod as available
	// again (maxUnavailable) and as upgraded (the failure budget), as a
	// Deployment's minReadySeconds: DefaultMinReadyWithBudget with a
	// failure budget, 0 without, when absent.
	MinReadyAnnotation = "sidecarset-operator.dev/min-ready-seconds"
)

// RecreatesPods reports whether a SidecarSet's rollout may recreate pods
// (RecreatePodsAnnotation is "true").
func RecreatesPods(s *SidecarSet) bool {
	return s.Annotations[RecreatePodsAnnotation] == "true"
}

// RecreatesJobPods reports whether the recreate path also takes the pods of
// Jobs and pods with restartPolicy Never.
func RecreatesJobPods(s *SidecarSet) bool {
	return RecreatesPods(s) && s.Annotations[RecreateJobPodsAnnotation] == "true"
}

// IsBestEffort reports whether a SidecarSet's failure policy is Ignore. Any
// other value, including none or an invalid one, is Fail: a mistyped policy
// never weakens a required sidecar.
func IsBestEffort(s *SidecarSet) bool {
	return s.Annotations[FailurePolicyAnnotation] == FailurePolicyIgnore
}

// SelectNamespace returns the namespaceSelector of one namespace, by name:
// what v1alpha1's spec.namespace converts to.
func SelectNamespace(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{NamespaceNameLabel: name}}
}
