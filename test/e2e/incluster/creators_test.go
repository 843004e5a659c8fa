package incluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// creators create pods that a required SidecarSet selects, continuously,
// and count what admission made of them.
type creators struct {
	created, refused, uninjected atomic.Int64

	mu        sync.Mutex
	failures  []string    // the first refusals and uninjected pods
	refusedAt []time.Time // when each refusal came back

	stopped chan struct{}
	wg      sync.WaitGroup
}

// startCreators starts n goroutines that each create a pod labelled
// app=<label> in ns, wait pause, and again, until stopped. With dryRun the
// creations go through admission and are not stored. Stopping lets the
// creations in flight finish: one cancelled by the creator would count, at
// the API server, as a failed webhook call.
func startCreators(ctx context.Context, ns, label, sidecar string, n int, pause time.Duration, dryRun bool) *creators {
	c := &creators{stopped: make(chan struct{})}
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	for range n {
		c.wg.Go(func() {
			defer ginkgo.GinkgoRecover()
			for ctx.Err() == nil && !c.isStopped() {
				p := builder.MakePod("created", ns).Label("app", label).Obj()
				err := env.Client.Create(ctx, p, opts...)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					c.refused.Add(1)
					c.note("refused: %v", err)
					c.mu.Lock()
					c.refusedAt = append(c.refusedAt, time.Now())
					c.mu.Unlock()
				case !slices.Contains(containerNames(*p), sidecar):
					c.created.Add(1)
					c.uninjected.Add(1)
					c.note("created without %s: %s at %s", sidecar, p.Name, time.Now().Format(time.StampMilli))
				default:
					c.created.Add(1)
				}
				select {
				case <-ctx.Done():
					return
				case <-c.stopped:
					return
				case <-time.After(pause):
				}
			}
		})
	}
	return c
}

func (c *creators) isStopped() bool {
	select {
	case <-c.stopped:
		return true
	default:
		return false
	}
}

func (c *creators) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) < 10 {
		c.failures = append(c.failures, fmt.Sprintf(format, args...))
	}
}

// stop stops the creators and waits for their creations in flight.
func (c *creators) stop() {
	close(c.stopped)
	c.wg.Wait()
}

// sample is what a sampler saw at one time.
type sample struct {
	at time.Time
	// status is each SidecarSet's status, by name.
	status map[string]appsv1beta1.SidecarSetStatus
	// generation is each SidecarSet's generation, by name.
	generation map[string]int64
	// condition is the scope condition of each pod webhook, by webhook
	// name: its expression, or "" when the webhook has none.
	condition map[string]string
}

// sampler reads the SidecarSets and the pod webhooks' scope every
// interval, until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startSampler(ctx context.Context, interval time.Duration, sets ...string) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel}
	s.wg.Go(func() {
		defer ginkgo.GinkgoRecover()
		for ctx.Err() == nil {
			smp := sample{at: time.Now(), status: map[string]appsv1beta1.SidecarSetStatus{}, generation: map[string]int64{}, condition: map[string]string{}}
			ok := true
			for _, name := range sets {
				got := &appsv1beta1.SidecarSet{}
				if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
					ok = false
					break
				}
				smp.status[name], smp.generation[name] = got.Status, got.Generation
			}
			mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := env.Client.Get(ctx, types.NamespacedName{Name: "sidecarset-operator-mutating"}, mwc); err != nil {
				ok = false
			}
			for _, w := range mwc.Webhooks {
				if w.Name != names.PodWebhookName && w.Name != names.PodBestEffortWebhookName {
					continue
				}
				smp.condition[w.Name] = ""
				for _, mc := range w.MatchConditions {
					if mc.Name == scope.ConditionName {
						smp.condition[w.Name] = mc.Expression
					}
				}
			}
			if ok {
				s.mu.Lock()
				s.samples = append(s.samples, smp)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	})
	return s
}

// stop stops the sampler and returns what it saw.
func (s *sampler) stop() []sample {
	s.cancel()
	s.wg.Wait()
	return s.samples
}

// conditionGaps returns how many samples saw the required pod webhook with
// the shipped condition ("false", which the manager never writes there
// while a required SidecarSet exists) and how many with none, and the
// longest stretch of time either lasted. (The best-effort webhook's
// condition is "false" whenever no SidecarSet is best-effort.)
func conditionGaps(samples []sample) (placeholder, missing int, longest time.Duration) {
	var since time.Time
	for _, smp := range samples {
		gap := false
		switch smp.condition[names.PodWebhookName] {
		case "false":
			placeholder++
			gap = true
		case "":
			missing++
			gap = true
		}
		switch {
		case gap && since.IsZero():
			since = smp.at
		case !gap && !since.IsZero():
			longest = max(longest, smp.at.Sub(since))
			since = time.Time{}
		}
	}
	return placeholder, missing, longest
}
