package detect

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
)

// readerCache is a cache whose reads are the reader's; only reads are
// used.
type readerCache struct {
	cache.Cache
	Reader client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// queued records what is added to a queue.
type queued[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	mu    sync.Mutex
	items []T
}

func (q *queued[T]) Add(it T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, it)
}

func (q *queued[T]) AddAfter(it T, _ time.Duration) { q.Add(it) }

// take returns what was added since the last take.
func (q *queued[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// The detector's reconciles, on a fake cache and a registry followed from
// a fake informer: a pod without its sidecars is reported once the
// detector has looked at every pod, and forgotten when deleted; a
// SidecarSet's selector change rescans its pods, old and new.
func TestDetector_Reconcile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	set := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", UID: "u1", Generation: 1, CreationTimestamp: created},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1"}}},
		},
	}
	pod := func(name, app string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": app},
				CreationTimestamp: metav1.NewTime(created.Add(time.Hour))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
	}
	web, api := pod("web-1", "web"), pod("api-1", "api")
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	pods := fake.NewClientBuilder().WithScheme(scheme).WithObjects(web, api).Build()

	lw := fcache.NewFakeControllerSource()
	lw.Add(set)
	informer := toolscache.NewSharedInformer(lw, &appsv1beta1.SidecarSet{}, 0)
	registry := candidate.NewRegistry()
	go func() {
		_ = (&candidate.Follower{Registry: registry, Informer: func(context.Context) (candidate.Informer, error) { return informer, nil }}).Start(ctx)
	}()
	go informer.Run(ctx.Done())

	d := New(readerCache{Reader: pods}, registry, "operator-system")
	rescans := &queued[item]{}
	if err := (&sidecarSetChanges{registry: registry}).Start(ctx, rescans); err != nil {
		t.Fatal(err)
	}
	if err := (&sidecarSetChanges{registry: registry}).WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	told := &queued[reconcile.Request]{}
	if err := d.Changes().Start(ctx, told); err != nil {
		t.Fatal(err)
	}
	reconcileOK := func(it item) {
		t.Helper()
		if _, err := d.Reconcile(ctx, it); err != nil {
			t.Fatalf("reconcile %+v: %v", it, err)
		}
	}
	webKey, apiKey := client.ObjectKeyFromObject(web), client.ObjectKeyFromObject(api)
	webMissing := []NotInjectedPod{{Pod: webKey, Reason: match.NotInjectedAtAdmission}}

	// The first list: counted, told to no one until every pod is looked at.
	rescans.take() // the registry's first list
	reconcileOK(item{pod: webKey})
	reconcileOK(item{pod: apiKey})
	if d.Synced() || len(told.take()) != 0 {
		t.Fatal("synced, or told the controller, before the mark of the first list")
	}
	reconcileOK(item{synced: true})
	if !d.Synced() {
		t.Fatal("not synced after the mark")
	}
	if diff := cmp.Diff([]reconcile.Request{request("agent")}, told.take()); diff != "" {
		t.Errorf("told at sync (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(webMissing, d.NotInjected("agent")); diff != "" {
		t.Errorf("not injected (-want +got):\n%s", diff)
	}

	// Deleted: forgotten, and the controller told.
	if err := pods.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	reconcileOK(item{pod: webKey})
	if got := d.NotInjected("agent"); len(got) != 0 {
		t.Errorf("a deleted pod is still reported: %v", got)
	}
	if diff := cmp.Diff([]reconcile.Request{request("agent")}, told.take()); diff != "" {
		t.Errorf("told after the deletion (-want +got):\n%s", diff)
	}

	// The selector moves to the other pod: the registry's change is a
	// rescan, which finds it; moved back, the rescan drops it.
	for i, app := range []string{"api", "web"} {
		moved := set.DeepCopy()
		moved.Generation = int64(2 + i)
		moved.Spec.Selector.MatchLabels["app"] = app
		lw.Modify(moved)
		var got []item
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = append(got, rescans.take()...)
			return len(got) > 0, nil
		})
		if err != nil || !cmp.Equal(got, []item{{sidecarSet: "agent"}}, cmp.AllowUnexported(item{})) {
			t.Fatalf("selector app=%s: the registry's change queued %+v (%v)", app, got, err)
		}
		reconcileOK(got[0])
		want := []NotInjectedPod{{Pod: apiKey, Reason: match.NotInjectedAtAdmission}}
		if app == "web" {
			want = []NotInjectedPod{}
		}
		if diff := cmp.Diff(want, d.NotInjected("agent")); diff != "" {
			t.Errorf("selector app=%s: not injected (-want +got):\n%s", app, diff)
		}
		if diff := cmp.Diff([]reconcile.Request{request("agent")}, told.take()); diff != "" {
			t.Errorf("selector app=%s: told (-want +got):\n%s", app, diff)
		}
	}

	// A status write changes nothing the detector reads: no rescan.
	status := set.DeepCopy()
	status.Generation = 3
	status.Spec.Selector.MatchLabels["app"] = "web"
	status.Status.MatchedPods = 1
	before, _ := registry.Get("agent")
	lw.Modify(status)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		e, ok := registry.Get("agent")
		return ok && e != before, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rescans.take(); len(got) != 0 {
		t.Errorf("a status write queued %+v", got)
	}

	// Deleted from the registry: forgotten.
	lw.Delete(status)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(rescans.take()) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reconcileOK(item{sidecarSet: "agent"})
	if len(d.state.bySet) != 0 || len(d.state.byPod) != 0 {
		t.Errorf("a deleted SidecarSet left %v, %v", d.state.bySet, d.state.byPod)
	}
}

