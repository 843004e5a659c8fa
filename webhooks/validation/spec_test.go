package validation

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestValidateSidecarSet_Selectors(t *testing.T) {
	t.Parallel()
	badOperator := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Like"}}}
	spec := field.NewPath("spec")
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarSet)
		want   field.ErrorList
	}{
		{
			name: "valid selectors everywhere are accepted",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
				s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
				s.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
					{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}}}
			},
		},
		{
			name: "an unknown operator is reported on each selector with its path",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.NamespaceSelector = badOperator.DeepCopy()
				s.Spec.UpdateStrategy.Selector = badOperator.DeepCopy()
				s.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
					{Weight: 1, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
					{Weight: 2, MatchSelector: *badOperator.DeepCopy()}}}
			},
			want: field.ErrorList{
				field.Invalid(spec.Child("namespaceSelector", "matchExpressions").Index(0).Child("operator"),
					metav1.LabelSelectorOperator("Like"), "not a valid selector operator"),
				field.Invalid(spec.Child("updateStrategy", "priorityStrategy", "weightPriority").Index(1).Child("matchSelector", "matchExpressions").Index(0).Child("operator"),
					metav1.LabelSelectorOperator("Like"), "not a valid selector operator"),
				field.Invalid(spec.Child("updateStrategy", "selector", "matchExpressions").Index(0).Child("operator"),
					metav1.LabelSelectorOperator("Like"), "not a valid selector operator"),
			},
		},
		{
			name: "an In expression without values is reported on the pod selector",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}
			},
			want: field.ErrorList{field.Required(spec.Child("selector", "matchExpressions").Index(0).Child("values"),
				"must be specified when `operator` is 'In' or 'NotIn'")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, _ := ValidateSidecarSet(newSidecarSet("s", "nginx", tc.mutate), nil, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestValidateSidecarSet_PinnedRevision(t *testing.T) {
	t.Parallel()
	revision := field.NewPath("spec", "injectionStrategy", "revision")
	notFound := errors.New(`controllerrevisions.apps "s-7b9d" not found`)
	const consequence = "pods matching this SidecarSet would be rejected at creation while it is missing; " +
		"pin an existing revision (kubectl get controllerrevisions -n kruise-system -l kruise.io/sidecarset-name=s) " +
		"or remove injectionStrategy.revision"
	tests := []struct {
		name       string
		revision   *appsv1beta1.SidecarSetInjectRevision
		resolveErr error
		want       field.ErrorList
	}{
		{
			name:     "a resolved pinned revision is accepted",
			revision: &appsv1beta1.SidecarSetInjectRevision{RevisionName: new("s-7b9d")},
		},
		{
			name:       "a missing revision name is rejected on revisionName",
			revision:   &appsv1beta1.SidecarSetInjectRevision{RevisionName: new("s-7b9d")},
			resolveErr: notFound,
			want: field.ErrorList{field.Invalid(revision.Child("revisionName"), "s-7b9d",
				`ControllerRevision "s-7b9d" cannot be resolved (controllerrevisions.apps "s-7b9d" not found): `+consequence)},
		},
		{
			name:       "a missing custom version is rejected on customVersion",
			revision:   &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v2")},
			resolveErr: errors.New("no revision has this custom version"),
			want: field.ErrorList{field.Invalid(revision.Child("customVersion"), "v2",
				`no ControllerRevision with custom version "v2" can be resolved (no revision has this custom version): `+consequence)},
		},
		{
			name:       "a resolution error without a pinned revision is ignored",
			resolveErr: notFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Revision = tc.revision })
			errs, _ := ValidateSidecarSet(s, nil, Options{PinnedRevisionError: tc.resolveErr})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestValidateSidecarSet_StrategyWarnings(t *testing.T) {
	t.Parallel()
	zeroMsg := func(v string) string {
		return "spec.updateStrategy.maxUnavailable: " + v + " lets no upgraded pod be unavailable, so the rollout will not " +
			"progress: only pods that are already unavailable get upgraded; set it to at least 1 (a percentage is rounded up, never to 0)"
	}
	tests := []struct {
		name           string
		strategyType   appsv1beta1.SidecarSetUpdateStrategyType
		maxUnavailable string
		partition      string
		want           []string
	}{
		{name: "the defaults give no warning", maxUnavailable: "1", partition: "0"},
		{name: "a percentage maxUnavailable gives no warning", maxUnavailable: "10%", partition: "90%"},
		{name: "maxUnavailable 0 says the rollout will not progress", maxUnavailable: "0", partition: "0", want: []string{zeroMsg("0")}},
		{name: "maxUnavailable 0% says the rollout will not progress", maxUnavailable: "0%", partition: "0", want: []string{zeroMsg("0%")}},
		{
			name: "partition 100% says nothing upgrades", maxUnavailable: "1", partition: "100%",
			want: []string{"spec.updateStrategy.partition: 100% holds back every pod, so nothing is upgraded in place; lower it to start the rollout"},
		},
		{name: "a large integer partition gives no warning, as the pod count is unknown", maxUnavailable: "1", partition: "1000"},
		{
			name: "NotUpdate gives no strategy warning", strategyType: appsv1beta1.NotUpdateSidecarSetStrategyType,
			maxUnavailable: "0", partition: "100%",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.UpdateStrategy.Type = tc.strategyType
				m, p := intstr.Parse(tc.maxUnavailable), intstr.Parse(tc.partition)
				s.Spec.UpdateStrategy.MaxUnavailable, s.Spec.UpdateStrategy.Partition = &m, &p
			})
			errs, warnings := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, nil, errs)
			checkWarnings(t, tc.want, warnings)
		})
	}
}
