// Package v1beta1 contains the SidecarSet API as OpenKruise 1.9 stores it,
// apps.kruise.io/v1beta1: the hub of the API's versions, the one the
// operator's code works with and the one etcd stores. apps.kruise.io/v1alpha1
// (package api/v1alpha1) converts to and from it.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the SidecarSet API.
	GroupVersion = schema.GroupVersion{Group: "apps.kruise.io", Version: "v1beta1"}

	// SchemeBuilder registers the API types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SidecarSet{}, &SidecarSetList{})
	return addMetaTypes(scheme)
}
