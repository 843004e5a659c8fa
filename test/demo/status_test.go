package demo

import (
	"testing"
)

func TestCountsNearTop_Layouts(t *testing.T) {
	t.Parallel()
	const compact = `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  updateStrategy:
    type: RollingUpdate
status:
  conditions:
  - lastTransitionTime: "2026-11-22T05:31:27Z"
    message: the matched pod runs the latest sidecars
    observedGeneration: 1
    reason: RolloutComplete
    status: "True"
    type: Updated
  latestRevision: test-sidecarset-cf4bf7796
  matchedPods: 1
  observedGeneration: 1
  readyPods: 1
  updatedPods: 1
  updatedReadyPods: 1
`
	// Two six-line conditions and collisionCount push updatedPods to the
	// 19th line.
	const twoConditions = `status:
  collisionCount: 0
  conditions:
  - lastTransitionTime: "2026-11-22T05:31:27Z"
    message: the matched pod runs the latest sidecars
    observedGeneration: 1
    reason: RolloutComplete
    status: "True"
    type: Updated
  - lastTransitionTime: "2026-11-22T05:31:27Z"
    message: the pod that can be upgraded in place runs the latest sidecars
    observedGeneration: 1
    reason: RolloutComplete
    status: "False"
    type: Progressing
  latestRevision: test-sidecarset-cf4bf7796
  matchedPods: 1
  observedGeneration: 1
  readyPods: 1
  updatedPods: 1
`
	tests := []struct {
		name    string
		yaml    string
		wantErr bool
	}{
		{"one condition and no collision count keep the counts within 12 lines", compact, false},
		{"two conditions and a collision count push them further", twoConditions, true},
		{"an object without status fails", "kind: SidecarSet\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := countsNearTop(tc.yaml, [4]int64{1, 1, 1, 1})
			if (err != nil) != tc.wantErr {
				t.Errorf("countsNearTop error = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
