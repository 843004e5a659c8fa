// Package install registers both served versions of the SidecarSet API,
// apps.kruise.io/v1beta1 (the hub, stored) and v1alpha1, with a scheme:
// every program that reads or writes SidecarSets, or converts them, needs
// both.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Install adds both versions of the SidecarSet API to a scheme.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(appsv1beta1.AddToScheme(scheme))
	utilruntime.Must(appsv1alpha1.AddToScheme(scheme))
}
