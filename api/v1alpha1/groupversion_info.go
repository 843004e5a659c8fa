// Package v1alpha1 contains the SidecarSet API as OpenKruise's manual writes
// it, apps.kruise.io/v1alpha1. It is served, not stored: the API server
// converts it to and from apps.kruise.io/v1beta1 (package api/v1beta1, the
// hub) through the operator's conversion webhook, exactly as OpenKruise 1.9
// does. Its only differences from v1beta1 are spec.namespace and the
// custom-version label in place of spec.customVersion; every other type is
// v1beta1's.
//
// +kubebuilder:object:generate=true
// +groupName=apps.kruise.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
