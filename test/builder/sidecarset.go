package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// SidecarSetWrapper builds a SidecarSet.
type SidecarSetWrapper struct {
	appsv1beta1.SidecarSet
}

// MakeSidecarSet returns a SidecarSet selecting the pods labelled
// labelKey=labelValue, with no containers yet and no strategy set (the
// defaulting webhook fills it in).
func MakeSidecarSet(name, labelKey, labelValue string) *SidecarSetWrapper {
	return &SidecarSetWrapper{appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKey: labelValue}},
		},
	}}
}

// Obj returns the SidecarSet.
func (w *SidecarSetWrapper) Obj() *appsv1beta1.SidecarSet {
	return &w.SidecarSet
}

// Clone returns an independent copy of the wrapper.
func (w *SidecarSetWrapper) Clone() *SidecarSetWrapper {
	return &SidecarSetWrapper{*w.DeepCopy()}
}

// Label sets a label.
func (w *SidecarSetWrapper) Label(key, value string) *SidecarSetWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

// Annotation sets an annotation.
func (w *SidecarSetWrapper) Annotation(key, value string) *SidecarSetWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Selector replaces the pod selector.
func (w *SidecarSetWrapper) Selector(sel *metav1.LabelSelector) *SidecarSetWrapper {
	w.Spec.Selector = sel
	return w
}

// SelectorLabel adds a matchLabels entry to the pod selector.
func (w *SidecarSetWrapper) SelectorLabel(key, value string) *SidecarSetWrapper {
	if w.Spec.Selector == nil {
		w.Spec.Selector = &metav1.LabelSelector{}
	}
	if w.Spec.Selector.MatchLabels == nil {
		w.Spec.Selector.MatchLabels = map[string]string{}
	}
	w.Spec.Selector.MatchLabels[key] = value
	return w
}

// SelectorExpression adds a matchExpressions entry to the pod selector.
func (w *SidecarSetWrapper) SelectorExpression(key string, op metav1.LabelSelectorOperator, values ...string) *SidecarSetWrapper {
	if w.Spec.Selector == nil {
		w.Spec.Selector = &metav1.LabelSelector{}
	}
	w.Spec.Selector.MatchExpressions = append(w.Spec.Selector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values})
	return w
}

// Namespace limits the SidecarSet to one namespace, as v1alpha1's
// spec.namespace does: the namespaceSelector on kubernetes.io/metadata.name
// it converts to.
func (w *SidecarSetWrapper) Namespace(ns string) *SidecarSetWrapper {
	w.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: ns}}
	return w
}

// CustomVersion sets spec.customVersion (v1alpha1's custom-version label).
func (w *SidecarSetWrapper) CustomVersion(v string) *SidecarSetWrapper {
	w.Spec.CustomVersion = v
	return w
}

// NamespaceSelector sets spec.namespaceSelector to match labels.
func (w *SidecarSetWrapper) NamespaceSelector(labels map[string]string) *SidecarSetWrapper {
	w.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels}
	return w
}

// Containers replaces the sidecar containers.
func (w *SidecarSetWrapper) Containers(cs ...*ContainerWrapper) *SidecarSetWrapper {
	w.Spec.Containers = nil
	for _, c := range cs {
		w.Spec.Containers = append(w.Spec.Containers, c.Sidecar())
	}
	return w
}

// InitContainers replaces the init containers (native sidecars are those
// with RestartAlways).
func (w *SidecarSetWrapper) InitContainers(cs ...*ContainerWrapper) *SidecarSetWrapper {
	w.Spec.InitContainers = nil
	for _, c := range cs {
		w.Spec.InitContainers = append(w.Spec.InitContainers, c.Sidecar())
	}
	return w
}

// Volumes appends volumes.
func (w *SidecarSetWrapper) Volumes(vs ...corev1.Volume) *SidecarSetWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, vs...)
	return w
}

