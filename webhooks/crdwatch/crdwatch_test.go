package crdwatch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// fakeWatches is a ListWatch whose watches the test ends as the API server
// would.
type fakeWatches struct{ opened chan *watch.FakeWatcher }

func (f *fakeWatches) listWatch() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFake()
			f.opened <- w
			return w, nil
		},
		DisableChunking: true,
	}
}

func openWatch(t *testing.T, lw toolscache.ListerWatcher, f *fakeWatches) (watch.Interface, *watch.FakeWatcher) {
	t.Helper()
	w, err := lw.(toolscache.ListerWatcherWithContext).WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, <-f.opened
}

func waitLive(t *testing.T, s *SidecarSetWatches, now time.Time, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live, _ := s.Live(now)
		if live == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Live = %v, want %v", live, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSidecarSetWatches_LiveOnceTheWatchOfTheOldStorageIsReplaced(t *testing.T) {
	s := NewSidecarSetWatches()
	f := &fakeWatches{opened: make(chan *watch.FakeWatcher, 1)}
	lw := s.Wrap(f.listWatch())
	if got := lw.(*toolscache.ListWatch).DisableChunking; !got {
		t.Fatal("the wrapped ListWatch lost its list options")
	}
	now := time.Now()
	if live, _ := s.Live(now); !live {
		t.Fatal("live before any write of the CRD")
	}

	old, oldFake := openWatch(t, lw, f)
	go oldFake.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "passed-on"}})
	if ev := <-old.ResultChan(); ev.Object.(*corev1.Pod).Name != "passed-on" {
		t.Fatalf("event not passed on: %v", ev)
	}

	s.StorageReplaced(now)
	waitLive(t, s, now, false)
	// The API server ends the watch of the old storage; until the informer
	// opens another, the view is not live.
	oldFake.Stop()
	if _, ok := <-old.ResultChan(); ok {
		t.Fatal("the stream did not end with the watch")
	}
	waitLive(t, s, now, false)
	fresh, freshFake := openWatch(t, lw, f)
	waitLive(t, s, now, true)

	// The informer stops the fresh watch (it is stopping): it ends too.
	fresh.Stop()
	if !freshFake.IsStopped() {
		t.Fatal("Stop not passed on")
	}
	waitLive(t, s, now, false)

	if live, waited := s.Live(now.Add(storageReplaceTimeout)); !live || waited != storageReplaceTimeout {
		t.Fatalf("after the timeout: live %v, waited %s", live, waited)
	}
}

func TestSidecarSetWatches_WatchOpenedAfterTheWriteIsLive(t *testing.T) {
	s := NewSidecarSetWatches()
	f := &fakeWatches{opened: make(chan *watch.FakeWatcher, 1)}
	lw := s.Wrap(f.listWatch())
	now := time.Now()
	s.StorageReplaced(now)
	waitLive(t, s, now, false)
	openWatch(t, lw, f)
	waitLive(t, s, now, true)
}

func TestSidecarSetWatches_StopWhileAnEventWaits(t *testing.T) {
	s := NewSidecarSetWatches()
	f := &fakeWatches{opened: make(chan *watch.FakeWatcher, 1)}
	w, fake := openWatch(t, s.Wrap(f.listWatch()), f)
	sent := make(chan struct{})
	go func() {
		fake.Add(&corev1.Pod{})
		close(sent)
	}()
	<-sent // the forwarder holds the event: nobody reads it
	w.Stop()
	for range w.ResultChan() {
		// drains until the forwarder closes the stream
	}
	s.StorageReplaced(time.Now())
	waitLive(t, s, time.Now(), false)
}

func TestSidecarSetWatches_OtherListerWatchersAreNotFollowed(t *testing.T) {
	s := NewSidecarSetWatches()
	var lw toolscache.ListerWatcher = struct{ toolscache.ListerWatcher }{}
	if got := s.Wrap(lw); got != lw {
		t.Fatal("wrapped")
	}
	s.StorageReplaced(time.Now())
	if live, _ := s.Live(time.Now()); !live {
		t.Fatal("waits on watches it cannot see")
	}
}
