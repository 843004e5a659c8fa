package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// TestRolloutStatus_FollowsTheWatch: status reads the SidecarSet once,
// then reports the change the controller writes as the watch brings it,
// and exits 0 when the rollout completes; it does not read it again.
func TestRolloutStatus_FollowsTheWatch(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	watching := make(chan struct{}, 1)
	c := fakeCluster().WithObjects(rolledOut(appsv1beta1.ReasonPaused)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*appsv1beta1.SidecarSet); ok {
				gets.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			w, err := c.Watch(ctx, list, opts...)
			if _, ok := list.(*appsv1beta1.SidecarSetList); ok && err == nil {
				select {
				case watching <- struct{}{}:
				default:
				}
			}
			return w, err
		},
	}).Build()
	o := clusterOptions()
	o.cl = c

	type result struct {
		out  string
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, code, err := runWith(t, o, "rollout", "status", "agent", "--timeout", "30s")
		done <- result{out, code, err}
	}()
	select {
	case <-watching:
	case r := <-done:
		t.Fatalf("status ended before it watched the SidecarSet: exit %d, %v\n%s", r.code, r.err, r.out)
	case <-time.After(10 * time.Second):
		t.Fatal("status did not watch the SidecarSet within 10 s")
	}

	// The controller completes the rollout.
	s := &appsv1beta1.SidecarSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "agent"}, s); err != nil {
		t.Fatal(err)
	}
	s.Status.UpdatedPods, s.Status.UpdatedReadyPods = s.Status.MatchedPods, s.Status.MatchedPods
	s.Status.Conditions = []metav1.Condition{{Type: appsv1beta1.SidecarSetConditionProgressing, Status: metav1.ConditionFalse,
		Reason: appsv1beta1.ReasonRolloutComplete, Message: "3 pods updated", ObservedGeneration: s.Generation}}
	if err := c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	gets.Store(0)

	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("status did not end within 10 s of the rollout completing")
	}
	if r.code != ExitOK || r.err != nil {
		t.Fatalf("exit %d, %v, want 0\n%s", r.code, r.err, r.out)
	}
	progressing := `Waiting for sidecarset "agent" rollout to finish: 1 of 3 pods updated, 1 of them ready`
	complete := `sidecarset "agent" successfully rolled out: 3 pods updated`
	if i, j := strings.Index(r.out, progressing), strings.Index(r.out, complete); i < 0 || j < i {
		t.Errorf("output, want the paused rollout then its completion:\n%s", r.out)
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("%d reads of the SidecarSet after the first, want the change through the watch only", n)
	}
}

// TestRolloutStatus_WatchEnds: a SidecarSet deleted while followed ends
// status as a SidecarSet not found (exit 1); a watch the API server
// refuses ends it as a refused read (exit 3).
func TestRolloutStatus_WatchEnds(t *testing.T) {
	t.Parallel()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets"}, "", nil)
	tests := []struct {
		name string
		// watch answers the SidecarSet's watch.
		watch func(ctx context.Context, c client.WithWatch) (watch.Interface, error)
		want  int
		msg   string
	}{
		{"deleted", func(ctx context.Context, c client.WithWatch) (watch.Interface, error) {
			w, err := c.Watch(ctx, &appsv1beta1.SidecarSetList{})
			if err == nil {
				err = c.Delete(ctx, &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}})
			}
			return w, err
		}, ExitFailed, `sidecarsets.apps.kruise.io "agent" not found`},
		{"refused", func(context.Context, client.WithWatch) (watch.Interface, error) { return nil, forbidden }, ExitCluster, "watching SidecarSet agent: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := clusterOptions()
			o.cl = fakeCluster().WithObjects(rolledOut(appsv1beta1.ReasonPaused)).WithInterceptorFuncs(interceptor.Funcs{
				Watch: func(ctx context.Context, c client.WithWatch, _ client.ObjectList, _ ...client.ListOption) (watch.Interface, error) {
					return tc.watch(ctx, c)
				},
			}).Build()
			out, code, err := runWith(t, o, "rollout", "status", "agent", "--timeout", "30s")
			if code != tc.want || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("exit %d, %v, want %d and an error containing %q\n%s", code, err, tc.want, tc.msg, out)
			}
		})
	}
}
