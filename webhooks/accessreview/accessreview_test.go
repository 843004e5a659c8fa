package accessreview

import (
	"context"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

// The SubjectAccessReview authorizer, with its cache of answers, is
// dropped a minute after it was made, even when nothing asks it again (the
// library's cache keeps expired answers until newer ones push them out),
// and made afresh at the next check.
func TestRenewedAuthorizer_DroppedAfterAMinute(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	made := 0
	var scheduled []func()
	r := &renewedAuthorizer{every: time.Minute, now: func() time.Time { return now },
		renew: func() (authorizer.Authorizer, error) {
			made++
			if made%2 == 1 {
				return authorizerfactory.NewAlwaysAllowAuthorizer(), nil
			}
			return authorizerfactory.NewAlwaysDenyAuthorizer(), nil
		},
		afterFunc: func(d time.Duration, f func()) {
			if d != time.Minute {
				t.Errorf("drop scheduled after %v, want a minute", d)
			}
			scheduled = append(scheduled, f)
		}}
	attrs := authorizer.AttributesRecord{Verb: "create", Resource: "pods"}
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 1 || len(scheduled) != 1 {
		t.Fatalf("first check: decision %v, %d made, %d drops scheduled; want allow, 1, 1", d, made, len(scheduled))
	}
	now = now.Add(30 * time.Second)
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 1 {
		t.Fatalf("within the minute: decision %v, %d made; want the same authorizer", d, made)
	}
	// A minute on, nothing asked: the drop lets it go.
	now = now.Add(30 * time.Second)
	scheduled[0]()
	r.mu.Lock()
	held := r.current
	r.mu.Unlock()
	if held != nil {
		t.Fatal("a minute after it was made and with no check since, the authorizer (and its cache) is still held")
	}
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionNoOpinion || made != 2 || len(scheduled) != 2 {
		t.Fatalf("after the drop: decision %v, %d made, %d drops scheduled; want a fresh authorizer's answer, 2, 2", d, made, len(scheduled))
	}
	// A drop scheduled for an older authorizer leaves a younger one.
	scheduled[0]()
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionNoOpinion || made != 2 {
		t.Fatalf("an old drop let the fresh authorizer go (decision %v, %d made)", d, made)
	}
	// Asked past its minute before the drop ran: made afresh at once.
	now = now.Add(time.Minute)
	if d, _, _ := r.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow || made != 3 {
		t.Fatalf("past the minute: decision %v, %d made; want a fresh authorizer", d, made)
	}
}
