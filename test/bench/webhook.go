package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

const (
	webhookNamespace   = "bench-webhook"
	benchLabel         = "sidecarset-bench"
	podWebhookConfig   = "sidecarset-operator-local-mutating"
	podWebhookName     = "mpod.sidecarset-operator.dev"
	benchSidecar       = "bench-sidecar"
	unscheduledNode    = "bench-no-such-node"
	targetSidecarSet   = "bench-target"
	benchTargetAppName = "bench-target"
)

type webhookOptions struct {
	pods     int
	creators int
	counts   []int
}

// creation is one measurement: pods created by concurrent creators.
type creation struct {
	label     string
	latencies []time.Duration
	elapsed   time.Duration
	injected  int
	// apiserverMean is the API server's mean time in our webhook per pod.
	apiserverMean time.Duration
}

func (c creation) podsPerSecond() float64 { return float64(len(c.latencies)) / c.elapsed.Seconds() }

// benchWebhook creates the same pods with 0, 1, 100 and 1000 SidecarSets
// (one of them matching the pods), and with the pod webhook configuration
// removed (the floor, measured before and after), and compares.
func benchWebhook(ctx context.Context, e *env, o webhookOptions) (bool, error) {
	if err := e.ensureNamespace(ctx, webhookNamespace); err != nil {
		return false, err
	}
	if err := e.deleteBenchSidecarSets(ctx); err != nil {
		return false, err
	}
	defer func() { _ = e.deleteBenchSidecarSets(context.WithoutCancel(ctx)) }()

	floorBefore, err := e.measureFloor(ctx, o)
	if err != nil {
		return false, err
	}
	var runs []creation
	for _, n := range o.counts {
		if err := e.ensureBenchSidecarSets(ctx, n); err != nil {
			return false, err
		}
		run, err := e.measureCreation(ctx, o, fmt.Sprintf("%d SidecarSets", n), n > 0)
		if err != nil {
			return false, err
		}
		if n > 0 && run.injected != o.pods {
			return false, fmt.Errorf("with %d SidecarSets only %d of %d pods were injected", n, run.injected, o.pods)
		}
		runs = append(runs, run)
	}
	floorAfter, err := e.measureFloor(ctx, o)
	if err != nil {
		return false, err
	}

	floorRate := (floorBefore.podsPerSecond() + floorAfter.podsPerSecond()) / 2
	floorP50 := (percentile(sortedCopy(floorBefore.latencies), 50) + percentile(sortedCopy(floorAfter.latencies), 50)) / 2
	fmt.Printf("\nPod admission: %d pods, %d concurrent creators, one SidecarSet matching (kwok dev cluster, 2 cores)\n\n", o.pods, o.creators)
	var rows [][]string
	for _, r := range append([]creation{floorBefore, floorAfter}, runs...) {
		s := sortedCopy(r.latencies)
		p50 := percentile(s, 50)
		webhook := "-"
		if r.apiserverMean > 0 {
			webhook = ms(r.apiserverMean)
		}
		rows = append(rows, []string{r.label, ms(p50), ms(percentile(s, 90)), ms(percentile(s, 99)),
			fmt.Sprintf("%.0f", r.podsPerSecond()),
			fmt.Sprintf("%.2f×", r.podsPerSecond()/floorRate), fmt.Sprintf("%.2f×", float64(p50)/float64(floorP50)), webhook})
	}
	table([]string{"", "p50", "p90", "p99", "pods/s", "pods/s vs floor", "p50 vs floor", "webhook time in API server (mean)"}, rows)

	last := runs[len(runs)-1]
	rate := last.podsPerSecond() / floorRate
	p50 := float64(percentile(sortedCopy(last.latencies), 50)) / float64(floorP50)
	ok := rate >= 0.7 && p50 <= 1.3
	fmt.Printf("\nTarget at %s: throughput ≥ 0.7× floor (%.2f×), p50 ≤ 1.3× floor (%.2f×): %s\n", last.label, rate, p50, verdict(ok))
	return ok, nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// measureFloor creates the pods with the pod webhook configuration removed.
func (e *env) measureFloor(ctx context.Context, o webhookOptions) (creation, error) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: podWebhookConfig}, cfg); err != nil {
		return creation{}, fmt.Errorf("reading %s (run make dev first): %w", podWebhookConfig, err)
	}
	saved := cfg.DeepCopy()
	saved.ResourceVersion, saved.UID, saved.CreationTimestamp, saved.ManagedFields = "", "", metav1.Time{}, nil
	if err := e.client.Delete(ctx, cfg); err != nil {
		return creation{}, err
	}
	defer func() {
		restore := context.WithoutCancel(ctx)
		if err := e.client.Create(restore, saved); err == nil {
			_ = e.waitWebhookCalled(restore, true)
		}
	}()
	if err := e.waitWebhookCalled(ctx, false); err != nil {
		return creation{}, err
	}
	return e.measureCreation(ctx, o, "floor (no pod webhook)", false)
}

