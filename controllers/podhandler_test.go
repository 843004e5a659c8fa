package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// Pod updates reach a rolling SidecarSet after rolloutBatchDelay, so that
// the updates of a batch make one plan, not one each; a settled one (or a
// creation, for any SidecarSet) only after statusBatchDelay, coalesced.
func TestPodHandler_DelaysWhatOnlyMovesCounts(t *testing.T) {
	t.Parallel()
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", ResourceVersion: rv,
			Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: "rolling,settled"},
		}}
	}
	r := &SidecarSetReconciler{}
	r.memories.storePlan("rolling", false, rollout.ProgressClock{})
	r.memories.storePlan("settled", true, rollout.ProgressClock{})
	h := r.podHandler()
	ctx := context.Background()

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	start := time.Now()
	for rv := range 5 {
		h.Update(ctx, event.UpdateEvent{ObjectOld: pod(fmt.Sprint(rv)), ObjectNew: pod(fmt.Sprint(rv + 1))}, q)
	}
	if got := q.Len(); got != 0 {
		t.Fatalf("after updates, %d SidecarSets are queued at once, want 0 (batched)", got)
	}
	req, _ := q.Get()
	waited := time.Since(start)
	if req.Name != "rolling" {
		t.Errorf("queued first: %q, want rolling", req.Name)
	}
	if waited < rolloutBatchDelay || waited >= statusBatchDelay {
		t.Errorf("the rolling SidecarSet was queued after %s, want within [%s, %s)", waited, rolloutBatchDelay, statusBatchDelay)
	}
	q.Done(req)
	if got := q.Len(); got != 0 {
		t.Errorf("five updates queued the rolling SidecarSet %d more times, want once in all", got)
	}

	q2 := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q2.ShutDown()
	h.Create(ctx, event.CreateEvent{Object: pod("1")}, q2)
	if got := q2.Len(); got != 0 {
		t.Errorf("after a creation, %d SidecarSets are queued at once, want 0", got)
	}

	// A SidecarSet never planned is treated as rolling.
	if r.memories.settled("unknown") {
		t.Error("a SidecarSet never planned counts as settled")
	}
}

// countingQueue counts the delayed additions of each SidecarSet.
type countingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added map[string][]time.Duration
}

func (q *countingQueue) AddAfter(req reconcile.Request, d time.Duration) {
	q.added[req.Name] = append(q.added[req.Name], d)
	q.TypedRateLimitingInterface.AddAfter(req, d)
}

// The pod events that come while a reconcile they would queue is already
// queued, not started and due as soon, queue nothing: a rollout's pods
// bring two events or more each.
func TestPodHandler_QueuesOncePerReconcile(t *testing.T) {
	t.Parallel()
	pod := func(rv int, sets string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", ResourceVersion: fmt.Sprint(rv),
			Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: sets},
		}}
	}
	r := &SidecarSetReconciler{}
	r.memories.storePlan("rolling", false, rollout.ProgressClock{})
	r.memories.storePlan("settled", true, rollout.ProgressClock{})
	h := r.podHandler()
	ctx := context.Background()
	q := &countingQueue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()),
		added:                      map[string][]time.Duration{},
	}
	defer q.ShutDown()
	update := func(rv int, sets string) {
		h.Update(ctx, event.UpdateEvent{ObjectOld: pod(rv, sets), ObjectNew: pod(rv+1, sets)}, q)
	}
	want := func(step, name string, delays ...time.Duration) {
		t.Helper()
		if got := q.added[name]; fmt.Sprint(got) != fmt.Sprint(delays) {
			t.Errorf("%s: %s queued after %v, want %v", step, name, got, delays)
		}
	}

	for rv := range 10 {
		update(rv, "rolling,settled")
	}
	want("ten updates", "rolling", rolloutBatchDelay)
	want("ten updates", "settled", statusBatchDelay)

	// Once its reconcile starts, the next event queues the next one.
	r.memories.reconcileStarted("rolling")
	update(20, "rolling,settled")
	want("an update after the reconcile started", "rolling", rolloutBatchDelay, rolloutBatchDelay)
	want("an update after the reconcile started", "settled", statusBatchDelay)

	// A SidecarSet queued for later (settled: statusBatchDelay) that starts
	// rolling is queued again, sooner.
	r.memories.storePlan("settled", false, rollout.ProgressClock{})
	update(30, "settled")
	want("rolling after settled", "settled", statusBatchDelay, rolloutBatchDelay)

	// A creation or a deletion queues after statusBatchDelay, which an
	// earlier pending reconcile covers.
	h.Create(ctx, event.CreateEvent{Object: pod(40, "rolling,fresh")}, q)
	want("a creation", "rolling", rolloutBatchDelay, rolloutBatchDelay)
	want("a creation", "fresh", statusBatchDelay)
	h.Delete(ctx, event.DeleteEvent{Object: pod(41, "fresh")}, q)
	want("a deletion", "fresh", statusBatchDelay)
}

// A reconcile queued and past its due time without having started (its
// queue lost it, or is slow) does not cover later events.
func TestMemories_ReconcileDue(t *testing.T) {
	t.Parallel()
	var m memories
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		step  string
		at    time.Duration // after now
		delay time.Duration
		want  bool
	}{
		{"first", 0, time.Second, true},
		{"covered", 500 * time.Millisecond, time.Second, false},
		{"sooner than the queued one", 600 * time.Millisecond, 100 * time.Millisecond, true},
		{"covered by the sooner", 650 * time.Millisecond, time.Second, false},
		{"at the due time", 700 * time.Millisecond, 0, false},
		{"past the due time, not started", 701 * time.Millisecond, time.Second, true},
	} {
		if got := m.reconcileDue("s", now.Add(tc.at), tc.delay); got != tc.want {
			t.Errorf("%s: reconcileDue = %t, want %t", tc.step, got, tc.want)
		}
	}
	m.reconcileStarted("s")
	if !m.reconcileDue("s", now.Add(800*time.Millisecond), time.Second) {
		t.Error("after the reconcile started, an event queues nothing")
	}
}
