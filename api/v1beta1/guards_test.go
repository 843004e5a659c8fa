package v1beta1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseRolloutGuards_Values(t *testing.T) {
	t.Parallel()
	const seconds = "must be a whole number of seconds from 1 to 2147483647"
	tests := []struct {
		name        string
		annotations map[string]string
		want        RolloutGuards
		wantErrs    []*GuardError
	}{
		{name: "no annotation sets no guard, with the default window",
			want: RolloutGuards{FailureWindow: DefaultFailureWindow}},
		{name: "every guard is read",
			annotations: map[string]string{
				ProgressDeadlineAnnotation: "600", FailureBudgetAnnotation: "3", FailureWindowAnnotation: "120",
			},
			want: RolloutGuards{ProgressDeadline: 10 * time.Minute, FailureBudget: new(int32(3)), FailureWindow: 2 * time.Minute,
				MinReady: DefaultMinReadyWithBudget}},
		{name: "a budget of 0 pauses at the first failure, and upgraded sidecars must run ready for the default time",
			annotations: map[string]string{FailureBudgetAnnotation: "0"},
			want:        RolloutGuards{FailureBudget: new(int32(0)), FailureWindow: DefaultFailureWindow, MinReady: DefaultMinReadyWithBudget}},
		{name: "the time upgraded sidecars must run ready is read, with a budget or without",
			annotations: map[string]string{MinReadyAnnotation: "30"},
			want:        RolloutGuards{FailureWindow: DefaultFailureWindow, MinReady: 30 * time.Second}},
		{name: "a budget with a min-ready of 0 counts a sidecar as soon as it is ready",
			annotations: map[string]string{FailureBudgetAnnotation: "2", MinReadyAnnotation: "0"},
			want:        RolloutGuards{FailureBudget: new(int32(2)), FailureWindow: DefaultFailureWindow}},
		{name: "values that are not whole numbers in range are reported, sorted by key, and their guards are off",
			annotations: map[string]string{
				ProgressDeadlineAnnotation: "10m", FailureBudgetAnnotation: "-1", FailureWindowAnnotation: "0", MinReadyAnnotation: "1s",
			},
			want: RolloutGuards{FailureWindow: DefaultFailureWindow},
			wantErrs: []*GuardError{
				{Key: FailureBudgetAnnotation, Value: "-1", Detail: "must be a whole number of pods from 0 to 2147483647"},
				{Key: FailureWindowAnnotation, Value: "0", Detail: seconds},
				{Key: MinReadyAnnotation, Value: "1s", Detail: "must be a whole number of seconds from 0 to 2147483647"},
				{Key: ProgressDeadlineAnnotation, Value: "10m", Detail: seconds},
			}},
		{name: "a deadline beyond an int32 of seconds is reported",
			annotations: map[string]string{ProgressDeadlineAnnotation: "2147483648"},
			want:        RolloutGuards{FailureWindow: DefaultFailureWindow},
			wantErrs:    []*GuardError{{Key: ProgressDeadlineAnnotation, Value: "2147483648", Detail: seconds}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, errs := ParseRolloutGuards(tc.annotations)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("guards (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuardError_Message(t *testing.T) {
	t.Parallel()
	e := &GuardError{Key: FailureBudgetAnnotation, Value: "three", Detail: "must be a whole number of pods from 0 to 2147483647"}
	want := `annotation sidecarset-operator.dev/failure-budget: "three" must be a whole number of pods from 0 to 2147483647`
	if got := e.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
