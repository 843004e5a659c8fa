package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// podWatch follows pods through an informer and tells the wait in progress
// of each pod's changes. The bench runs beside the operator on the same two
// cores, so it must cost no more than a plain client would: its watch
// decodes protobuf, as the manager's does, and a wait checks only the pod
// that changed. (A JSON watch whose every event wakes every waiting pod
// costs the floor client milliseconds of CPU per pod, which slows the
// floor, not the operator, and flatters the ratios.)
type podWatch struct {
	store   toolscache.Store
	stopCh  chan struct{}
	mu      sync.Mutex
	current *podWait // the wait in progress, nil when none
}

// podWait counts the pods a predicate holds for, as their events come.
type podWait struct {
	done   func(*corev1.Pod) bool
	isDone map[string]bool
	count  int
	// changed is signalled when count moves.
	changed chan struct{}
	// settled, if set, is called with the watch's lock held for each pod
	// that becomes done or is deleted.
	settled func(key string)
}

// protobufClientset is a clientset that reads built-in objects as protobuf.
func protobufClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(cfg)
}

func (e *env) watchPods(ctx context.Context, opts ...informers.SharedInformerOption) (*podWatch, error) {
	cs, err := protobufClientset(e.config)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, opts...)
	inf := factory.Core().V1().Pods().Informer()
	w := &podWatch{store: inf.GetStore(), stopCh: make(chan struct{})}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe(o, false) },
		UpdateFunc: func(_, o any) { w.observe(o, false) },
		DeleteFunc: func(o any) { w.observe(o, true) },
	}); err != nil {
		return nil, err
	}
	factory.Start(w.stopCh)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("the pod informer did not sync")
	}
	return w, nil
}

func (w *podWatch) stop() { close(w.stopCh) }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// observe tells the wait in progress of one pod's event.
func (w *podWatch) observe(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	pw := w.current
	if pw == nil {
		return
	}
	key := podKey(p)
	done := !deleted && pw.done(p)
	if done != pw.isDone[key] {
		if done {
			pw.isDone[key] = true
			pw.count++
		} else {
			delete(pw.isDone, key)
			pw.count--
		}
		select {
		case pw.changed <- struct{}{}:
		default:
		}
	}
	if (done || deleted) && pw.settled != nil {
		pw.settled(key)
	}
}

// begin starts a wait for the pods done holds for, counting those the
// store holds now; settled, if not nil, hears of each pod that becomes done
// or is deleted from then on.
func (w *podWatch) begin(done func(*corev1.Pod) bool, settled func(key string)) *podWait {
	pw := &podWait{done: done, isDone: map[string]bool{}, changed: make(chan struct{}, 1), settled: settled}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.store.List() {
		if p := o.(*corev1.Pod); p.DeletionTimestamp == nil && done(p) {
			pw.isDone[podKey(p)] = true
			pw.count++
		}
	}
	w.current = pw
	return pw
}

// end ends a wait.
func (w *podWatch) end(pw *podWait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.current == pw {
		w.current = nil
	}
}

// until blocks until `count` pods are done.
func (w *podWatch) until(ctx context.Context, pw *podWait, count int, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		w.mu.Lock()
		n := pw.count
		w.mu.Unlock()
		if n >= count {
			return nil
		}
		select {
		case <-pw.changed:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods done: %w", n, count, ctx.Err())
		case <-t.C:
			return fmt.Errorf("%d of %d pods done after %s", n, count, timeout)
		}
	}
}

// waitAll blocks until `count` pods are done.
func (w *podWatch) waitAll(ctx context.Context, count int, done func(*corev1.Pod) bool, timeout time.Duration) error {
	pw := w.begin(done, nil)
	defer w.end(pw)
	return w.until(ctx, pw, count, timeout)
}

// wait blocks until `count` pods run the sidecar with the image: spec and
// status (the status image is fully qualified by the simulated runtime).
func (w *podWatch) wait(ctx context.Context, count int, image string, timeout time.Duration) error {
	return w.waitAll(ctx, count, func(p *corev1.Pod) bool { return runs(p, image) }, timeout)
}

// waitResized blocks until `count` pods run the sidecar with the requests:
// spec and status (the kubelet applied the resize).
func (w *podWatch) waitResized(ctx context.Context, count int, requests corev1.ResourceList, timeout time.Duration) error {
	return w.waitAll(ctx, count, func(p *corev1.Pod) bool { return resized(p, requests) }, timeout)
}
