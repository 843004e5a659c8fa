package controllers

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
)

// proxySet is the SidecarSet "proxy" (UID uid-now) of the history tests,
// with one container.
func proxySet(image string) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy", UID: "uid-now"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "proxy", Image: image}}},
		},
	}
}

// TestSyncHistory_LabelsTheLatestRevisionWithTheCustomVersion also checks
// that a revision left by an earlier SidecarSet of the same name (garbage
// collection not done yet) is adopted when reused.
func TestSyncHistory_LabelsTheLatestRevisionWithTheCustomVersion(t *testing.T) {
	t.Parallel()
	const ns = "kruise-system"
	sidecarSet := func(version string) *appsv1beta1.SidecarSet {
		s := proxySet("envoy:v1")
		if version != "" {
			s.Spec.CustomVersion = version
		}
		return s
	}
	// existingRevision is the revision of the current spec as an earlier
	// SidecarSet of the same name (owned by another UID) left it, with the
	// given custom version label.
	existingRevision := func(t *testing.T, version string) *appsv1.ControllerRevision {
		t.Helper()
		rev, err := revision.New(sidecarSet(version), ns, 1, new(int32))
		if err != nil {
			t.Fatal(err)
		}
		rev.OwnerReferences[0].UID = "uid-before"
		return rev
	}

	tests := []struct {
		name string
		// existing is the revision already stored, if any.
		existing *appsv1.ControllerRevision
		version  string
		want     string
	}{
		{name: "a new revision carries the custom version", version: "v1", want: "v1"},
		{name: "an identical revision left without the label is labelled when reused",
			existing: existingRevision(t, ""), version: "v1", want: "v1"},
		{name: "an identical revision left with another custom version is relabelled when reused",
			existing: existingRevision(t, "v0"), version: "v1", want: "v1"},
		{name: "without a custom version the revision has no label", existing: existingRevision(t, ""), want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scheme := runtime.NewScheme()
			utilruntime.Must(clientgoscheme.AddToScheme(scheme))
			utilruntime.Must(appsv1beta1.AddToScheme(scheme))
			b := fake.NewClientBuilder().WithScheme(scheme).
				WithIndex(&appsv1.ControllerRevision{}, fieldindex.RevisionBySidecarSet, fieldindex.RevisionSidecarSet)
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			c := b.Build()
			r := &SidecarSetReconciler{Client: c, Namespace: ns}
			s := sidecarSet(tc.version)

			existing, err := r.listRevisions(t.Context(), s)
			if err != nil {
				t.Fatalf("listRevisions: %v", err)
			}
			name, _, err := r.syncHistory(t.Context(), s, existing, func() sets.Set[string] { return nil })
			if err != nil {
				t.Fatalf("syncHistory: %v", err)
			}
			got := &appsv1.ControllerRevision{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
				t.Fatalf("getting the latest revision %s: %v", name, err)
			}
			if diff := cmp.Diff(tc.want, got.Labels[appsv1beta1.SidecarSetCustomVersionLabel]); diff != "" {
				t.Errorf("custom version label (-want +got):\n%s", diff)
			}
			if owner := metav1.GetControllerOf(got); owner == nil || owner.UID != s.UID {
				t.Errorf("the latest revision is owned by %+v, want the SidecarSet %s", owner, s.UID)
			}
		})
	}
}

// TestPlanHistory_KeepsTheOwnedRevisionOfThePinnedCustomVersion: the
// revision a customVersion pin resolves to is the newest one of this
// SidecarSet carrying the version, as the pod webhook resolves it; a newer
// one left by an earlier SidecarSet of the same name does not count, so
// truncation must keep ours.
func TestPlanHistory_KeepsTheOwnedRevisionOfThePinnedCustomVersion(t *testing.T) {
	t.Parallel()
	const ns = "kruise-system"
	spec := func(image string) *appsv1beta1.SidecarSet {
		s := proxySet(image)
		s.Spec.RevisionHistoryLimit = new(int32(1))
		return s
	}
	recorded := func(t *testing.T, image, version string, number int64, owner string) appsv1.ControllerRevision {
		t.Helper()
		s := spec(image)
		if version != "" {
			s.Spec.CustomVersion = version
		}
		rev, err := revision.New(s, ns, number, new(int32))
		if err != nil {
			t.Fatal(err)
		}
		rev.OwnerReferences[0].UID = types.UID(owner)
		return *rev
	}
	pinned := recorded(t, "envoy:v1", "v1", 2, "uid-now")
	latest := recorded(t, "envoy:v2", "", 3, "uid-now")
	foreign := recorded(t, "envoy:v0", "v1", 5, "uid-before")
	existing := []appsv1.ControllerRevision{pinned, latest, foreign}

	s := spec("envoy:v2")
	s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}
	plan, err := planHistory(s, ns, existing, func() sets.Set[string] { return activeRevisions(s, nil, existing) }, 0)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Latest.Name != latest.Name || plan.Create {
		t.Errorf("latest = %s (create %v), want the existing %s", plan.Latest.Name, plan.Create, latest.Name)
	}
	if len(plan.Delete) != 0 {
		t.Errorf("deletes %v, want to keep %s: the pinned customVersion resolves to it", plan.Delete, pinned.Name)
	}
}

