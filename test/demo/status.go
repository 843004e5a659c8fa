package demo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The manual reads a SidecarSet's status with
// `kubectl get sidecarset test-sidecarset -o yaml | grep -A4 status` and
// shows matchedPods, observedGeneration, readyPods and updatedPods. kubectl
// prints the status fields in alphabetical order, so what comes before the
// counts (collisionCount, conditions, latestRevision) decides how far down
// they are. The operator keeps them within the first StatusHeadLines lines
// after `status:` while nothing is rolling out: collisionCount (always
// written, as OpenKruise does), one condition (six lines), latestRevision,
// then the counts.

// StatusHeadLines is how many lines after `status:` the four counts must
// be within.
const StatusHeadLines = 13

// StatusHead returns the first n lines after the top-level `status:` line
// of an object printed by kubectl get -o yaml.
func StatusHead(yaml string, n int) ([]string, error) {
	lines := strings.Split(yaml, "\n")
	i := slices.Index(lines, "status:")
	if i < 0 {
		return nil, errors.New("no top-level status: line")
	}
	rest := lines[i+1:]
	return rest[:min(n, len(rest))], nil
}

// countsNearTop checks that the four counts of the manual, with the values
// of want (matchedPods, observedGeneration, readyPods, updatedPods), are
// within the first StatusHeadLines lines of the status.
func countsNearTop(yaml string, want [4]int64) error {
	head, err := StatusHead(yaml, StatusHeadLines)
	if err != nil {
		return err
	}
	fields := []string{"matchedPods", "observedGeneration", "readyPods", "updatedPods"}
	for i, f := range fields {
		line := fmt.Sprintf("  %s: %d", f, want[i])
		if !slices.Contains(head, line) {
			return fmt.Errorf("%q is not within the first %d lines of the status:\n%s", strings.TrimSpace(line),
				StatusHeadLines, strings.Join(head, "\n"))
		}
	}
	return nil
}