// ImagePullSecrets appends image pull secrets by name.
func (w *SidecarSetWrapper) ImagePullSecrets(names ...string) *SidecarSetWrapper {
	for _, n := range names {
		w.Spec.ImagePullSecrets = append(w.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return w
}

// PatchPodMetadata appends a patchPodMetadata entry.
func (w *SidecarSetWrapper) PatchPodMetadata(policy appsv1beta1.SidecarSetPatchPolicyType, annotations map[string]string) *SidecarSetWrapper {
	w.Spec.PatchPodMetadata = append(w.Spec.PatchPodMetadata, appsv1beta1.SidecarSetPatchPodMetadata{
		Annotations: annotations, PatchPolicy: policy,
	})
	return w
}

// RevisionHistoryLimit sets revisionHistoryLimit.
func (w *SidecarSetWrapper) RevisionHistoryLimit(n int32) *SidecarSetWrapper {
	w.Spec.RevisionHistoryLimit = &n
	return w
}

// InjectionPaused sets injectionStrategy.paused.
func (w *SidecarSetWrapper) InjectionPaused(paused bool) *SidecarSetWrapper {
	w.Spec.InjectionStrategy.Paused = paused
	return w
}

// InjectRevision sets injectionStrategy.revision.
func (w *SidecarSetWrapper) InjectRevision(r appsv1beta1.SidecarSetInjectRevision) *SidecarSetWrapper {
	w.Spec.InjectionStrategy.Revision = &r
	return w
}

// NotUpdate sets updateStrategy.type to NotUpdate.
func (w *SidecarSetWrapper) NotUpdate() *SidecarSetWrapper {
	w.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	return w
}

// RollingUpdate sets updateStrategy.type to RollingUpdate.
func (w *SidecarSetWrapper) RollingUpdate() *SidecarSetWrapper {
	w.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateSidecarSetStrategyType
	return w
}

// Partition sets updateStrategy.partition.
func (w *SidecarSetWrapper) Partition(v intstr.IntOrString) *SidecarSetWrapper {
	w.Spec.UpdateStrategy.Partition = &v
	return w
}

// MaxUnavailable sets updateStrategy.maxUnavailable.
func (w *SidecarSetWrapper) MaxUnavailable(v intstr.IntOrString) *SidecarSetWrapper {
	w.Spec.UpdateStrategy.MaxUnavailable = &v
	return w
}

// Paused sets updateStrategy.paused.
func (w *SidecarSetWrapper) Paused(paused bool) *SidecarSetWrapper {
	w.Spec.UpdateStrategy.Paused = paused
	return w
}

// UpdateSelector sets updateStrategy.selector to match labels (nil removes
// it).
func (w *SidecarSetWrapper) UpdateSelector(labels map[string]string) *SidecarSetWrapper {
	if labels == nil {
		w.Spec.UpdateStrategy.Selector = nil
		return w
	}
	w.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: labels}
	return w
}

// WeightPriority appends a priorityStrategy.weightPriority term.
func (w *SidecarSetWrapper) WeightPriority(weight int32, labels map[string]string) *SidecarSetWrapper {
	ps := w.priority()
	ps.WeightPriority = append(ps.WeightPriority, appsv1beta1.UpdatePriorityWeightTerm{
		Weight: weight, MatchSelector: metav1.LabelSelector{MatchLabels: labels},
	})
	return w
}

// OrderPriority appends priorityStrategy.orderPriority terms.
func (w *SidecarSetWrapper) OrderPriority(keys ...string) *SidecarSetWrapper {
	ps := w.priority()
	for _, k := range keys {
		ps.OrderPriority = append(ps.OrderPriority, appsv1beta1.UpdatePriorityOrderTerm{OrderedKey: k})
	}
	return w
}

// Scatter appends a scatterStrategy term.
func (w *SidecarSetWrapper) Scatter(key, value string) *SidecarSetWrapper {
	w.Spec.UpdateStrategy.ScatterStrategy = append(w.Spec.UpdateStrategy.ScatterStrategy,
		appsv1beta1.UpdateScatterTerm{Key: key, Value: value})
	return w
}

func (w *SidecarSetWrapper) priority() *appsv1beta1.UpdatePriorityStrategy {
	if w.Spec.UpdateStrategy.PriorityStrategy == nil {
		w.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{}
	}
	return w.Spec.UpdateStrategy.PriorityStrategy
}
