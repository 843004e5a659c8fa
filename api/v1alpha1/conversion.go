package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ConvertTo converts this SidecarSet to the hub, as OpenKruise 1.9 does,
// losses included:
//   - spec.namespace becomes the namespaceSelector
//     {matchLabels: {kubernetes.io/metadata.name: <namespace>}}, and a
//     namespaceSelector given with it is dropped (the namespace wins);
//   - the label apps.kruise.io/sidecarset-custom-version moves into
//     spec.customVersion (an empty label is dropped).
//
// The source is not modified.
func (s *SidecarSet) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta1.SidecarSet)
	if !ok {
		return fmt.Errorf("cannot convert a SidecarSet to %T", dstRaw)
	}
	dst.ObjectMeta = *s.ObjectMeta.DeepCopy()
	in := s.Spec.DeepCopy()
	dst.Spec = v1beta1.SidecarSetSpec{
		Selector:             in.Selector,
		NamespaceSelector:    in.NamespaceSelector,
		InitContainers:       in.InitContainers,
		Containers:           in.Containers,
		Volumes:              in.Volumes,
		UpdateStrategy:       in.UpdateStrategy,
		InjectionStrategy:    in.InjectionStrategy,
		ImagePullSecrets:     in.ImagePullSecrets,
		RevisionHistoryLimit: in.RevisionHistoryLimit,
		PatchPodMetadata:     in.PatchPodMetadata,
	}
	if in.Namespace != "" {
		dst.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{v1beta1.NamespaceNameLabel: in.Namespace}}
	}
	if version, ok := dst.Labels[SidecarSetCustomVersionLabel]; ok {
		dst.Spec.CustomVersion = version
		delete(dst.Labels, SidecarSetCustomVersionLabel)
	}
	dst.Status = *s.Status.DeepCopy()
	return nil
}

// ConvertFrom converts a hub SidecarSet to this version, as OpenKruise 1.9
// does: spec.namespace stays empty (the namespaceSelector is copied as it
// is), and a non-empty spec.customVersion becomes the label
// apps.kruise.io/sidecarset-custom-version, overwriting one already there.
// The source is not modified.
func (s *SidecarSet) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta1.SidecarSet)
	if !ok {
		return fmt.Errorf("cannot convert a SidecarSet from %T", srcRaw)
	}
	s.ObjectMeta = *src.ObjectMeta.DeepCopy()
	in := src.Spec.DeepCopy()
	s.Spec = SidecarSetSpec{
		Selector:             in.Selector,
		NamespaceSelector:    in.NamespaceSelector,
		InitContainers:       in.InitContainers,
		Containers:           in.Containers,
		Volumes:              in.Volumes,
		UpdateStrategy:       in.UpdateStrategy,
		InjectionStrategy:    in.InjectionStrategy,
		ImagePullSecrets:     in.ImagePullSecrets,
		RevisionHistoryLimit: in.RevisionHistoryLimit,
		PatchPodMetadata:     in.PatchPodMetadata,
	}
	if in.CustomVersion != "" {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[SidecarSetCustomVersionLabel] = in.CustomVersion
	}
	s.Status = *src.Status.DeepCopy()
	return nil
}

// SetDefaults fills in the defaults of a v1alpha1 SidecarSet in place: the
// hub's (v1beta1.SetDefaults), applied to the fields both versions share.
// spec.namespace, spec.namespaceSelector and the labels stay as written.
func SetDefaults(s *SidecarSet) {
	hub := &v1beta1.SidecarSet{}
	// ConvertTo cannot fail with a hub of the right type.
	_ = s.ConvertTo(hub)
	v1beta1.SetDefaults(hub)
	spec := &hub.Spec
	s.Spec.InitContainers = spec.InitContainers
	s.Spec.Containers = spec.Containers
	s.Spec.Volumes = spec.Volumes
	s.Spec.UpdateStrategy = spec.UpdateStrategy
	s.Spec.InjectionStrategy = spec.InjectionStrategy
	s.Spec.ImagePullSecrets = spec.ImagePullSecrets
	s.Spec.RevisionHistoryLimit = spec.RevisionHistoryLimit
	s.Spec.PatchPodMetadata = spec.PatchPodMetadata
}
