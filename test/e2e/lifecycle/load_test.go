package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// creation is the outcome of one pod creation.
type creation struct {
	name string
	// sent is when the request was sent, at when its answer came.
	sent, at time.Time
	err      error
	// sidecar: the created pod has the sidecar container.
	sidecar bool
}

// podLoad creates pods without pause from several goroutines, each pod
// selected by the spec's SidecarSet, and records every outcome.
type podLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	done   []creation
	start  time.Time
}

// Shape of the load: workers goroutines, each creating a pod every
// interval; the pods stay Pending (no node matches their selector), so
// that the cluster on two cores only stores them.
const (
	workers      = 12
	loadInterval = 500 * time.Millisecond
	loadTimeout  = 10 * time.Minute
)

// startPodLoad starts the goroutines; stop ends them.
func startPodLoad(ctx context.Context, ns, prefix string) *podLoad {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	l := &podLoad{cancel: cancel, start: time.Now()}
	for w := range workers {
		l.wg.Go(func() {
			defer ginkgo.GinkgoRecover()
			tick := time.NewTicker(loadInterval)
			defer tick.Stop()
			for i := 0; ; i++ {
				l.create(ctx, ns, fmt.Sprintf("%s-w%02d-%05d", prefix, w, i))
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return l
}

func (l *podLoad) create(ctx context.Context, ns, name string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"lifecycle.sidecarset-operator.dev/nowhere": "true"},
			Containers:   []corev1.Container{{Name: "main", Image: "nginx:1.25"}},
		},
	}
	sent := time.Now()
	created, err := env.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if ctx.Err() != nil {
		return // stopped while creating: not an outcome of the procedure
	}
	c := creation{name: name, sent: sent, at: time.Now(), err: err}
	if err == nil {
		c.sidecar = slices.ContainsFunc(created.Spec.Containers, func(c corev1.Container) bool { return c.Name == sidecarName })
	}
	l.mu.Lock()
	l.done = append(l.done, c)
	l.mu.Unlock()
}

// stop ends the load and returns every outcome.
func (l *podLoad) stop() []creation {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.done)
}

// summary counts outcomes.
type summary struct {
	created, refused, withSidecar int
	firstRefusal                  string
}

func summarize(cs []creation) summary {
	var s summary
	for _, c := range cs {
		switch {
		case c.err != nil:
			s.refused++
			if s.firstRefusal == "" {
				s.firstRefusal = c.name + ": " + c.err.Error()
			}
		case c.sidecar:
			s.created++
			s.withSidecar++
		default:
			s.created++
		}
	}
	return s
}

// report records a procedure's figures in the spec's report.
func report(procedure string, cs []creation, took time.Duration) summary {
	s := summarize(cs)
	ginkgo.AddReportEntry(procedure, fmt.Sprintf("%s: %d pod creations in %.1f s: %d admitted (%d with the sidecar), %d refused",
		procedure, len(cs), took.Seconds(), s.created, s.withSidecar, s.refused), ginkgo.ReportEntryVisibilityAlways)
	return s
}
