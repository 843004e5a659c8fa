package controllers

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestStatusMergePatch_ReplacesTheWholeStatus(t *testing.T) {
	t.Parallel()
	stale := appsv1beta1.SidecarSetStatus{
		ObservedGeneration: 1, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3,
		LatestRevision: "web-1", CollisionCount: new(int32(1)),
		Conditions: []metav1.Condition{{Type: "Updated", Status: metav1.ConditionTrue, Reason: "RolloutComplete"}},
	}
	tests := []struct {
		name string
		next appsv1beta1.SidecarSetStatus
	}{
		{
			name: "counts that drop to zero are cleared, not left stale",
			next: appsv1beta1.SidecarSetStatus{
				ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 0, ReadyPods: 3, UpdatedReadyPods: 0,
				LatestRevision: "web-2", CollisionCount: new(int32(1)), Conditions: stale.Conditions,
			},
		},
		{
			name: "optional fields that become empty are removed",
			next: appsv1beta1.SidecarSetStatus{ObservedGeneration: 2},
		},
		{
			name: "every field changed",
			next: appsv1beta1.SidecarSetStatus{
				ObservedGeneration: 5, MatchedPods: 7, UpdatedPods: 6, ReadyPods: 5, UpdatedReadyPods: 4,
				LatestRevision: "web-3", CollisionCount: new(int32(2)),
				Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Paused"}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored, err := json.Marshal(map[string]any{"status": stale})
			if err != nil {
				t.Fatal(err)
			}
			patch, err := statusMergePatch(&tc.next)
			if err != nil {
				t.Fatalf("statusMergePatch: %v", err)
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
		})
	}
}
