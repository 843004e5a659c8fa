package cachetransform

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/heap"
)

// Two objects decoded apart share their equal strings once interned, and
// read the same as before: strings in fields, in slices, in maps (keys and
// values) and behind pointers; raw bytes read the same, quantities are
// left as they are.
func TestInterner_SharesStringsAndChangesNothingElse(t *testing.T) {
	t.Parallel()
	set := func() *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "mesh", Labels: map[string]string{"team": "platform"}},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "In", Values: []string{"web"}}}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "proxy", Image: "envoy:1.30",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}},
			},
			Status: appsv1beta1.SidecarSetStatus{Conditions: []metav1.Condition{{Type: "Settled", Message: "every pod is updated"}}},
		}
	}
	in := NewInterner()
	a, b := set(), set()
	want := set()
	for _, s := range []*appsv1beta1.SidecarSet{a, b} {
		if _, err := in.Transform(s); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Fatalf("interning changed the object (-want +got):\n%s", diff)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for what, pair := range map[string][2]string{
		"image":          {a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
		"label value":    {a.Labels["team"], b.Labels["team"]},
		"selector value": {a.Spec.Selector.MatchExpressions[0].Values[0], b.Spec.Selector.MatchExpressions[0].Values[0]},
		"message":        {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("the %s is not shared", what)
		}
	}
	rev := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
	if _, err := in.Transform(rev); err != nil || string(rev.Data.Raw) != `{"spec":{}}` {
		t.Errorf("the revision's data changed: %q, %v", rev.Data.Raw, err)
	}
}

// String maps of equal content are one shared map (a SidecarSet's
// annotations and its revision's, thousands of SidecarSets' labels); maps
// that differ are not.
func TestInterner_SharesEqualMaps(t *testing.T) {
	t.Parallel()
	in := NewInterner()
	annotations := func() map[string]string { return map[string]string{"kruise.io/sidecarset-hash": "abc"} }
	a := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "platform"}, Annotations: annotations()}}
	b := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "platform"}}}
	c := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "web"}}}
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Annotations: annotations()}}
	for _, obj := range []any{a, b, c, rev} {
		if _, err := in.Transform(obj); err != nil {
			t.Fatal(err)
		}
	}
	same := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a.Labels, b.Labels) {
		t.Error("equal labels are not shared")
	}
	if !same(a.Annotations, rev.Annotations) {
		t.Error("a SidecarSet's annotations and its revision's are not shared")
	}
	if same(a.Labels, c.Labels) || c.Labels["team"] != "web" {
		t.Errorf("different labels are shared: %v", c.Labels)
	}
}

// Revisions recording the same data (SidecarSets stamped from one
// template) share one copy of it; different data stays apart, unchanged.
func TestInterner_SharesEqualRevisionData(t *testing.T) {
	t.Parallel()
	in := NewInterner()
	rev := func(data string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(data)}}
	}
	a, b, c := rev(`{"spec":{"containers":[]}}`), rev(`{"spec":{"containers":[]}}`), rev(`{"spec":{"volumes":[]}}`)
	for _, r := range []*appsv1.ControllerRevision{a, b, c} {
		if _, err := in.Transform(r); err != nil {
			t.Fatal(err)
		}
	}
	if &a.Data.Raw[0] != &b.Data.Raw[0] {
		t.Error("equal data is not shared")
	}
	if &a.Data.Raw[0] == &c.Data.Raw[0] || string(c.Data.Raw) != `{"spec":{"volumes":[]}}` || string(a.Data.Raw) != `{"spec":{"containers":[]}}` {
		t.Errorf("different data shared or changed: %s, %s", a.Data.Raw, c.Data.Raw)
	}
}

// SidecarSets declaring the same sidecars (stamped from one template)
// share one list; an object's UID and resource version, its own, are not
// interned: they keep their own bytes, not a shared copy.
func TestInterner_SharesEqualSidecarsNotUIDs(t *testing.T) {
	t.Parallel()
	in := NewInterner()
	set := func(name, image string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "rv-" + name},
			Spec: appsv1beta1.SidecarSetSpec{Containers: []appsv1beta1.SidecarContainer{
				{Container: corev1.Container{Name: "log", Image: image}}}},
		}
	}
	a, b, c := set("a", "fluent:1"), set("b", "fluent:1"), set("c", "fluent:2")
	own := map[string][2]*byte{}
	for _, s := range []*appsv1beta1.SidecarSet{a, c} {
		own[s.Name] = [2]*byte{unsafe.StringData(string(s.UID)), unsafe.StringData(s.ResourceVersion)}
	}
	for _, s := range []*appsv1beta1.SidecarSet{a, b, c} {
		if _, err := in.Transform(s); err != nil {
			t.Fatal(err)
		}
	}
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Error("equal sidecars are not shared")
	}
	if &a.Spec.Containers[0] == &c.Spec.Containers[0] || c.Spec.Containers[0].Image != "fluent:2" {
		t.Errorf("different sidecars shared: %s", c.Spec.Containers[0].Image)
	}
	for _, s := range []*appsv1beta1.SidecarSet{a, c} {
		if got := [2]*byte{unsafe.StringData(string(s.UID)), unsafe.StringData(s.ResourceVersion)}; got != own[s.Name] {
			t.Errorf("%s's UID or resource version was replaced by a shared copy", s.Name)
		}
	}
	if a.UID != "uid-a" || a.ResourceVersion != "rv-a" {
		t.Errorf("UID %q, resource version %q changed", a.UID, a.ResourceVersion)
	}
}

// The interner keeps no table of strings: those no object holds any more
// are freed, whatever their number. Not parallel: it measures the live
// heap.
func TestInterner_KeepsNoStringNoObjectHolds(t *testing.T) {
	const n, size = 20000, 1 << 10
	in := NewInterner()
	before := heap.Live()
	for i := range n {
		s := &appsv1beta1.SidecarSet{Status: appsv1beta1.SidecarSetStatus{
			Conditions: []metav1.Condition{{Type: "Settled", Message: fmt.Sprintf("%0*d", size, i)}}}}
		if _, err := in.Transform(s); err != nil {
			t.Fatal(err)
		}
	}
	held := int64(heap.Live()) - int64(before)
	goruntime.KeepAlive(in)
	t.Logf("%d bytes held after %d distinct strings of %d bytes", held, n, size)
	if held > n*size/10 {
		t.Errorf("the interner holds %d bytes of %d strings of %d bytes that no object holds", held, n, size)
	}
}

// A string an object holds stays the shared copy across garbage
// collections: an object decoded after a collection points to the copy the
// earlier object holds, not to a new one (the history of one SidecarSet is
// decoded over many collection cycles, docs/revisions.md).
func TestInterner_SharesAcrossGarbageCollections(t *testing.T) {
	in := NewInterner()
	set := func() *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("team-", 42)}}
	}
	first := set()
	if _, err := in.Transform(first); err != nil {
		t.Fatal(err)
	}
	goruntime.GC()
	goruntime.GC()
	second := set()
	if _, err := in.Transform(second); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(first.Namespace) != unsafe.StringData(second.Namespace) {
		t.Error("a string held by a cached object was copied again after a garbage collection")
	}
	goruntime.KeepAlive(first)
}
