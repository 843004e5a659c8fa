package candidate

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func sidecarSet(name string, sel *metav1.LabelSelector, mutate ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   sel,
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "sidecar", Image: "busybox:1"}}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// upsert is the follower's write, for the tests.
func upsert(r *Registry, s *appsv1beta1.SidecarSet) error {
	_, _, err := r.upsert(s)
	return err
}

func names(entries []*Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.SidecarSet.Name)
	}
	return out
}

func TestRegistry_Candidates(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, s := range []*appsv1beta1.SidecarSet{
		sidecarSet("by-app", matchLabels("app", "nginx")),
		sidecarSet("by-two-labels", matchLabels("tier", "web", "app", "nginx")),
		sidecarSet("other-app", matchLabels("app", "redis")),
		sidecarSet("by-in", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"nginx", "redis"}}}}),
		sidecarSet("by-exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "sidecar", Operator: metav1.LabelSelectorOpExists}}}),
		sidecarSet("pinned-ns-1", matchLabels("app", "nginx"), func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("ns-1") }),
		sidecarSet("pinned-ns-2", matchLabels("app", "nginx"), func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("ns-2") }),
	} {
		if err := upsert(r, s); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		namespace string
		labels    map[string]string
		want      []string
	}{
		{"a pod sharing the app label finds the SidecarSets keyed on it, plus the scan bucket", "ns-1",
			map[string]string{"app": "nginx", "tier": "web"},
			[]string{"by-app", "by-exists", "by-in", "by-two-labels", "pinned-ns-1"}},
		{"a SidecarSet pinned to another namespace is not a candidate", "ns-3",
			map[string]string{"app": "nginx"},
			[]string{"by-app", "by-exists", "by-in", "by-two-labels"}},
		{"a pod without matching labels only sees the scan bucket", "ns-1",
			map[string]string{"app": "mysql"},
			[]string{"by-exists"}},
		{"an In value is a key of its own", "default",
			map[string]string{"app": "redis"},
			[]string{"by-exists", "by-in", "other-app"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, names(r.Candidates(tc.namespace, tc.labels))); diff != "" {
				t.Errorf("Candidates (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("All lists every SidecarSet once, by name", func(t *testing.T) {
		t.Parallel()
		want := []string{"by-app", "by-exists", "by-in", "by-two-labels", "other-app", "pinned-ns-1", "pinned-ns-2"}
		if diff := cmp.Diff(want, names(r.All())); diff != "" {
			t.Errorf("All (-want +got):\n%s", diff)
		}
	})
}

func TestRegistry_UpsertMovesAndRemoveRemoves(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := upsert(r, sidecarSet("s", matchLabels("app", "nginx"))); err != nil {
		t.Fatal(err)
	}
	if err := upsert(r, sidecarSet("s", matchLabels("app", "redis"))); err != nil {
		t.Fatal(err)
	}
	if got := names(r.Candidates("default", map[string]string{"app": "nginx"})); len(got) != 0 {
		t.Errorf("the old selector's bucket still has %v", got)
	}
	if got := names(r.Candidates("default", map[string]string{"app": "redis"})); !cmp.Equal(got, []string{"s"}) {
		t.Errorf("the new selector's bucket has %v", got)
	}
	r.remove("s")
	if r.Len() != 0 || len(r.buckets) != 0 {
		t.Errorf("after remove: %d entries, %d buckets", r.Len(), len(r.buckets))
	}
}

func TestRegistry_EntryIsDefaultedAndHashed(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	in := sidecarSet("s", matchLabels("app", "nginx"))
	if err := upsert(r, in); err != nil {
		t.Fatal(err)
	}
	e, ok := r.Get("s")
	if !ok {
		t.Fatal("entry missing")
	}
	if in.Spec.UpdateStrategy.Type != "" {
		t.Error("upsert defaulted the caller's object")
	}
	if e.SidecarSet.Spec.Containers[0].PodInjectPolicy != appsv1beta1.BeforeAppContainerType {
		t.Error("the entry is not defaulted")
	}
	if len(e.Hashes.Hash) != 64 || !e.Matches(map[string]string{"app": "nginx"}) || e.Matches(map[string]string{"app": "x"}) {
		t.Errorf("hash %q or selector wrong", e.Hashes.Hash)
	}
}

func TestRegistry_EntryCompilesResourcesPolicies(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	in := sidecarSet("s", matchLabels("app", "nginx"))
	in.Spec.Containers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
		TargetContainerMode: appsv1beta1.TargetContainerModeSum,
		ResourceExpr:        appsv1beta1.ResourceExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%"}},
	}
	if err := upsert(r, in); err != nil {
		t.Fatal(err)
	}
	e, _ := r.Get("s")
	sc := &e.SidecarSet.Spec.Containers[0]
	if p, ok := e.Resources[sc]; !ok || p == nil {
		t.Fatalf("the entry has no compiled resourcesPolicy for %s: %v", sc.Name, e.Resources)
	}
}