// measureCreation creates the pods, measures each creation, checks the
// injection and deletes them.
func (e *env) measureCreation(ctx context.Context, o webhookOptions, label string, wantInjected bool) (creation, error) {
	before, err := e.apiserverMetrics(ctx)
	if err != nil {
		return creation{}, err
	}
	r := creation{label: label, latencies: make([]time.Duration, 0, o.pods)}
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range o.creators {
		wg.Go(func() {
			for i := range next {
				pod := benchPod(i)
				t := time.Now()
				err := e.client.Create(ctx, pod)
				d := time.Since(t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				r.latencies = append(r.latencies, d)
				mu.Unlock()
			}
		})
	}
	for i := range o.pods {
		next <- i
	}
	close(next)
	wg.Wait()
	r.elapsed = time.Since(start)
	if firstErr != nil {
		return r, fmt.Errorf("creating pods (%s): %w", label, firstErr)
	}
	after, err := e.apiserverMetrics(ctx)
	if err != nil {
		return r, err
	}
	match := map[string]string{"name": podWebhookName, "operation": "CREATE"}
	s0, c0 := before["apiserver_admission_webhook_admission_duration_seconds"].sum(match)
	s1, c1 := after["apiserver_admission_webhook_admission_duration_seconds"].sum(match)
	if c1 > c0 {
		r.apiserverMean = time.Duration((s1 - s0) / (c1 - c0) * float64(time.Second))
	}

	pods := &corev1.PodList{}
	if err := e.client.List(ctx, pods, client.InNamespace(webhookNamespace)); err != nil {
		return r, err
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == benchSidecar {
				r.injected++
			}
		}
	}
	if wantInjected && r.injected != o.pods {
		return r, fmt.Errorf("%s: %d of %d pods injected", label, r.injected, o.pods)
	}
	return r, e.deletePods(ctx, webhookNamespace)
}

func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("bench-%04d", i),
			Namespace: webhookNamespace,
			Labels:    map[string]string{"app": benchTargetAppName, benchLabel: "webhook"},
		},
		Spec: corev1.PodSpec{
			// Bound to a node that does not exist: nothing schedules or runs
			// it, so the measurement is admission and storage only.
			NodeName:   unscheduledNode,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}},
		},
	}
}

// ensureBenchSidecarSets makes exactly n bench SidecarSets exist: one whose
// selector matches the bench pods, the others matching other apps.
func (e *env) ensureBenchSidecarSets(ctx context.Context, n int) error {
	existing := &appsv1alpha1.SidecarSetList{}
	if err := e.client.List(ctx, existing, client.MatchingLabels{benchLabel: "webhook"}); err != nil {
		return err
	}
	have := len(existing.Items)
	if have > n {
		return fmt.Errorf("%d bench SidecarSets exist, want at most %d", have, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 20 {
		wg.Go(func() {
			for i := range next {
				if err := e.client.Create(ctx, benchSidecarSet(i)); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
				}
			}
		})
	}
	for i := have; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("creating bench SidecarSets: %w", err)
	}
	// Wait until the controller has seen them all: the webhook's registry
	// is fed by the same informer.
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &appsv1alpha1.SidecarSetList{}
		if err := e.client.List(ctx, list, client.MatchingLabels{benchLabel: "webhook"}); err != nil {
			return false, err
		}
		for _, s := range list.Items {
			if s.Status.ObservedGeneration != s.Generation {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	})
}

func benchSidecarSet(i int) *appsv1alpha1.SidecarSet {
	name, app := fmt.Sprintf("bench-other-%04d", i), fmt.Sprintf("bench-other-%04d", i)
	if i == 0 {
		name, app = targetSidecarSet, benchTargetAppName
	}
	return &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: "webhook"}},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{
				Name: benchSidecar, Image: "busybox:1.36", Command: []string{"sleep", "infinity"},
			}}},
			UpdateStrategy: appsv1alpha1.SidecarSetUpdateStrategy{Type: appsv1alpha1.NotUpdateSidecarSetStrategyType},
		},
	}
}

func (e *env) deleteBenchSidecarSets(ctx context.Context) error {
	return e.client.DeleteAllOf(ctx, &appsv1alpha1.SidecarSet{}, client.MatchingLabels{benchLabel: "webhook"})
}

func (e *env) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// deletePods deletes every pod of the namespace at once and waits until
// they are gone.
func (e *env) deletePods(ctx context.Context, ns string) error {
	grace := int64(0)
	if err := e.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(grace)); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := e.client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
}

// waitWebhookCalled waits until the API server does (or no longer does) call
// the pod webhook, probing with server-side dry-run pod creations and the API
// server's webhook admission metric: its configuration reaches the API
// server through an informer, a moment after it changes.
func (e *env) waitWebhookCalled(ctx context.Context, called bool) error {
	match := map[string]string{"name": podWebhookName, "operation": "CREATE"}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m0, err := e.apiserverMetrics(ctx)
		if err != nil {
			return false, err
		}
		_, c0 := m0["apiserver_admission_webhook_admission_duration_seconds"].sum(match)
		probe := benchPod(0)
		probe.Name = "bench-probe"
		if err := e.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		m1, err := e.apiserverMetrics(ctx)
		if err != nil {
			return false, err
		}
		_, c1 := m1["apiserver_admission_webhook_admission_duration_seconds"].sum(match)
		return (c1 > c0) == called, nil
	})
}
