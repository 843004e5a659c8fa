package candidate

import (
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/heap"
)

// maxEntryBytes bounds what the registry adds per SidecarSet of the scale
// bench's kind (one matchLabels pair, one sidecar, already defaulted and
// hashed: the SidecarSet itself is the informer's, shared): an entry's
// bucket keys kept in a second map, or matchLabels compiled into
// requirements, each go over it.
const maxEntryBytes = 280

func TestRegistry_BytesPerSidecarSet(t *testing.T) {
	const n = 5000
	sets := make([]*appsv1beta1.SidecarSet, n)
	for i := range sets {
		s := sidecarSet(fmt.Sprintf("scale-%04d", i), matchLabels("app", fmt.Sprintf("idle-%04d", i)))
		s.ResourceVersion, s.UID = fmt.Sprint(1000+i), "uid"
		appsv1beta1.SetDefaults(s)
		h, err := appsv1beta1.ComputeHashes(&s.Spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Annotations = map[string]string{appsv1beta1.SidecarSetHashAnnotation: h.Hash, appsv1beta1.SidecarSetHashWithoutImageAnnotation: h.WithoutImage}
		sets[i] = s
	}
	r := NewRegistry()
	before := heap.Live()
	for _, s := range sets {
		if err := upsert(r, s); err != nil {
			t.Fatal(err)
		}
	}
	perSet := float64(heap.Live()-before) / n
	runtime.KeepAlive(sets)
	t.Logf("%.0f bytes per SidecarSet", perSet)
	if r.Len() != n {
		t.Fatalf("the registry holds %d SidecarSets, want %d", r.Len(), n)
	}
	if perSet > maxEntryBytes {
		t.Errorf("the registry holds %.0f bytes per SidecarSet, want at most %d", perSet, maxEntryBytes)
	}
}

// A selector of matchLabels alone matches as its compiled requirements do,
// and one that does not validate still reports its error.
func TestCompileSelector_MatchLabelsMatchAsCompiled(t *testing.T) {
	selectors := []*metav1.LabelSelector{
		matchLabels("app", "web"),
		matchLabels("app", "web", "tier", "front"),
		{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}},
	}
	podLabels := []map[string]string{
		nil, {}, {"app": "web"}, {"app": "db"}, {"app": "web", "tier": "front"}, {"app": "web", "tier": "back", "canary": "1"}, {"tier": "front"},
	}
	for _, sel := range selectors {
		got, err := compileSelector(sel)
		if err != nil {
			t.Fatalf("%v: %v", sel, err)
		}
		want, _ := metav1.LabelSelectorAsSelector(sel)
		for _, l := range podLabels {
			if got.Matches(labels.Set(l)) != want.Matches(labels.Set(l)) {
				t.Errorf("selector %v on %v: matched %v, compiled %v", sel, l, got.Matches(labels.Set(l)), want.Matches(labels.Set(l)))
			}
		}
		if got.String() != want.String() {
			t.Errorf("selector %v reads %q, compiled %q", sel, got.String(), want.String())
		}
	}
	if _, err := compileSelector(matchLabels("app", "not a valid value")); err == nil {
		t.Error("an invalid label value compiled")
	}
}
