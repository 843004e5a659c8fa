package framework

import (
	"context"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warnings collects the admission warnings the API server returns for the
// requests made with one context (see WithWarnings).
type Warnings struct {
	mu   sync.Mutex
	list []string
}

// List returns the warnings collected so far, in arrival order.
func (w *Warnings) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

type warningsKey struct{}

// WithWarnings returns a context whose requests, made with a client from
// NewWarningClient, record their warnings in the returned collector.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// warningRouter hands each warning to the collector of its request's
// context; warnings of requests without one are dropped.
type warningRouter struct{}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (warningRouter) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	if w, ok := ctx.Value(warningsKey{}).(*Warnings); ok {
		w.mu.Lock()
		w.list = append(w.list, text)
		w.mu.Unlock()
	}
}

// NewWarningClient returns an admin client whose requests record the API
// server's warnings in the collector of their context (WithWarnings).
func (e *Env) NewWarningClient() (client.Client, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = warningRouter{}
	return client.New(cfg, client.Options{Scheme: Scheme})
}

// NewUserClient returns a client that impersonates a user of the given
// groups (system:authenticated is added), with the admin's credentials; its
// requests record their warnings like NewWarningClient's.
func (e *Env) NewUserClient(user string, groups ...string) (client.Client, error) {
	cfg := e.userConfig(user, groups...)
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = warningRouter{}
	return client.New(cfg, client.Options{Scheme: Scheme})
}

// userConfig is the admin's configuration impersonating a user of the
// given groups (system:authenticated is added).
func (e *Env) userConfig(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(slices.Clone(groups), "system:authenticated")}
	return cfg
}
