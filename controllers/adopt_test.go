package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

func TestStaleOwner_Versions(t *testing.T) {
	t.Parallel()
	s := &appsv1alpha1.SidecarSet{}
	s.Name, s.UID = "fx-basic", "uid-1"
	ref := func(apiVersion string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: "SidecarSet", Name: "fx-basic", UID: "uid-1", Controller: &controller}
	}
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{"OpenKruise's v1beta1 owner of the same UID is adopted", []metav1.OwnerReference{ref("apps.kruise.io/v1beta1", true)}, true},
		{"a v1alpha1 owner is ours already", []metav1.OwnerReference{ref(appsv1alpha1.GroupVersion.String(), true)}, false},
		{"no owner is left alone", nil, false},
		{"an owner that is not the controller is left alone", []metav1.OwnerReference{ref("apps.kruise.io/v1beta1", false)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &appsv1.ControllerRevision{}
			r.OwnerReferences = tc.refs
			if got := staleOwner(s, r); got != tc.want {
				t.Errorf("staleOwner = %v, want %v", got, tc.want)
			}
		})
	}
}
