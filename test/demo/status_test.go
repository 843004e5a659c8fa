package demo

import (
	"testing"
)

func TestCountsNearTop_Layouts(t *testing.T) {
	t.Parallel()
	// condition is a six-line condition as kubectl prints it.
	condition := func(typ, status string) string {
		return "  - lastTransitionTime: \"2026-11-22T05:31:27Z\"\n    message: all pods run the latest sidecars\n" +
			"    observedGeneration: 1\n    reason: RolloutComplete\n    status: \"" + status + "\"\n    type: " + typ + "\n"
	}
	const counts = "  latestRevision: test-sidecarset-cf4bf7796\n  matchedPods: 1\n  observedGeneration: 1\n" +
		"  readyPods: 1\n  updatedPods: 1\n  updatedReadyPods: 1\n"
	compact := "kind: SidecarSet\nspec:\n  updateStrategy:\n    type: RollingUpdate\nstatus:\n  collisionCount: 0\n  conditions:\n" +
		condition("Updated", "True") + counts
	// Two conditions push updatedPods to the 19th line.
	twoConditions := "status:\n  collisionCount: 0\n  conditions:\n" +
		condition("Updated", "True") + condition("Progressing", "False") + counts
	tests := []struct {
		name    string
		yaml    string
		wantErr bool
	}{
		{"the collision count and one condition keep the counts within 13 lines", compact, false},
		{"two conditions push them further", twoConditions, true},
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
