// Package match decides which pods and namespaces a SidecarSet selects, and
// whether two SidecarSets can select the same pod. It is pure: namespace
// labels are passed in, never fetched (internal/lookup fetches them for both
// the pod webhook and the controller).
package match

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// NamespaceNameLabel is the label every namespace carries with its own name.
const NamespaceNameLabel = appsv1beta1.NamespaceNameLabel

// ClusterScope is the namespace-index value of a SidecarSet that is not
// pinned to one namespace.
const ClusterScope = "clusterScope"

// NamespaceSelector returns the namespace selector of a SidecarSet, nil for
// every namespace. (v1alpha1's spec.namespace arrives here as a selector on
// kubernetes.io/metadata.name.)
func NamespaceSelector(s *appsv1beta1.SidecarSet) *metav1.LabelSelector {
	return s.Spec.NamespaceSelector
}

// NeedsNamespaceLabels reports whether deciding if a SidecarSet selects a
// namespace takes the namespace's labels: its namespaceSelector has a
// requirement on a label other than kubernetes.io/metadata.name (which
// needs only the name).
func NeedsNamespaceLabels(s *appsv1beta1.SidecarSet) bool {
	sel := s.Spec.NamespaceSelector
	if sel == nil {
		return false
	}
	for k := range sel.MatchLabels {
		if k != NamespaceNameLabel {
			return true
		}
	}
	for _, r := range sel.MatchExpressions {
		if r.Key != NamespaceNameLabel {
			return true
		}
	}
	return false
}

// PodActive reports whether a pod can still run containers: it is not being
// deleted and has not terminated (phase Succeeded or Failed). Only active
// pods are injected, counted and upgraded.
func PodActive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Namespace reports whether a SidecarSet selects a namespace, given the
// namespace's labels. The name is matched through kubernetes.io/metadata.name,
// which is added to the labels if missing.
func Namespace(s *appsv1beta1.SidecarSet, name string, nsLabels map[string]string) (bool, error) {
	sel := NamespaceSelector(s)
	if sel == nil {
		return true, nil
	}
	if nsLabels[NamespaceNameLabel] != name {
		withName := make(map[string]string, len(nsLabels)+1)
		maps.Copy(withName, nsLabels)
		withName[NamespaceNameLabel] = name
		nsLabels = withName
	}
	return selects(sel, nsLabels, "namespaceSelector")
}

// Pod reports whether a SidecarSet's selector matches a pod's labels. A nil
// or empty selector matches nothing.
func Pod(s *appsv1beta1.SidecarSet, podLabels map[string]string) (bool, error) {
	sel, err := PodSelector(s)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(podLabels)), nil
}

// PodSelector is Pod's decision compiled once, for the many pods of one
// SidecarSet.
func PodSelector(s *appsv1beta1.SidecarSet) (labels.Selector, error) {
	if IsEmpty(s.Spec.Selector) {
		return labels.Nothing(), nil
	}
	return compile(s.Spec.Selector, "selector")
}

// Selects reports whether a label selector matches a label set; a nil
// selector matches everything, an invalid one is an error.
func Selects(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	compiled, err := Compile(sel)
	if err != nil {
		return false, err
	}
	return compiled.Matches(labels.Set(set)), nil
}

// Compile is Selects' decision compiled once, for many label sets.
func Compile(sel *metav1.LabelSelector) (labels.Selector, error) {
	if sel == nil {
		return labels.Everything(), nil
	}
	return compile(sel, "selector")
}

func selects(sel *metav1.LabelSelector, set map[string]string, what string) (bool, error) {
	s, err := compile(sel, what)
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(set)), nil
}

func compile(sel *metav1.LabelSelector, what string) (labels.Selector, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid %s: %w", what, err)
	}
	return s, nil
}

// IsEmpty reports whether a selector is nil or has no requirement.
func IsEmpty(sel *metav1.LabelSelector) bool {
	return sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0)
}

// IndexValues are the values under which a SidecarSet is indexed by
// namespace: the namespaces it is pinned to (the values of a
// namespaceSelector on kubernetes.io/metadata.name), else ClusterScope.
// A pod's candidates are the SidecarSets indexed under its namespace plus
// those indexed under ClusterScope.
func IndexValues(s *appsv1beta1.SidecarSet) []string {
	sel := NamespaceSelector(s)
	if sel == nil {
		return []string{ClusterScope}
	}
	if v, ok := sel.MatchLabels[NamespaceNameLabel]; ok {
		return []string{v}
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == NamespaceNameLabel && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) > 0 {
			return append([]string(nil), r.Values...)
		}
	}
	return []string{ClusterScope}
}

// CanaryBase returns the base SidecarSet a canary SidecarSet replaces (its
// apps.kruise.io/sidecarset-base annotation, when apps.kruise.io/sidecarset-canary
// is "true"), or "". A canary naming itself replaces nothing.
func CanaryBase(s *appsv1beta1.SidecarSet) string {
	if s.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] != "true" {
		return ""
	}
	if base := s.Annotations[appsv1beta1.SidecarSetBaseAnnotation]; base != s.Name {
		return base
	}
	return ""
}