func BenchmarkCandidates(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("%d SidecarSets", n), func(b *testing.B) {
			r := NewRegistry()
			for i := range n {
				if err := upsert(r, sidecarSet(fmt.Sprintf("s-%d", i), matchLabels("app", fmt.Sprintf("app-%d", i)))); err != nil {
					b.Fatal(err)
				}
			}
			podLabels := map[string]string{"app": "app-0", "pod-template-hash": "abc"}
			b.ReportAllocs()
			for b.Loop() {
				if len(r.Candidates("default", podLabels)) != 1 {
					b.Fatal("want one candidate")
				}
			}
		})
	}
}

// The controller records a SidecarSet's hashes in its annotations: the
// entry holds those strings rather than copies, and its own computation
// where an annotation is stale.
func TestRegistry_EntrySharesTheRecordedHashes(t *testing.T) {
	t.Parallel()
	set := sidecarSet("s", matchLabels("app", "nginx"))
	appsv1beta1.SetDefaults(set)
	hashes, err := appsv1beta1.ComputeHashes(&set.Spec)
	if err != nil {
		t.Fatal(err)
	}
	set.Annotations = map[string]string{
		appsv1beta1.SidecarSetHashAnnotation:             strings.Clone(hashes.Hash),
		appsv1beta1.SidecarSetHashWithoutImageAnnotation: "stale",
	}
	r := NewRegistry()
	if err := upsert(r, set); err != nil {
		t.Fatal(err)
	}
	e, _ := r.Get("s")
	if e.Hashes != hashes {
		t.Fatalf("hashes %+v, want %+v", e.Hashes, hashes)
	}
	if unsafe.StringData(e.Hashes.Hash) != unsafe.StringData(set.Annotations[appsv1beta1.SidecarSetHashAnnotation]) {
		t.Error("the entry holds its own copy of the recorded hash")
	}
}

// SidecarSets without resourcesPolicies (most) hold no compiled policies.
func TestRegistry_NoPoliciesHoldNothing(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := upsert(r, sidecarSet("s", matchLabels("app", "nginx"))); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Get("s"); e.Resources != nil {
		t.Errorf("compiled policies %v for a SidecarSet without any", e.Resources)
	}
}

// A relist delivers every SidecarSet again: the upsert of a version
// already held keeps the entry as it is.
func TestRegistry_UpsertOfAVersionHeldKeepsTheEntry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	set := sidecarSet("s", matchLabels("app", "nginx"))
	set.UID, set.ResourceVersion = "u1", "7"
	if err := upsert(r, set); err != nil {
		t.Fatal(err)
	}
	first, _ := r.Get("s")
	if err := upsert(r, set.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Get("s"); again != first {
		t.Error("the same version was indexed again")
	}
	newer := set.DeepCopy()
	newer.ResourceVersion = "8"
	newer.Spec.Selector = matchLabels("app", "web")
	if err := upsert(r, newer); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Get("s"); e == first || !e.Matches(map[string]string{"app": "web"}) {
		t.Error("a new version did not replace the entry")
	}
	recreated := set.DeepCopy()
	recreated.UID = "u2"
	if err := upsert(r, recreated); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Get("s"); e.SidecarSet.UID != "u2" {
		t.Error("a SidecarSet recreated under the same name did not replace the entry")
	}
}
