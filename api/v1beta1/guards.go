package v1beta1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultFailureWindow is the failure window of a SidecarSet without the
// FailureWindowAnnotation.
const DefaultFailureWindow = 5 * time.Minute

// maxGuardSeconds bounds the guards' numbers: they fit an int32, as a
// Deployment's progressDeadlineSeconds.
const maxGuardSeconds = 1<<31 - 1

// RolloutGuards are a SidecarSet's rollout guards, read from its
// annotations by ParseRolloutGuards.
type RolloutGuards struct {
	// ProgressDeadline is the progress deadline; 0 when none is set.
	ProgressDeadline time.Duration
	// FailureBudget is how many upgraded pods may fail; nil when the budget
	// is not set (no pod failure ever pauses the rollout).
	FailureBudget *int32
	// FailureWindow is how long an upgraded pod's sidecars have to become
	// ready.
	FailureWindow time.Duration
	// MinReady is how long an upgraded pod's new sidecars must run ready
	// before the pod counts as available again: MinReadyAnnotation, or
	// DefaultMinReadyWithBudget with a failure budget, or 0.
	MinReady time.Duration
}

// DefaultMinReadyWithBudget is how long an upgraded sidecar must run ready
// when a SidecarSet has a failure budget and no MinReadyAnnotation: longer
// than a kubelet takes to report a sidecar that crashes at once (it shows
// it Running, and Ready, for about a second between its crashes), so that
// such a sidecar does not carry the rollout past the budget.
const DefaultMinReadyWithBudget = 10 * time.Second

// Window is the failure window: DefaultFailureWindow when none is set.
func (g RolloutGuards) Window() time.Duration {
	if g.FailureWindow <= 0 {
		return DefaultFailureWindow
	}
	return g.FailureWindow
}

// GuardError is a rollout-guard annotation whose value cannot be read.
type GuardError struct {
	// Key is the annotation.
	Key string
	// Value is its value.
	Value string
	// Detail says what is expected.
	Detail string
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("annotation %s: %q %s", e.Key, e.Value, e.Detail)
}

// ParseRolloutGuards reads the rollout guards of a SidecarSet's
// annotations. An annotation whose value cannot be read is reported, sorted
// by key, and its guard is off (the validating webhook refuses such values,
// so only objects stored without it carry them).
func ParseRolloutGuards(annotations map[string]string) (RolloutGuards, []*GuardError) {
	g := RolloutGuards{FailureWindow: DefaultFailureWindow}
	var errs []*GuardError
	read := func(key string, minimum int64, detail string) (int64, bool) {
		v, ok := annotations[key]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < minimum || n > maxGuardSeconds {
			errs = append(errs, &GuardError{Key: key, Value: v, Detail: detail})
			return 0, false
		}
		return n, true
	}
	if n, ok := read(ProgressDeadlineAnnotation, 1, "must be a whole number of seconds from 1 to 2147483647"); ok {
		g.ProgressDeadline = time.Duration(n) * time.Second
	}
	if n, ok := read(FailureBudgetAnnotation, 0, "must be a whole number of pods from 0 to 2147483647"); ok {
		g.FailureBudget = new(int32(n))
	}
	if n, ok := read(FailureWindowAnnotation, 1, "must be a whole number of seconds from 1 to 2147483647"); ok {
		g.FailureWindow = time.Duration(n) * time.Second
	}
	if n, ok := read(MinReadyAnnotation, 0, "must be a whole number of seconds from 0 to 2147483647"); ok {
		g.MinReady = time.Duration(n) * time.Second
	} else if _, set := annotations[MinReadyAnnotation]; !set && g.FailureBudget != nil {
		g.MinReady = DefaultMinReadyWithBudget
	}
	slices.SortFunc(errs, func(a, b *GuardError) int { return strings.Compare(a.Key, b.Key) })
	return g, errs
}