// syncedAtOnce is a syncing source that has synced once started.
type syncedAtOnce struct{}

func (syncedAtOnce) Start(context.Context, workqueue.TypedRateLimitingInterface[item]) error {
	return nil
}
func (syncedAtOnce) WaitForSync(context.Context) error { return nil }

var _ source.TypedSyncingSource[item] = syncedAtOnce{}

// The mark is reached after every pod of the first list (queued at low
// priority before it), and after nothing queued since at the normal one.
func TestMarkedWhenSynced_QueuesTheMarkBehindTheFirstList(t *testing.T) {
	t.Parallel()
	q := priorityqueue.New[item]("test")
	defer q.ShutDown()
	low := handler.LowPriority
	first := []item{{pod: types.NamespacedName{Namespace: "a", Name: "1"}}, {pod: types.NamespacedName{Namespace: "a", Name: "2"}}}
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, first...)
	m := &markedWhenSynced{TypedSyncingSource: syncedAtOnce{}}
	if err := m.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	later := item{sidecarSet: "s"}
	q.Add(later)
	want := []item{later, first[0], first[1], {synced: true}}
	for i, w := range want {
		got, _ := q.Get()
		q.Done(got)
		if got != w {
			t.Fatalf("item %d is %+v, want %+v", i, got, w)
		}
	}
}

// A SidecarSet no pod misses any more holds no map: an empty one would
// keep the room it grew to.
func TestState_ForgetsEmptiedSidecarSets(t *testing.T) {
	t.Parallel()
	s := newState()
	pods := []types.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}
	for _, p := range pods {
		s.record(p, map[string]string{"s": "reason"})
	}
	if changed := s.forget(pods[0]); !cmp.Equal(changed, []string{"s"}) || len(s.bySet["s"]) != 1 {
		t.Fatalf("after one of two pods went: changed %v, %v", changed, s.bySet)
	}
	s.forget(pods[1])
	if _, held := s.bySet["s"]; held {
		t.Errorf("after the last pod went: bySet %v (want no entry for s)", s.bySet)
	}
}

// The controller is told of changes once synced, those made before its
// watch started included.
func TestState_TellsOnceSyncedAndAttached(t *testing.T) {
	t.Parallel()
	s := newState()
	s.tell([]string{"before-sync"})
	s.markSynced([]string{"a"})
	s.tell([]string{"b"})
	q := &queued[reconcile.Request]{}
	s.attach(q)
	s.tell([]string{"c"})
	got := q.take()
	want := []reconcile.Request{request("a"), request("b"), request("c")}
	if !cmp.Equal(got[:2], want[:2]) && !cmp.Equal(got[:2], []reconcile.Request{want[1], want[0]}) || len(got) != 3 || got[2] != want[2] {
		t.Errorf("told %v, want %v (the first two in any order)", got, want)
	}
}
