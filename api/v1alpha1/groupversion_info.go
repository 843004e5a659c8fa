// Package v1alpha1 contains the SidecarSet API, wire-compatible with
// OpenKruise's apps.kruise.io/v1alpha1 SidecarSet.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the SidecarSet API.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1alpha1"}

	// SchemeBuilder registers the API types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SidecarSet{}, &SidecarSetList{})
	return addMetaTypes(scheme)
}
