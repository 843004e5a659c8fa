package controllers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestStatusPatch_WritesTheNewStatus(t *testing.T) {
	t.Parallel()
	stale := appsv1beta1.SidecarSetStatus{
		ObservedGeneration: 1, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3,
		LatestRevision: "web-1", CollisionCount: new(int32(1)),
		Conditions: []metav1.Condition{{Type: "Updated", Status: metav1.ConditionTrue, Reason: "RolloutComplete"}},
	}
	tests := []struct {
		name string
		// stored is the status as the API server holds it, as JSON: a
		// status never written is absent, not zeros.
		stored map[string]any
		// decoded is stored as the reconciler reads it.
		decoded appsv1beta1.SidecarSetStatus
		next    appsv1beta1.SidecarSetStatus
		// wantFields are the status fields the stored object must hold
		// after the patch, zeros included.
		wantFields map[string]any
	}{
		{
			name:   "counts that drop to zero are cleared, not left stale",
			stored: statusJSON(t, stale), decoded: stale,
			next: appsv1beta1.SidecarSetStatus{
				ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 0, ReadyPods: 3, UpdatedReadyPods: 0,
				LatestRevision: "web-2", CollisionCount: new(int32(1)), Conditions: stale.Conditions,
			},
			wantFields: map[string]any{"updatedPods": 0.0, "collisionCount": 1.0},
		},
		{
			name:   "optional fields that become empty are removed",
			stored: statusJSON(t, stale), decoded: stale,
			next: appsv1beta1.SidecarSetStatus{ObservedGeneration: 2},
		},
		{
			name:   "every field changed",
			stored: statusJSON(t, stale), decoded: stale,
			next: appsv1beta1.SidecarSetStatus{
				ObservedGeneration: 5, MatchedPods: 7, UpdatedPods: 6, ReadyPods: 5, UpdatedReadyPods: 4,
				LatestRevision: "web-3", CollisionCount: new(int32(2)),
				Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Paused"}},
			},
		},
		{
			name:   "a first status of a SidecarSet with no pods writes the required zero counts and collisionCount 0",
			stored: map[string]any{},
			next:   appsv1beta1.SidecarSetStatus{ObservedGeneration: 1, LatestRevision: "web-1", CollisionCount: new(int32(0))},
			wantFields: map[string]any{
				"matchedPods": 0.0, "updatedPods": 0.0, "readyPods": 0.0, "collisionCount": 0.0,
			},
		},
		{
			name:   "a first status that only records a collision carries the required counts",
			stored: map[string]any{},
			next:   appsv1beta1.SidecarSetStatus{CollisionCount: new(int32(1))},
			wantFields: map[string]any{
				"matchedPods": 0.0, "updatedPods": 0.0, "readyPods": 0.0, "collisionCount": 1.0,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := &appsv1beta1.SidecarSet{Status: tc.decoded}
			obj.Name = "web"
			updated := obj.DeepCopy()
			updated.Status = tc.next
			patch, err := statusPatch(obj).Data(updated)
			if err != nil {
				t.Fatalf("statusPatch: %v", err)
			}
			stored, err := json.Marshal(map[string]any{"status": tc.stored})
			if err != nil {
				t.Fatal(err)
			}
			merged, err := jsonpatch.MergePatch(stored, patch)
			if err != nil {
				t.Fatalf("applying the patch: %v", err)
			}
			var got struct {
				Status appsv1beta1.SidecarSetStatus `json:"status"`
			}
			if err := json.Unmarshal(merged, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.next, got.Status); diff != "" {
				t.Errorf("status after the patch (-want +got):\n%s", diff)
			}
			var raw struct {
				Status map[string]any `json:"status"`
			}
			if err := json.Unmarshal(merged, &raw); err != nil {
				t.Fatal(err)
			}
			for f, want := range tc.wantFields {
				if got, ok := raw.Status[f]; !ok || got != want {
					t.Errorf("status.%s after the patch = %v (present %t), want %v; patch %s", f, got, ok, want, patch)
				}
			}
		})
	}
}

func TestStatusPatch_SendsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	obj := &appsv1beta1.SidecarSet{Status: appsv1beta1.SidecarSetStatus{
		ObservedGeneration: 1, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3,
		LatestRevision: "web-1", CollisionCount: new(int32(0)),
	}}
	updated := obj.DeepCopy()
	updated.Status.ObservedGeneration = 2
	patch, err := statusPatch(obj).Data(updated)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": map[string]any{
		"observedGeneration": 2.0, "matchedPods": 3.0, "updatedPods": 3.0, "readyPods": 3.0,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}

func statusJSON(t *testing.T, st appsv1beta1.SidecarSetStatus) map[string]any {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The status of a SidecarSet waits at most statusRefreshInterval after its
// last write, and nothing before its first.
func TestMemories_StatusRefreshIn(t *testing.T) {
	t.Parallel()
	var m memories
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if got := m.statusRefreshIn("web", t0); got != 0 {
		t.Errorf("never written: %v, want 0", got)
	}
	m.statusWritten("web", t0)
	for _, tc := range []struct {
		at   time.Time
		want time.Duration
	}{{t0, statusRefreshInterval}, {t0.Add(300 * time.Millisecond), statusRefreshInterval - 300*time.Millisecond}, {t0.Add(statusRefreshInterval), 0}, {t0.Add(time.Hour), 0}} {
		if got := m.statusRefreshIn("web", tc.at); got != tc.want {
			t.Errorf("at %v: %v, want %v", tc.at.Sub(t0), got, tc.want)
		}
	}
	m.forget("web")
	if got := m.statusRefreshIn("web", t0); got != 0 {
		t.Errorf("forgotten: %v, want 0", got)
	}
}
