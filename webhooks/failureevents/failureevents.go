// Package failureevents reports the pods the pod webhook admitted without
// a best-effort SidecarSet as events on the SidecarSet, batched: the
// webhook counts in memory, a runnable writes.
package failureevents

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// EventInjectionFailed is the event on a best-effort SidecarSet that could
// not be injected into pods it selects, which were admitted without it.
const EventInjectionFailed = "InjectionFailed"

// failureFlushInterval is how often the failures are reported: one event
// per SidecarSet and interval at most, whatever the number of pods.
const failureFlushInterval = 10 * time.Second

// Reporter turns the best-effort injection failures the pod webhook sees
// into events on the SidecarSets. The webhook answers without waiting:
// Report only counts, in memory, and a runnable writes one event per
// SidecarSet per interval, naming how many pods were admitted without it
// and the last one with its reason.
type Reporter struct {
	recorder events.EventRecorder

	mu      sync.Mutex
	pending map[string]*failureCount
}

type failureCount struct {
	set     *appsv1beta1.SidecarSet
	pods    int
	lastPod string
	lastMsg string
}

// NewReporter returns a reporter writing with the recorder.
func NewReporter(recorder events.EventRecorder) *Reporter {
	return &Reporter{recorder: recorder, pending: map[string]*failureCount{}}
}

// Report counts one pod admitted without a best-effort SidecarSet.
func (f *Reporter) Report(set *appsv1beta1.SidecarSet, pod, message string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.pending[set.Name]
	if c == nil {
		c = &failureCount{}
		f.pending[set.Name] = c
	}
	c.set, c.lastPod, c.lastMsg = set, pod, message
	c.pods++
}

// Start writes the counted failures every interval until ctx ends, and once
// more then.
func (f *Reporter) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, func(context.Context) { f.flush() }, failureFlushInterval)
	f.flush()
	return nil
}

// NeedLeaderElection is false: every replica serves pods and reports its own.
func (f *Reporter) NeedLeaderElection() bool { return false }

func (f *Reporter) flush() {
	f.mu.Lock()
	pending := f.pending
	f.pending = map[string]*failureCount{}
	f.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		c := pending[name]
		f.recorder.Eventf(c.set, nil, corev1.EventTypeWarning, EventInjectionFailed, "Inject",
			"%s admitted without this best-effort SidecarSet; last: pod %s: %s", pods(c.pods), c.lastPod, c.lastMsg)
	}
}

func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
