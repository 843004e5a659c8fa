package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// canaryOf marks a SidecarSet as a NotUpdate canary of base.
func canaryOf(base string) func(*appsv1beta1.SidecarSet) {
	return func(s *appsv1beta1.SidecarSet) {
		s.Annotations = map[string]string{
			appsv1beta1.SidecarSetCanaryAnnotation: "true",
			appsv1beta1.SidecarSetBaseAnnotation:   base,
		}
		s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	}
}

func TestValidateSidecarSet_Canary(t *testing.T) {
	t.Parallel()
	basePath := field.NewPath("metadata", "annotations").Key(appsv1beta1.SidecarSetBaseAnnotation)
	base := newSidecarSet("base", "nginx")
	otherBase := newSidecarSet("other-base", "web")
	canaryOfOther := newSidecarSet("canary-of-other", "web", canaryOf("other-base"))
	tests := []struct {
		name   string
		s      *appsv1beta1.SidecarSet
		old    *appsv1beta1.SidecarSet
		others []*appsv1beta1.SidecarSet
		want   field.ErrorList
	}{
		{
			name:   "a NotUpdate canary of an existing base sharing its sidecars is accepted",
			s:      newSidecarSet("canary", "nginx", canaryOf("base")),
			others: []*appsv1beta1.SidecarSet{base, otherBase},
		},
		{
			name:   "a base update is not rejected because its overlapping canary shares container names",
			s:      newSidecarSet("base", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "centos:7" }),
			old:    base,
			others: []*appsv1beta1.SidecarSet{base, newSidecarSet("canary", "nginx", canaryOf("base"))},
		},
		{
			name: "a canary that is its own base is rejected",
			s:    newSidecarSet("canary", "nginx", canaryOf("canary")),
			want: field.ErrorList{field.Invalid(basePath, "canary",
				"a canary SidecarSet cannot be its own base: name the SidecarSet it tests a new version of")},
		},
		{
			name:   "a canary of a missing base is rejected",
			s:      newSidecarSet("canary", "other-app", canaryOf("missing")),
			others: []*appsv1beta1.SidecarSet{base},
			want: field.ErrorList{withDetail(field.NotFound(basePath, "missing"),
				`no SidecarSet named "missing" exists: create the base first, or remove the canary annotations`)},
		},
		{
			name:   "a canary of a canary is rejected",
			s:      newSidecarSet("canary", "other-app", canaryOf("canary-of-other")),
			others: []*appsv1beta1.SidecarSet{otherBase, canaryOfOther},
			want: field.ErrorList{field.Invalid(basePath, "canary-of-other",
				`SidecarSet "canary-of-other" is itself a canary: the base of a canary must be a SidecarSet that is not a canary`)},
		},
		{
			name: "a RollingUpdate canary is rejected",
			s: newSidecarSet("canary", "nginx", canaryOf("base"), func(s *appsv1beta1.SidecarSet) {
				s.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateSidecarSetStrategyType
			}),
			others: []*appsv1beta1.SidecarSet{base},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "updateStrategy", "type"), appsv1beta1.RollingUpdateSidecarSetStrategyType,
				"a canary SidecarSet must use NotUpdate: it only injects its sidecars into new pods, and its base "+
					"keeps upgrading existing ones; set updateStrategy.type to NotUpdate")},
		},
		{
			name:   "changing the base of a canary is rejected",
			s:      newSidecarSet("canary", "other-app", canaryOf("other-base")),
			old:    newSidecarSet("canary", "other-app", canaryOf("base")),
			others: []*appsv1beta1.SidecarSet{base, otherBase},
			want: field.ErrorList{field.Invalid(basePath, "other-base",
				`is immutable (it was "base"): a canary SidecarSet keeps the base it was created with; `+
					"create a new canary SidecarSet to test against another base")},
		},
		{
			name:   "turning an existing SidecarSet into a canary is rejected",
			s:      newSidecarSet("late", "nginx", canaryOf("base")),
			old:    newSidecarSet("late", "nginx"),
			others: []*appsv1beta1.SidecarSet{base},
			want: field.ErrorList{field.Invalid(basePath, "base",
				"is immutable: an existing SidecarSet cannot become a canary by an update; "+
					"create a new SidecarSet with the canary annotations instead")},
		},
		{
			name: "a canary annotation other than exactly true is not a canary, so the conflict with the base stands",
			s: newSidecarSet("canary", "nginx", canaryOf("base"), func(s *appsv1beta1.SidecarSet) {
				s.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] = "True"
			}),
			others: []*appsv1beta1.SidecarSet{base},
			want: field.ErrorList{withDetail(field.Duplicate(field.NewPath("spec", "containers").Index(0).Child("name"), "sidecar1"),
				`container name "sidecar1" is also injected by SidecarSet "base", which can select the same pods; `+
					"rename one of them or make their selectors disjoint")},
		},
		{
			name:   "a canary still conflicts with SidecarSets other than its base",
			s:      newSidecarSet("canary", "web", canaryOf("other-base")),
			others: []*appsv1beta1.SidecarSet{otherBase, newSidecarSet("third", "web")},
			want: field.ErrorList{withDetail(field.Duplicate(field.NewPath("spec", "containers").Index(0).Child("name"), "sidecar1"),
				`container name "sidecar1" is also injected by SidecarSet "third", which can select the same pods; `+
					"rename one of them or make their selectors disjoint")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, _ := ValidateSidecarSet(tc.s, tc.old, Options{Others: tc.others})
			checkErrors(t, tc.want, errs)
		})
	}
}
