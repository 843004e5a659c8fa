package candidate

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// change is what the listener was told, and what the registry held for
// the SidecarSet when it was.
type change struct {
	old, current string // the entries' selectors; "" for none
	held         string // the selector the registry held then
}

func selectorOf(e *Entry) string {
	if e == nil {
		return ""
	}
	return e.Selector.String()
}

// The follower is the registry's writer: it fills the registry from the
// informer, tells the listener of each change once the registry holds it,
// and is the only one.
func TestFollower(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lw := fcache.NewFakeControllerSource()
	first := sidecarSet("s", matchLabels("app", "nginx"))
	lw.Add(first)
	informer := toolscache.NewSharedInformer(lw, &appsv1beta1.SidecarSet{}, 0)

	r := NewRegistry()
	var mu sync.Mutex
	var changes []change
	r.OnChange(func(old, current *Entry) {
		held := ""
		if e, ok := r.Get("s"); ok {
			held = selectorOf(e)
		}
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, change{selectorOf(old), selectorOf(current), held})
	})
	f := &Follower{Registry: r, Informer: func(context.Context) (Informer, error) { return informer, nil }}
	errs := make(chan error, 2)
	go func() { errs <- f.Start(ctx) }()
	if r.HasSynced() {
		t.Fatal("synced before the informer ran")
	}
	go informer.Run(ctx.Done())
	waitFor(t, r.HasSynced)
	if e, ok := r.Get("s"); !ok || selectorOf(e) != "app=nginx" {
		t.Fatalf("after the first list the registry holds %v, %v", e, ok)
	}

	second := &Follower{Registry: r, Informer: f.Informer}
	if err := second.Start(ctx); err == nil {
		t.Error("a second follower of the registry started")
	}

	moved := first.DeepCopy()
	moved.Spec.Selector = matchLabels("app", "web")
	lw.Modify(moved)
	lw.Delete(moved)
	waitFor(t, func() bool { return r.Len() == 0 })
	mu.Lock()
	defer mu.Unlock()
	want := []change{
		{"", "app=nginx", "app=nginx"},
		{"app=nginx", "app=web", "app=web"},
		{"app=web", "", ""},
	}
	if len(changes) != len(want) {
		t.Fatalf("the listener was told %+v, want %+v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, changes[i], want[i])
		}
	}
	cancel()
	if err := <-errs; err != nil {
		t.Errorf("the follower ended with %v", err)
	}
}

// A fixed registry has synced, and holds its list.
func TestNew(t *testing.T) {
	t.Parallel()
	r, err := New(sidecarSet("a", matchLabels("app", "a")), sidecarSet("b", matchLabels("app", "b")))
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasSynced() || r.Len() != 2 {
		t.Errorf("synced %v, %d SidecarSets", r.HasSynced(), r.Len())
	}
	if err := (&Follower{Registry: r}).Start(t.Context()); err == nil {
		t.Error("a follower of a fixed registry started")
	}
}

func waitFor(t *testing.T, done func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return done(), nil })
	if err != nil {
		t.Fatal(err)
	}
}
