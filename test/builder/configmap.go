package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// WhitelistConfigMap returns the kruise-configuration ConfigMap of a
// namespace holding a patchPodMetadata whitelist document.
func WhitelistConfigMap(namespace, whitelist string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: appsv1beta1.ConfigurationConfigMapName, Namespace: namespace},
		Data:       map[string]string{appsv1beta1.PatchPodMetadataWhiteListKey: whitelist},
	}
}