// TestPlanHistory follows behavior.md 3.4: an identical latest revision is
// reused, an identical older one is renumbered as the newest (a rollback),
// otherwise a new one is created numbered max+1; the history is cut to
// max(1, revisionHistoryLimit), oldest first, never deleting the latest or
// an active revision; revisions of an earlier SidecarSet of the same name
// are left alone.
func TestPlanHistory(t *testing.T) {
	t.Parallel()
	const ns = "kruise-system"
	set := func(image string, limit int32) *appsv1beta1.SidecarSet {
		s := proxySet(image)
		s.Spec.RevisionHistoryLimit = &limit
		return s
	}
	// rev records the spec with an image as revision number n, owned by uid.
	rev := func(image string, n int64, uid types.UID) appsv1.ControllerRevision {
		r, err := revision.New(set(image, 10), ns, n, new(int32))
		if err != nil {
			t.Fatal(err)
		}
		r.OwnerReferences[0].UID = uid
		return *r
	}
	name := func(image string) string { r := rev(image, 1, "uid-now"); return r.Name }
	type want struct {
		latest   string
		create   bool
		renumber int64
		delete   []string
	}
	tests := []struct {
		name     string
		set      *appsv1beta1.SidecarSet
		existing []appsv1.ControllerRevision
		active   []string
		want     want
	}{
		{name: "the first revision is created as number 1", set: set("v1", 10),
			want: want{latest: name("v1"), create: true}},
		{name: "an identical latest revision is reused", set: set("v2", 10),
			existing: []appsv1.ControllerRevision{rev("v1", 1, "uid-now"), rev("v2", 2, "uid-now")},
			want:     want{latest: name("v2")}},
		{name: "a rollback renumbers the identical older revision as the newest", set: set("v1", 10),
			existing: []appsv1.ControllerRevision{rev("v1", 1, "uid-now"), rev("v2", 2, "uid-now")},
			want:     want{latest: name("v1"), renumber: 3}},
		{name: "a new spec beyond the limit deletes the oldest revisions", set: set("v4", 2),
			existing: []appsv1.ControllerRevision{rev("v2", 2, "uid-now"), rev("v1", 1, "uid-now"), rev("v3", 3, "uid-now")},
			want:     want{latest: name("v4"), create: true, delete: []string{name("v1"), name("v2")}}},
		{name: "a revision pods record survives truncation", set: set("v4", 2),
			existing: []appsv1.ControllerRevision{rev("v1", 1, "uid-now"), rev("v2", 2, "uid-now"), rev("v3", 3, "uid-now")},
			active:   []string{name("v1")},
			want:     want{latest: name("v4"), create: true, delete: []string{name("v2"), name("v3")}}},
		{name: "a limit below 1 keeps the latest", set: set("v2", 0),
			existing: []appsv1.ControllerRevision{rev("v1", 1, "uid-now"), rev("v2", 2, "uid-now")},
			want:     want{latest: name("v2"), delete: []string{name("v1")}}},
		{name: "an earlier SidecarSet's revisions neither number nor count", set: set("v2", 1),
			existing: []appsv1.ControllerRevision{rev("v0", 7, "uid-before"), rev("v1", 1, "uid-now")},
			want:     want{latest: name("v2"), create: true, delete: []string{name("v1")}}},
		{name: "a planted revision without controller neither numbers nor counts, and is left alone", set: set("v2", 1),
			existing: []appsv1.ControllerRevision{rev("planted", 999999, ""), rev("v1", 1, "uid-now")},
			want:     want{latest: name("v2"), create: true, delete: []string{name("v1")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reads := 0
			plan, err := planHistory(tc.set, ns, tc.existing, func() sets.Set[string] { reads++; return sets.New(tc.active...) }, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The pods are read once when the history is cut, never when
			// it is within its limit.
			if wantReads := min(1, len(tc.want.delete)); reads != wantReads {
				t.Errorf("the active revisions were asked for %d times, want %d", reads, wantReads)
			}
			got := want{latest: plan.Latest.Name, create: plan.Create, renumber: plan.Renumber, delete: plan.Delete}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if plan.Create {
				wantNumber := int64(1)
				for _, r := range tc.existing {
					if r.OwnerReferences[0].UID == tc.set.UID && r.Revision >= wantNumber {
						wantNumber = r.Revision + 1
					}
				}
				if plan.Latest.Revision != wantNumber {
					t.Errorf("created revision number %d, want %d", plan.Latest.Revision, wantNumber)
				}
			}
		})
	}
}

// TestPlanHistory_ClampsTheLimitToTheMaximum: a revisionHistoryLimit above
// the maximum (OpenKruise has none) keeps the maximum, 100 revisions, the
// latest among them (review N3).
func TestPlanHistory_ClampsTheLimitToTheMaximum(t *testing.T) {
	t.Parallel()
	const ns = "kruise-system"
	set := func(image string, limit int32) *appsv1beta1.SidecarSet {
		s := proxySet(image)
		s.Spec.RevisionHistoryLimit = &limit
		return s
	}
	var existing []appsv1.ControllerRevision
	for n := range int64(120) {
		r, err := revision.New(set(fmt.Sprintf("envoy:%d", n+1), 10), ns, n+1, new(int32))
		if err != nil {
			t.Fatal(err)
		}
		existing = append(existing, *r)
	}
	for _, limit := range []int32{101, 500, math.MaxInt32} {
		plan, err := planHistory(set("envoy:new", limit), ns, existing, func() sets.Set[string] { return nil }, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !plan.Create {
			t.Fatalf("limit %d: the plan reuses %s, want a new revision", limit, plan.Latest.Name)
		}
		var want []string
		for _, r := range existing[:21] { // 120 + the new one - 100
			want = append(want, r.Name)
		}
		if diff := cmp.Diff(want, plan.Delete); diff != "" {
			t.Errorf("limit %d: deletes (-want +got):\n%s", limit, diff)
		}
	}
}
