package v1alpha1_test

import (
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

const customVersionLabel = appsv1alpha1.SidecarSetCustomVersionLabel

var ignoreTypeMeta = cmpopts.IgnoreFields(metav1.TypeMeta{}, "APIVersion", "Kind")

func toHub(t *testing.T, s *appsv1alpha1.SidecarSet) *appsv1beta1.SidecarSet {
	t.Helper()
	hub := &appsv1beta1.SidecarSet{}
	if err := s.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	return hub
}

func fromHub(t *testing.T, hub *appsv1beta1.SidecarSet) *appsv1alpha1.SidecarSet {
	t.Helper()
	s := &appsv1alpha1.SidecarSet{}
	if err := s.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	return s
}

func selectorOf(labels map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels}
}

// TestConvert_OpenKruiseObjects checks both directions against what
// OpenKruise 1.9 itself returned for the same six SidecarSets read through
// each version, after injection and after an upgrade: converting its
// v1beta1 view gives its v1alpha1 view, and the other way round.
func TestConvert_OpenKruiseObjects(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{"injected", "upgraded"} {
		alpha := fixtures.MustList[appsv1alpha1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-"+stage+"-v1alpha1.yaml")
		beta := fixtures.MustList[appsv1beta1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-"+stage+"-v1beta1.yaml")
		if len(alpha) != len(beta) || len(alpha) != 6 {
			t.Fatalf("%s: %d v1alpha1 and %d v1beta1 objects, want 6 of each", stage, len(alpha), len(beta))
		}
		for i := range beta {
			want := fixtures.MustNamed(t, alpha, beta[i].Name, func(s *appsv1alpha1.SidecarSet) string { return s.Name })
			if diff := cmp.Diff(want, fromHub(t, &beta[i]), ignoreTypeMeta); diff != "" {
				t.Errorf("%s %s: v1beta1 to v1alpha1 differs from OpenKruise's (-kruise +ours):\n%s", stage, beta[i].Name, diff)
			}
			if diff := cmp.Diff(&beta[i], toHub(t, want), ignoreTypeMeta); diff != "" {
				t.Errorf("%s %s: v1alpha1 to v1beta1 differs from OpenKruise's (-kruise +ours):\n%s", stage, beta[i].Name, diff)
			}
		}
	}
}

// TestConvert_Mapping is the table of ../shared/spec/kruise-1.9.md §2.2 and
// §2.3, case by case.
func TestConvert_Mapping(t *testing.T) {
	t.Parallel()
	byName := func(ns string) *metav1.LabelSelector {
		return selectorOf(map[string]string{appsv1beta1.NamespaceNameLabel: ns})
	}
	prod := selectorOf(map[string]string{"env": "prod"})
	tests := []struct {
		name       string
		alpha      appsv1alpha1.SidecarSet
		wantHub    appsv1beta1.SidecarSet
		wantBackTo appsv1alpha1.SidecarSet
	}{{
		name:       "namespace becomes a namespaceSelector on the name and never comes back (2.3 case 1)",
		alpha:      appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{Namespace: "team-a"}},
		wantHub:    appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: byName("team-a")}},
		wantBackTo: appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{NamespaceSelector: byName("team-a")}},
	}, {
		name:       "namespace wins over a namespaceSelector, which is dropped (2.3 case 2)",
		alpha:      appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{Namespace: "team-a", NamespaceSelector: prod}},
		wantHub:    appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: byName("team-a")}},
		wantBackTo: appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{NamespaceSelector: byName("team-a")}},
	}, {
		name:       "a namespaceSelector alone is copied",
		alpha:      appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{NamespaceSelector: prod}},
		wantHub:    appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: prod}},
		wantBackTo: appsv1alpha1.SidecarSet{Spec: appsv1alpha1.SidecarSetSpec{NamespaceSelector: prod}},
	}, {
		name: "the custom-version label moves into spec.customVersion and back",
		alpha: appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{customVersionLabel: "v1", "team": "web"}}},
		wantHub: appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "web"}},
			Spec: appsv1beta1.SidecarSetSpec{CustomVersion: "v1"}},
		wantBackTo: appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{customVersionLabel: "v1", "team": "web"}}},
	}, {
		name: "an empty custom-version label is dropped and not restored (2.3 case 3)",
		alpha: appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{customVersionLabel: "", "team": "web"}}},
		wantHub:    appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "web"}}},
		wantBackTo: appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "web"}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hub := toHub(t, &tc.alpha)
			if diff := cmp.Diff(&tc.wantHub, hub, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("v1beta1 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(&tc.wantBackTo, fromHub(t, hub), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("back to v1alpha1 (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConvertFrom_LabelSetByHand covers 2.3 case 4: a v1beta1 object with
// the label but no spec.customVersion shows the label in the v1alpha1
// view, and writing that view back promotes the label into the spec; a
// spec.customVersion overwrites a label of another value.
func TestConvertFrom_LabelSetByHand(t *testing.T) {
	t.Parallel()
	hub := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{customVersionLabel: "by-hand"}}}
	alpha := fromHub(t, hub)
	if got := alpha.Labels[customVersionLabel]; got != "by-hand" {
		t.Errorf("v1alpha1 label = %q, want the hand-set by-hand", got)
	}
	if got := toHub(t, alpha).Spec.CustomVersion; got != "by-hand" {
		t.Errorf("written back, spec.customVersion = %q, want by-hand", got)
	}
	hub.Spec.CustomVersion = "v2"
	if got := fromHub(t, hub).Labels[customVersionLabel]; got != "v2" {
		t.Errorf("with spec.customVersion v2, the label = %q, want v2", got)
	}
}

// TestConvert_DoesNotModifyTheSource covers 2.3 case 6: OpenKruise shares
// the label map between source and result; ours copies.
func TestConvert_DoesNotModifyTheSource(t *testing.T) {
	t.Parallel()
	alpha := &appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{customVersionLabel: "v1"}},
		Spec: appsv1alpha1.SidecarSetSpec{Namespace: "a", Containers: []appsv1beta1.SidecarContainer{{}}}}
	before := alpha.DeepCopy()
	hub := toHub(t, alpha)
	hub.Spec.Containers[0].Name = "changed"
	if diff := cmp.Diff(before, alpha); diff != "" {
		t.Errorf("ConvertTo changed its source (-before +after):\n%s", diff)
	}
	hub = &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{CustomVersion: "v1", Containers: []appsv1beta1.SidecarContainer{{}}}}
	hubBefore := hub.DeepCopy()
	back := fromHub(t, hub)
	back.Spec.Containers[0].Name = "changed"
	if diff := cmp.Diff(hubBefore, hub); diff != "" {
		t.Errorf("ConvertFrom changed its source (-before +after):\n%s", diff)
	}
}

