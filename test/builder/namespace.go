package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceWrapper builds a Namespace.
type NamespaceWrapper struct {
	corev1.Namespace
}

// MakeNamespace returns a namespace named by generateName prefix "<prefix>-".
func MakeNamespace(prefix string) *NamespaceWrapper {
	return &NamespaceWrapper{corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}}
}

// Obj returns the namespace.
func (w *NamespaceWrapper) Obj() *corev1.Namespace {
	return &w.Namespace
}

// Label sets a label.
func (w *NamespaceWrapper) Label(key, value string) *NamespaceWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}
