package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func nameConflict(path *field.Path, name, detail string) *field.Error {
	return withDetail(field.Duplicate(path.Child("name"), name), detail)
}

func withContainers(list ...appsv1beta1.SidecarContainer) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) { s.Spec.Containers = list }
}

func withInitContainers(list ...appsv1beta1.SidecarContainer) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) { s.Spec.InitContainers = list }
}

func withVolumes(list ...corev1.Volume) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) { s.Spec.Volumes = list }
}

func withPatch(policy appsv1beta1.SidecarSetPatchPolicyType, annotations map[string]string) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) {
		s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata,
			appsv1beta1.SidecarSetPatchPodMetadata{Annotations: annotations, PatchPolicy: policy})
	}
}

func TestValidateSidecarSet_ContainerNameConflicts(t *testing.T) {
	t.Parallel()
	const rename = "which can select the same pods; rename one of them or make their selectors disjoint"
	tests := []struct {
		name   string
		s      *appsv1beta1.SidecarSet
		others []*appsv1beta1.SidecarSet
		want   field.ErrorList
	}{
		{
			name:   "the same container name on overlapping selectors is rejected",
			s:      newSidecarSet("mine", "nginx"),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx")},
			want: field.ErrorList{nameConflict(c0, "sidecar1",
				`container name "sidecar1" is also injected by SidecarSet "other", `+rename)},
		},
		{
			name:   "the same container name on disjoint selectors is accepted",
			s:      newSidecarSet("mine", "nginx"),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "web")},
		},
		{
			name: "an Exists selector overlaps a selector that does not mention the key",
			s: newSidecarSet("mine", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "mesh", Operator: metav1.LabelSelectorOpExists}}}
			}),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx")},
			want: field.ErrorList{nameConflict(c0, "sidecar1",
				`container name "sidecar1" is also injected by SidecarSet "other", `+rename)},
		},
		{
			name: "disjoint namespaces make overlapping pod selectors safe",
			s:    newSidecarSet("mine", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("a") }),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "b"}}
			})},
		},
		{
			name:   "an init container named like another SidecarSet's container is rejected",
			s:      newSidecarSet("mine", "nginx", withContainers(sidecar("proxy", "envoy:1")), withInitContainers(sidecar("log", "busybox:1"))),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", withContainers(sidecar("log", "fluent:1")))},
			want: field.ErrorList{nameConflict(i0, "log",
				`container name "log" is also injected by SidecarSet "other", `+rename)},
		},
		{
			name:   "a container named like another SidecarSet's native sidecar is rejected",
			s:      newSidecarSet("mine", "nginx", withContainers(sidecar("proxy", "envoy:1"))),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", withContainers(), withInitContainers(nativeSidecar("proxy", "envoy:2")))},
			want: field.ErrorList{nameConflict(c0, "proxy",
				`container name "proxy" is also injected by SidecarSet "other", `+rename)},
		},
		{
			name:   "a container named like another SidecarSet's hot-upgrade twin is rejected",
			s:      newSidecarSet("mine", "nginx", withContainers(sidecar("proxy-1", "envoy:1"))),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", withContainers(hotSidecar("proxy", "envoy:2")))},
			want: field.ErrorList{nameConflict(c0, "proxy-1",
				`container name "proxy-1" is also injected by SidecarSet "other" (as a twin of its HotUpgrade sidecar "proxy"), `+rename)},
		},
		{
			name:   "a hot-upgrade twin named like another SidecarSet's container is rejected",
			s:      newSidecarSet("mine", "nginx", withContainers(hotSidecar("proxy", "envoy:1"))),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", withContainers(sidecar("proxy-2", "envoy:2")))},
			want: field.ErrorList{nameConflict(c0, "proxy",
				`HotUpgrade twin "proxy-2" of container "proxy" is also injected by SidecarSet "other", `+rename)},
		},
		{
			name:   "itself, found among the others by name, is skipped",
			s:      newSidecarSet("mine", "nginx"),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("mine", "nginx"), nil},
		},
		{
			name: "conflicts with several SidecarSets are all reported, ordered by field path then message",
			s:    newSidecarSet("mine", "nginx", withContainers(sidecar("b", "x:1"), sidecar("a", "x:1"))),
			others: []*appsv1beta1.SidecarSet{
				newSidecarSet("zeta", "nginx", withContainers(sidecar("a", "x:1"), sidecar("b", "x:1"))),
				newSidecarSet("alpha", "nginx", withContainers(sidecar("a", "x:1"))),
			},
			want: field.ErrorList{
				nameConflict(c0, "b", `container name "b" is also injected by SidecarSet "zeta", `+rename),
				nameConflict(field.NewPath("spec", "containers").Index(1), "a", `container name "a" is also injected by SidecarSet "alpha", `+rename),
				nameConflict(field.NewPath("spec", "containers").Index(1), "a", `container name "a" is also injected by SidecarSet "zeta", `+rename),
			},
		},
		{
			name: "conflicts are not checked while the selector is invalid",
			s: newSidecarSet("mine", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bad value"}}
			}),
			others: []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx")},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "selector", "matchLabels"), "bad value",
				"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "+
					"start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "+
					"for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, warnings := ValidateSidecarSet(tc.s, nil, Options{Others: tc.others})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_VolumeAndAnnotationConflicts(t *testing.T) {
	t.Parallel()
	mode := int32(0o644)
	configMap := func(name string, m *int32) corev1.Volume {
		return corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, DefaultMode: m}}}
	}
	annotation := field.NewPath("spec", "patchPodMetadata").Index(0).Child("annotations").Key("k")
	const disjoint = "so the pods' value would depend on which one is applied last; keep the key in one SidecarSet, " +
		"use Retain or MergePatchJson on both, or make their selectors disjoint"
	other := func(mutate ...func(*appsv1beta1.SidecarSet)) []*appsv1beta1.SidecarSet {
		return []*appsv1beta1.SidecarSet{newSidecarSet("other", "nginx", append([]func(*appsv1beta1.SidecarSet){withContainers(sidecar("theirs", "x:1"))}, mutate...)...)}
	}
	tests := []struct {
		name   string
		s      *appsv1beta1.SidecarSet
		others []*appsv1beta1.SidecarSet
		want   field.ErrorList
	}{
		{
			name:   "the same volume, equal once defaulted, is accepted",
			s:      newSidecarSet("mine", "nginx", withVolumes(configMap("cfg", nil))),
			others: other(withVolumes(configMap("cfg", &mode))),
		},
		{
			name:   "the same volume name with another definition is rejected",
			s:      newSidecarSet("mine", "nginx", withVolumes(configMap("cfg", nil))),
			others: other(withVolumes(configMap("other-cfg", nil))),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "volumes").Index(0), "config",
				`volume "config" is also declared by SidecarSet "other", which can select the same pods, with a different `+
					"definition, and a pod gets only one of them; make the definitions identical, rename one of them, "+
					"or make their selectors disjoint")},
		},
		{
			name:   "Overwrite against Retain is accepted",
			s:      newSidecarSet("mine", "nginx", withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "1"})),
			others: other(withPatch(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"k": "2"})),
		},
		{
			name:   "MergePatchJson against MergePatchJson is accepted",
			s:      newSidecarSet("mine", "nginx", withPatch(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{"k": `{"a":1}`})),
			others: other(withPatch(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{"k": `{"b":1}`})),
		},
		{
			name:   "MergePatchJson against Overwrite is rejected",
			s:      newSidecarSet("mine", "nginx", withPatch(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{"k": `{"a":1}`})),
			others: other(withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "v"})),
			want: field.ErrorList{field.Invalid(annotation, "k",
				`annotation "k" is patched with MergePatchJson here and with Overwrite by SidecarSet "other", which can select the same pods, `+disjoint)},
		},
		{
			name:   "Overwrite against Overwrite is rejected",
			s:      newSidecarSet("mine", "nginx", withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "1", "only-mine": "1"})),
			others: other(withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "2"})),
			want: field.ErrorList{field.Invalid(annotation, "k",
				`annotation "k" is patched with Overwrite here and with Overwrite by SidecarSet "other", which can select the same pods, `+disjoint)},
		},
		{
			name:   "Overwrite on disjoint selectors is accepted",
			s:      newSidecarSet("mine", "web", withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "1"})),
			others: other(withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "2"})),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, warnings := ValidateSidecarSet(tc.s, nil, Options{Others: tc.others})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_ConflictsOnUpdate(t *testing.T) {
	t.Parallel()
	const rename = "which can select the same pods; rename one of them or make their selectors disjoint"
	legacy := newSidecarSet("mine", "nginx", withContainers(sidecar("log", "fluent:1")))
	others := []*appsv1beta1.SidecarSet{legacy, newSidecarSet("other", "nginx", withContainers(), withInitContainers(sidecar("log", "busybox:1")))}
	tests := []struct {
		name         string
		s            *appsv1beta1.SidecarSet
		want         field.ErrorList
		wantWarnings []string
	}{
		{
			name: "a conflict the old object already had is a warning, so an image fix still goes through",
			s:    newSidecarSet("mine", "nginx", withContainers(sidecar("log", "fluent:2"))),
			wantWarnings: []string{`spec.containers[0].name: Duplicate value: "log": container name "log" is also injected by ` +
				`SidecarSet "other", ` + rename + " (accepted because this conflict predates the update; resolve it)"},
		},
		{
			name: "adding an unrelated container keeps the old conflict a warning",
			s:    newSidecarSet("mine", "nginx", withContainers(sidecar("log", "fluent:1"), sidecar("sidecar1", "x:1"))),
			wantWarnings: []string{
				`spec.containers[0].name: Duplicate value: "log": container name "log" is also injected by ` +
					`SidecarSet "other", ` + rename + " (accepted because this conflict predates the update; resolve it)",
				"spec.containers[1] (sidecar1): added; this cannot be applied in place: only pods created from now on get it, " +
					"existing pods keep their current sidecars (status shows them as not upgradable; " + recreateHint + ")",
			},
		},
		{
			name: "widening the selector into a new conflict is rejected",
			s: newSidecarSet("mine", "nginx", withContainers(sidecar("log", "fluent:1"), sidecar("web-proxy", "x:1")), func(s *appsv1beta1.SidecarSet) {
				s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"nginx", "web"}}}}
			}),
			want: field.ErrorList{nameConflict(field.NewPath("spec", "containers").Index(1), "web-proxy",
				`container name "web-proxy" is also injected by SidecarSet "web", `+rename)},
			wantWarnings: []string{
				`spec.containers[0].name: Duplicate value: "log": container name "log" is also injected by ` +
					`SidecarSet "other", ` + rename + " (accepted because this conflict predates the update; resolve it)",
				"spec.containers[1] (web-proxy): added; this cannot be applied in place: only pods created from now on get it, " +
					"existing pods keep their current sidecars (status shows them as not upgradable; " + recreateHint + ")",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all := append([]*appsv1beta1.SidecarSet{newSidecarSet("web", "web", withContainers(sidecar("web-proxy", "x:1")))}, others...)
			errs, warnings := ValidateSidecarSet(tc.s, legacy, Options{Others: all})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, tc.wantWarnings, warnings)
		})
	}
}
