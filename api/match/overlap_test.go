package match

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func req(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestSelectorsOverlap(t *testing.T) {
	t.Parallel()
	labelsSel := func(kv ...string) *metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &metav1.LabelSelector{MatchLabels: m}
	}
	exprs := func(r ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: r}
	}
	tests := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"nil selects everything", nil, labelsSel("app", "x"), true},
		{"same labels overlap", labelsSel("app", "nginx"), labelsSel("app", "nginx"), true},
		{"different values of one key are disjoint", labelsSel("app", "nginx"), labelsSel("app", "redis"), false},
		{"different keys overlap", labelsSel("app", "nginx"), labelsSel("tier", "web"), true},
		{"In sharing a value overlaps", exprs(req("app", metav1.LabelSelectorOpIn, "a", "b")), exprs(req("app", metav1.LabelSelectorOpIn, "b", "c")), true},
		{"In with no common value is disjoint", exprs(req("app", metav1.LabelSelectorOpIn, "a")), exprs(req("app", metav1.LabelSelectorOpIn, "c")), false},
		{"NotIn excluding every allowed value is disjoint", labelsSel("app", "a"), exprs(req("app", metav1.LabelSelectorOpNotIn, "a")), false},
		{"NotIn leaving a value overlaps", exprs(req("app", metav1.LabelSelectorOpIn, "a", "b")), exprs(req("app", metav1.LabelSelectorOpNotIn, "a")), true},
		{"Exists against an unmentioned key overlaps (OpenKruise says disjoint)", labelsSel("app", "a"), exprs(req("canary", metav1.LabelSelectorOpExists)), true},
		{"Exists against DoesNotExist is disjoint", exprs(req("k", metav1.LabelSelectorOpExists)), exprs(req("k", metav1.LabelSelectorOpDoesNotExist)), false},
		{"DoesNotExist against a required label is disjoint", labelsSel("k", "v"), exprs(req("k", metav1.LabelSelectorOpDoesNotExist)), false},
		{"DoesNotExist against NotIn overlaps", exprs(req("k", metav1.LabelSelectorOpNotIn, "v")), exprs(req("k", metav1.LabelSelectorOpDoesNotExist)), true},
		{"Exists with NotIn overlaps", exprs(req("k", metav1.LabelSelectorOpExists)), exprs(req("k", metav1.LabelSelectorOpNotIn, "a", "b")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SelectorsOverlap(tc.a, tc.b); got != tc.want {
				t.Errorf("SelectorsOverlap = %v, want %v", got, tc.want)
			}
			if got := SelectorsOverlap(tc.b, tc.a); got != tc.want {
				t.Errorf("SelectorsOverlap (swapped) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOverlap_NamespaceAndPodSelectors(t *testing.T) {
	t.Parallel()
	mk := func(ns string, nsSel *metav1.LabelSelector) *appsv1beta1.SidecarSet {
		if ns != "" {
			nsSel = appsv1beta1.SelectNamespace(ns)
		}
		return &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			NamespaceSelector: nsSel,
		}}
	}
	if Overlap(mk("ns-1", nil), mk("ns-2", nil)) {
		t.Error("SidecarSets pinned to different namespaces overlap")
	}
	if !Overlap(mk("ns-1", nil), mk("", nil)) {
		t.Error("a namespaced and a cluster-wide SidecarSet do not overlap")
	}
	env := &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "production"}}
	if !Overlap(mk("ns-1", nil), mk("", env)) {
		t.Error("namespace ns-1 and a label selector on another key do not overlap")
	}
}

func TestIndexValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec appsv1beta1.SidecarSetSpec
		want []string
	}{
		{"no namespace restriction", appsv1beta1.SidecarSetSpec{}, []string{ClusterScope}},
		{"matchLabels on the name", appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{NamespaceNameLabel: "ns-2"}}}, []string{"ns-2"}},
		{"In on the name", appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{req(NamespaceNameLabel, metav1.LabelSelectorOpIn, "a", "b")}}}, []string{"a", "b"}},
		{"other labels", appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"environment": "production"}}}, []string{ClusterScope}},
	}
	for _, tc := range tests {
		got := IndexValues(&appsv1beta1.SidecarSet{Spec: tc.spec})
		if len(got) != len(tc.want) {
			t.Errorf("%s: IndexValues = %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: IndexValues = %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
