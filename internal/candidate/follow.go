package candidate

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Informer is the SidecarSet informer a Follower follows: the manager
// cache's informers are ones, and so are client-go's shared informers.
type Informer interface {
	AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// following is a follower's progress: whether the registry holds every
// SidecarSet of the informer's first list.
type following struct {
	synced func() bool
}

// Follower is a registry's one writer in the manager: a runnable on every
// replica (each serves the pod webhook), whose handler on the SidecarSet
// informer adds, replaces and removes the registry's entries and then tells
// the registry's listener (OnChange). A registry takes one follower: a
// second one fails to start.
type Follower struct {
	// Registry is the registry it writes.
	Registry *Registry
	// Informer gets the SidecarSet informer when the follower starts (the
	// manager's cache, without waiting for it to sync: the conversion
	// webhook the first list may need is served by then).
	Informer func(context.Context) (Informer, error)
}

// NeedLeaderElection is false: every replica's pod webhook reads the
// registry.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start adds the follower's handler to the informer, then waits for ctx to
// end.
func (f *Follower) Start(ctx context.Context) error {
	if !f.Registry.follow.CompareAndSwap(nil, &following{synced: func() bool { return false }}) {
		return errors.New("the SidecarSet registry has a writer already")
	}
	informer, err := f.Informer(ctx)
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx).WithName("sidecarset-registry")
	r := f.Registry
	upsert := func(obj any) {
		s, ok := obj.(*appsv1beta1.SidecarSet)
		if !ok {
			return
		}
		old, current, err := r.upsert(s)
		if err != nil {
			log.Error(err, "Indexing a SidecarSet", "sidecarSet", s.Name)
			return
		}
		if old != current {
			r.changed(old, current)
		}
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if s, ok := obj.(*appsv1beta1.SidecarSet); ok {
				if old := r.remove(s.Name); old != nil {
					r.changed(old, nil)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	r.follow.Store(&following{synced: reg.HasSynced})
	<-ctx.Done()
	return nil
}

// HasSynced reports whether the registry holds every SidecarSet its
// follower's informer listed first (a fixed registry always has).
func (r *Registry) HasSynced() bool {
	f := r.follow.Load()
	return f != nil && f.synced()
}

// OnChange sets the registry's listener: the function its follower calls
// after each change it made, with the SidecarSet's entry before and after
// (nil when there is none). It is called on the informer's handler, in the
// order of the changes: it must not block.
func (r *Registry) OnChange(f func(old, current *Entry)) {
	r.onChange.Store(&f)
}

func (r *Registry) changed(old, current *Entry) {
	if f := r.onChange.Load(); f != nil {
		(*f)(old, current)
	}
}
