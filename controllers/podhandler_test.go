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
