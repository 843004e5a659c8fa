package e2e_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
)

// rolloutRecorder watches a namespace's pods while a rollout runs. It sees
// every change the API server makes, in order, so it records exactly:
//
//   - the order in which pods got the target image in a container's spec
//     (the controller's upgrade order);
//   - the most pods unavailable at once: pods not running, not ready, or
//     running a container whose status does not yet report its spec image
//     (an in-place restart in flight or an image that cannot be pulled).
type rolloutRecorder struct {
	container, target string

	watch       *podWatch
	mu          sync.Mutex
	order       []string
	upgraded    map[types.UID]bool
	unavailable map[types.UID]bool
	max         int
}

// recordRollout starts a recorder; it stops when the spec ends.
func recordRollout(ctx context.Context, ns, container, target string) *rolloutRecorder {
	r := &rolloutRecorder{
		container: container, target: target,
		upgraded: map[types.UID]bool{}, unavailable: map[types.UID]bool{},
	}
	r.watch = watchPods(ctx, ns, r.observe)
	return r
}

// podWatch calls a function with every version of a namespace's pods, in
// the API server's order, from a list until the spec ends.
type podWatch struct {
	mu   sync.Mutex
	err  error
	done chan struct{}
}

// watchPods starts a podWatch; observe is called from one goroutine.
func watchPods(ctx context.Context, ns string, observe func(p *corev1.Pod, deleted bool)) *podWatch {
	pw := &podWatch{done: make(chan struct{})}
	list, err := env.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred())
	for i := range list.Items {
		observe(&list.Items[i], false)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, podWatcher{ns: ns})
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred())
	go func() {
		defer close(pw.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			switch {
			case ev.Type == watch.Error:
				pw.mu.Lock()
				pw.err = fmt.Errorf("pod watch error: %v", ev.Object)
				pw.mu.Unlock()
			case ok && (ev.Type == watch.Added || ev.Type == watch.Modified):
				observe(p, false)
			case ok && ev.Type == watch.Deleted:
				observe(p, true)
			}
		}
	}()
	ginkgo.DeferCleanup(func() {
		cancel()
		w.Stop()
		<-pw.done
	})
	return pw
}

// Err returns the watch error, if any.
func (pw *podWatch) Err() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.err
}

// podWatcher opens pod watches of a namespace for the retry watcher.
type podWatcher struct{ ns string }

func (p podWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return env.Clientset.CoreV1().Pods(p.ns).Watch(ctx, o)
}

func (r *rolloutRecorder) observe(p *corev1.Pod, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deleted || p.DeletionTimestamp != nil {
		delete(r.unavailable, p.UID)
		return
	}
	if c := specContainer(p, r.container); c != nil && c.Image == r.target && !r.upgraded[p.UID] {
		r.upgraded[p.UID] = true
		r.order = append(r.order, p.Name)
	}
	if podUnavailable(p) {
		r.unavailable[p.UID] = true
	} else {
		delete(r.unavailable, p.UID)
	}
	r.max = max(r.max, len(r.unavailable))
}

// podUnavailable: not running, not ready, or some container (or native
// sidecar) whose status does not report its spec image.
func podUnavailable(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || !podReady(p) {
		return true
	}
	for i := range p.Spec.Containers {
		if !reports(p, &p.Spec.Containers[i]) {
			return true
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && !reports(p, c) {
			return true
		}
	}
	return false
}

// reports tells whether a container's status reports its spec image.
func reports(p *corev1.Pod, c *corev1.Container) bool {
	return containerStatus(p, c.Name).Image == qualified(c.Image)
}

// Order returns the pods in the order they got the target image.
func (r *rolloutRecorder) Order() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// MaxUnavailable returns the most pods seen unavailable at once.
func (r *rolloutRecorder) MaxUnavailable() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max
}

// Err returns the watch error, if any.
func (r *rolloutRecorder) Err() error {
	return r.watch.Err()
}