// TestConvert_RoundTripsEveryField fills every field at random: a v1beta1
// object without the custom-version label comes back from v1alpha1
// unchanged, and so does a v1alpha1 object without spec.namespace (the two
// lossy fields aside, conversion loses nothing).
func TestConvert_RoundTripsEveryField(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(20261125), serializer.NewCodecFactory(scheme)).NilChance(0.2).NumElements(0, 2)
	for i := range 300 {
		hub := &appsv1beta1.SidecarSet{}
		f.Fill(hub)
		delete(hub.Labels, customVersionLabel)
		if got := toHub(t, fromHub(t, hub)); !equality.Semantic.DeepEqual(hub, got) {
			t.Fatalf("round %d: v1beta1 -> v1alpha1 -> v1beta1 changed the object:\n%s", i, cmp.Diff(hub, got))
		}
		alpha := &appsv1alpha1.SidecarSet{}
		f.Fill(alpha)
		alpha.Spec.Namespace = ""
		if v, ok := alpha.Labels[customVersionLabel]; ok && v == "" {
			delete(alpha.Labels, customVersionLabel)
		}
		if got := fromHub(t, toHub(t, alpha)); !equality.Semantic.DeepEqual(alpha, got) {
			t.Fatalf("round %d: v1alpha1 -> v1beta1 -> v1alpha1 changed the object:\n%s", i, cmp.Diff(alpha, got))
		}
	}
}
