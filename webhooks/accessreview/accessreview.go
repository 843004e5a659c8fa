// Package accessreview answers the webhooks' permission checks by asking
// the API server (SubjectAccessReviews), with a short-lived cache of its
// answers.
package accessreview

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// NewAuthorizer returns an authorizer that asks the API server, with
// SubjectAccessReviews, what a user may do. Answers are cached briefly
// (allowed for 10s, denied for 2s).
//
// The library's cache keeps an expired answer until 8 192 newer ones push
// it out, about 1 KiB each, and the checks name each SidecarSet: after
// thousands of SidecarSet writes it would hold megabytes of answers no
// check can use. So the authorizer is dropped, with its cache, a minute
// after it was made, whether or not it is asked again (a burst of writes
// followed by none leaves nothing behind), and a fresh one is made at the
// next check.
func NewAuthorizer(c authorizationv1client.AuthorizationV1Interface) (authorizer.Authorizer, error) {
	newAuthorizer := func() (authorizer.Authorizer, error) {
		return authorizerfactory.DelegatingAuthorizerConfig{
			SubjectAccessReviewClient: c,
			AllowCacheTTL:             10 * time.Second,
			DenyCacheTTL:              2 * time.Second,
			WebhookRetryBackoff:       &wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 3},
		}.New()
	}
	// A configuration the library refuses is an error at start.
	if _, err := newAuthorizer(); err != nil {
		return nil, err
	}
	return &renewedAuthorizer{renew: newAuthorizer, every: time.Minute}, nil
}

// renewedAuthorizer holds an authorizer, and with it its cache of answers,
// for every at the most.
type renewedAuthorizer struct {
	mu      sync.Mutex
	current authorizer.Authorizer // nil: none held
	made    time.Time
	renew   func() (authorizer.Authorizer, error)
	every   time.Duration
	now     func() time.Time
	// afterFunc schedules the drop (time.AfterFunc; tests replace it).
	afterFunc func(time.Duration, func())
}

func (r *renewedAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	current, err := r.get()
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	return current.Authorize(ctx, a)
}

func (r *renewedAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	current, err := r.get()
	if err != nil {
		return authorizer.ConditionsAwareDecisionFromParts(authorizer.DecisionNoOpinion, "", err)
	}
	return current.ConditionsAwareAuthorize(ctx, a)
}

func (r *renewedAuthorizer) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	current, err := r.get()
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	return current.EvaluateConditions(ctx, d, data)
}

func (r *renewedAuthorizer) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// get returns the authorizer held, making one if none is, or if the one
// held is every old (its drop not run yet).
func (r *renewedAuthorizer) get() (authorizer.Authorizer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	if r.current != nil && now.Sub(r.made) < r.every {
		return r.current, nil
	}
	fresh, err := r.renew()
	if err != nil {
		return nil, err
	}
	r.current, r.made = fresh, now
	schedule := r.afterFunc
	if schedule == nil {
		schedule = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	schedule(r.every, r.drop)
	return r.current, nil
}

// drop lets the authorizer held go once it is every old.
func (r *renewedAuthorizer) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil && r.clock().Sub(r.made) >= r.every {
		r.current = nil
	}
}
