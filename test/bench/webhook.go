package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const (
	webhookNamespace   = "bench-webhook"
	benchLabel         = "sidecarset-bench"
	podWebhookConfig   = "sidecarset-operator-local-mutating"
	podWebhookName     = "mpod.sidecarset-operator.dev"
	benchSidecar       = "bench-sidecar"
	noScheduler        = "bench-no-such-scheduler"
	targetSidecarSet   = "bench-target"
	benchTargetAppName = "bench-target"
	probeApp           = "bench-probe"
)

type webhookOptions struct {
	pods     int
	creators int
	counts   []int
	rounds   int
	profile  *profiler
	// afterward, if set, profiles one more creation with 1 SidecarSet after
	// the measured ones (not counted), for a miss of the CPU per pod; the
	// profile lasts as long as the measured creations took.
	afterward *profiler
	// bare measures, in each round with 1 SidecarSet, the creation with the
	// bare webhook in place of the operator's pod webhooks (barewebhook.go).
	bare bool
}

// afterwardLabel names the profiled creation after the measured ones.
const afterwardLabel = "1 SidecarSets, profiled"

// creation is one measurement: pods created by concurrent creators.
type creation struct {
	label     string
	latencies []time.Duration
	elapsed   time.Duration
	injected  int
	// webhookCalls is how many times the API server called the pod webhook,
	// and apiserverMean its mean time in it per call.
	webhookCalls  int
	apiserverMean time.Duration
	// cpu is the CPU time each component used while the pods were created.
	cpu cpuTimes
	// conditionBytes is the length of the pod webhook's matchCondition, and
	// conditionMean the API server's mean time evaluating the webhooks'
	// matchConditions per pod.
	conditionBytes int
	conditionMean  time.Duration
	// detector is the time the controller's detection of pods without
	// their sidecars spent on the pods, per pod created.
	detector time.Duration
}

func (c creation) podsPerSecond() float64 { return float64(len(c.latencies)) / c.elapsed.Seconds() }

func (c creation) p(q float64) time.Duration { return percentile(sortedCopy(c.latencies), q) }

// pairing is the rounds of one configuration, each next to a floor measured
// just before it.
type pairing struct {
	label        string
	runs, floors []creation
	// bare are the rounds' creations with the bare webhook, each after the
	// run of its round (with 1 SidecarSet, when measured).
	bare []creation
}

// benchWebhook creates the same pods with 0, 1, 100 and 1000 SidecarSets
// (one of them matching the pods, except with 0), and with the pod webhook
// configuration removed (the floor). Each configuration is measured in
// several rounds, each round right after a floor of its own, and reported
// as the median of the rounds: the machines are noisy, and a floor measured
// minutes earlier would not be a fair comparison.
func benchWebhook(ctx context.Context, e *env, o webhookOptions) (bool, error) {
	pairings, err := e.measureAdmission(ctx, o)
	if err != nil {
		return false, err
	}
	printAdmission(o, pairings)
	printAdmissionProfiles(o)
	last := pairings[len(pairings)-1]
	rate := medianPairs(last, rateVsFloor)
	p50 := medianPairs(last, func(r, f creation) float64 { return float64(r.p(50)) / float64(f.p(50)) })
	ok := rate >= 0.7 && p50 <= 1.3
	fmt.Printf("\nTarget at %s: throughput ≥ 0.7× floor (%.2f×), p50 ≤ 1.3× floor (%.2f×): %s\n", last.label, rate, p50, verdict(ok))
	return ok, nil
}

// measureAdmission measures pod creation with each number of SidecarSets,
// in rounds, each against a floor measured just before it.
func (e *env) measureAdmission(ctx context.Context, o webhookOptions) ([]pairing, error) {
	if err := e.ensureNamespace(ctx, webhookNamespace); err != nil {
		return nil, err
	}
	if err := e.deleteBenchSidecarSets(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if e.bare != nil {
			e.bare.stop()
			e.bare = nil
		}
		cleanup := context.WithoutCancel(ctx)
		_ = e.deleteBenchSidecarSets(cleanup)
		_ = e.client.DeleteAllOf(cleanup, &appsv1beta1.SidecarSet{}, client.MatchingLabels{benchLabel: "probe"})
	}()
	if err := e.ensureProbeSidecarSet(ctx); err != nil {
		return nil, err
	}
	if err := e.deletePods(ctx, webhookNamespace); err != nil {
		return nil, err
	}

	var pairings []pairing
	for _, n := range o.counts {
		if err := e.ensureBenchSidecarSets(ctx, n); err != nil {
			return nil, err
		}
		if err := e.waitInjected(ctx, n > 0); err != nil {
			return nil, err
		}
		pr := pairing{label: fmt.Sprintf("%d SidecarSets", n)}
		for round := range o.rounds {
			floor, err := e.measureFloor(ctx, o, fmt.Sprintf("floor before %d SidecarSets, round %d", n, round+1))
			if err != nil {
				return nil, err
			}
			run, err := e.measureCreation(ctx, o, fmt.Sprintf("%d SidecarSets, round %d", n, round+1), n > 0)
			if err != nil {
				return nil, err
			}
			pr.floors, pr.runs = append(pr.floors, floor), append(pr.runs, run)
			if n == 1 && o.bare {
				bare, err := e.measureBare(ctx, o, fmt.Sprintf("bare webhook, round %d", round+1))
				if err != nil {
					return nil, err
				}
				pr.bare = append(pr.bare, bare)
			}
		}
		if n == 1 && o.afterward != nil {
			profiled := o
			profiled.profile = o.afterward.lasting(time.Duration(median(pr.runs, func(c creation) float64 { return float64(c.elapsed) })))
			if _, err := e.measureCreation(ctx, profiled, afterwardLabel, true); err != nil {
				return nil, err
			}
		}
		pairings = append(pairings, pr)
	}

	return pairings, nil
}

// printAdmission prints the admission measurements: throughput, latency,
// webhook calls, the pod webhook's matchCondition, and CPU by component.
func printAdmission(o webhookOptions, pairings []pairing) {
	fmt.Printf("\nPod admission: %d pods, %d concurrent creators; with n SidecarSets, exactly one selects the pods (none with 0); median of %d rounds, each against a floor measured just before it (kwok dev cluster, 2 cores)\n\n",
		o.pods, o.creators, o.rounds)
	var rows [][]string
	row := func(pr pairing) []string {
		rate := median(pr.runs, func(c creation) float64 { return c.podsPerSecond() })
		floorRate := median(pr.floors, func(c creation) float64 { return c.podsPerSecond() })
		rateRatio := medianPairs(pr, rateVsFloor)
		p50Ratio := medianPairs(pr, func(r, f creation) float64 { return float64(r.p(50)) / float64(f.p(50)) })
		calls := median(pr.runs, func(c creation) float64 { return float64(c.webhookCalls) })
		webhook := "-"
		if calls > 0 {
			webhook = ms(time.Duration(median(pr.runs, func(c creation) float64 { return float64(c.apiserverMean) })))
		}
		return []string{pr.label,
			msf(median(pr.runs, func(c creation) float64 { return float64(c.p(50)) })),
			msf(median(pr.runs, func(c creation) float64 { return float64(c.p(90)) })),
			msf(median(pr.runs, func(c creation) float64 { return float64(c.p(99)) })),
			fmt.Sprintf("%.0f", rate), fmt.Sprintf("%.0f", floorRate),
			fmt.Sprintf("%.2f×", rateRatio), fmt.Sprintf("%.2f×", p50Ratio),
			fmt.Sprintf("%.0f", calls/float64(o.pods)), webhook,
			fmt.Sprintf("%d", pr.runs[len(pr.runs)-1].conditionBytes),
			ms(time.Duration(median(pr.runs, func(c creation) float64 { return float64(c.conditionMean) })))}
	}
	for _, pr := range pairings {
		rows = append(rows, row(pr))
		if b, ok := pr.bareRounds(); ok {
			rows = append(rows, row(b))
		}
	}
	table([]string{"", "p50", "p90", "p99", "pods/s", "floor pods/s", "pods/s vs floor", "p50 vs floor", "webhook calls per pod",
		"API server time in the webhook (mean)", "matchCondition (bytes)", "matchCondition evaluation (mean)"}, rows)

	fmt.Printf("\nCPU time per pod created, by component (median of the rounds; where the cost goes)\n\n")
	components := []string{"kube-apiserver", "etcd", "manager", "kube-controller-manager", "kube-scheduler", "kwok-controller"}
	if slices.ContainsFunc(pairings, func(pr pairing) bool { return len(pr.bare) > 0 }) {
		components = append(components, bareComponent)
	}
	rows = nil
	cpuRow := func(label string, cs []creation) []string {
		row := []string{label}
		for _, c := range components {
			row = append(row, ms(pairing{runs: cs}.cpuPerPod(c)))
		}
		return row
	}
	var allFloors []creation
	for _, pr := range pairings {
		allFloors = append(allFloors, pr.floors...)
	}
	rows = append(rows, cpuRow("floor (no pod webhook)", allFloors))
	for _, pr := range pairings {
		rows = append(rows, cpuRow(pr.label, pr.runs))
		if b, ok := pr.bareRounds(); ok {
			rows = append(rows, cpuRow(b.label, b.runs))
		}
	}
	table(append([]string{""}, components...), rows)
	fmt.Printf("\nOf the manager's time, the detection of pods without their sidecars (sidecarset_detector_seconds_total) took, per pod created:")
	for _, pr := range pairings {
		fmt.Printf(" %s %d µs;", pr.label, time.Duration(median(pr.runs, func(c creation) float64 { return float64(c.detector) })).Microseconds())
	}
	fmt.Printf("\nEach round's pods/s against the floor measured just before it (the medians above are of these):")
	for _, pr := range pairings {
		fmt.Printf(" %s;", roundsByFloor(pr))
	}
	for _, pr := range pairings {
		if b, ok := pr.bareRounds(); ok {
			fmt.Printf("\n%s: the bare webhook (test/bench/barewebhook.go) answered every pod with the operator's patch for it, deciding nothing, and watched the pods: %s of CPU per pod in its own process (the operator: %s), %.2f× the floor's pods/s (the operator: %.2f×): the least an injecting, watching operator costs here, and the most a webhook making this patch lets the API server reach.",
				pr.label, ms(b.cpuPerPod(bareComponent)), ms(pr.cpuPerPod("manager")), medianPairs(b, rateVsFloor), medianPairs(pr, rateVsFloor))
			fmt.Printf("\nEach round's pods/s against its floor, with the bare webhook: %s", roundsByFloor(b))
		}
	}
	fmt.Printf("\nBesides the bench's SidecarSets, the cluster holds the seed example's and the bench's probe SidecarSet; neither selects the measured pods.\n")
}

// printAdmissionProfiles prints where the API server's and the manager's
// CPU went in the profiled creation with 1 SidecarSet (--profile-dir).
func printAdmissionProfiles(o webhookOptions) {
	if o.afterward == nil || !slices.Contains(o.counts, 1) {
		return
	}
	fmt.Printf("\nThe API server's CPU in one more creation of %d pods with 1 SidecarSet, profiled (%s), and what the mutating webhooks took of it:\n",
		o.pods, o.afterward.path(afterwardLabel, "apiserver"))
	printCPUProfile(o.afterward.path(afterwardLabel, "apiserver"), o.pods, apiserverAdmissionParts)
	if o.afterward.managerAddr != "" {
		fmt.Printf("The manager's CPU in that creation (%s):\n", o.afterward.path(afterwardLabel, "manager"))
		printCPUProfile(o.afterward.path(afterwardLabel, "manager"), o.pods, admissionParts)
	}
}

// bareRounds is the pairing of the bare webhook's creations with the
// rounds' floors, when they were measured.
func (pr pairing) bareRounds() (pairing, bool) {
	if len(pr.bare) == 0 {
		return pairing{}, false
	}
	return pairing{label: pr.label + ", bare webhook", runs: pr.bare, floors: pr.floors[:len(pr.bare)]}, true
}

// cpuPerPod is a component's CPU per pod created, the median of the rounds.
func (pr pairing) cpuPerPod(component string) time.Duration {
	return time.Duration(median(pr.runs, func(c creation) float64 { return float64(c.cpu[component]) / float64(len(c.latencies)) }))
}

// roundsByFloor lists a configuration's rounds in the order they ran, each
// as its pods/s against its floor's: how far apart the rounds are shows
// how much the median can be trusted.
func roundsByFloor(pr pairing) string {
	parts := make([]string, len(pr.runs))
	for i := range pr.runs {
		parts[i] = fmt.Sprintf("%.2f× (%.0f vs %.0f pods/s)", rateVsFloor(pr.runs[i], pr.floors[i]),
			pr.runs[i].podsPerSecond(), pr.floors[i].podsPerSecond())
	}
	return pr.label + " " + strings.Join(parts, ", ")
}

// rateVsFloor is a round's throughput against its floor's: the figure the
// admission targets compare.
func rateVsFloor(run, floor creation) float64 { return run.podsPerSecond() / floor.podsPerSecond() }

// median returns the median of a value over measurements.
func median(cs []creation, value func(creation) float64) float64 {
	vs := make([]float64, len(cs))
	for i, c := range cs {
		vs[i] = value(c)
	}
	return medianOf(vs)
}

// medianPairs returns the median over the rounds of a value of each run
// and its floor.
func medianPairs(pr pairing, value func(run, floor creation) float64) float64 {
	vs := make([]float64, len(pr.runs))
	for i := range pr.runs {
		vs[i] = value(pr.runs[i], pr.floors[i])
	}
	return medianOf(vs)
}

func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func msf(ns float64) string { return ms(time.Duration(ns)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// measureFloor creates the pods with the pod webhook configuration removed.
func (e *env) measureFloor(ctx context.Context, o webhookOptions, label string) (creation, error) {
	return e.withoutPodWebhooks(ctx, func(*admissionregistrationv1.MutatingWebhookConfiguration) (creation, error) {
		return e.measureCreation(ctx, o, label, false)
	})
}

// withoutPodWebhooks removes the operator's mutating webhook configuration,
// waits until the API server no longer calls its pod webhook, measures, and
// restores it. measure is given the configuration as it was.
func (e *env) withoutPodWebhooks(ctx context.Context, measure func(operator *admissionregistrationv1.MutatingWebhookConfiguration) (creation, error)) (creation, error) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: podWebhookConfig}, cfg); err != nil {
		return creation{}, fmt.Errorf("reading %s (run make dev first): %w", podWebhookConfig, err)
	}
	saved := cfg.DeepCopy()
	saved.ResourceVersion, saved.UID, saved.CreationTimestamp, saved.ManagedFields = "", "", metav1.Time{}, nil
	if err := e.client.Delete(ctx, cfg); err != nil {
		return creation{}, err
	}
	err := e.waitWebhookCalled(ctx, false)
	var run creation
	if err == nil {
		run, err = measure(saved.DeepCopy())
	}
	restore := context.WithoutCancel(ctx)
	if cerr := e.client.Create(restore, saved); cerr != nil {
		return run, errors.Join(err, fmt.Errorf("restoring %s: %w", podWebhookConfig, cerr))
	}
	if werr := e.waitWebhookCalled(restore, true); werr != nil {
		return run, errors.Join(err, fmt.Errorf("waiting for the API server to call the restored pod webhook: %w", werr))
	}
	return run, err
}

// measureCreation creates the pods, measures each creation, checks the
// injection and deletes them.
func (e *env) measureCreation(ctx context.Context, o webhookOptions, label string, wantInjected bool) (creation, error) {
	before, err := e.apiserverMetrics(ctx)
	if err != nil {
		return creation{}, err
	}
	r := creation{label: label, latencies: make([]time.Duration, 0, o.pods)}
	detector := func() float64 {
		m, err := e.managerScrape(ctx)
		if err != nil {
			return 0
		}
		v, _ := m.Sum("sidecarset_detector_seconds_total", nil)
		return v
	}
	detector0 := detector()
	cpu0 := e.cpuSnapshot()
	profiled := o.profile.start(ctx, e, label)
	defer profiled()
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
	r.cpu = e.cpuSnapshot().since(cpu0)
	r.detector = time.Duration((detector() - detector0) / float64(o.pods) * float64(time.Second))
	if firstErr != nil {
		return r, fmt.Errorf("creating pods (%s): %w", label, firstErr)
	}
	after, err := e.apiserverMetrics(ctx)
	if err != nil {
		return r, err
	}
	match := map[string]string{"name": podWebhookName, "operation": "CREATE"}
	s0, c0 := before.Sum("apiserver_admission_webhook_admission_duration_seconds", match)
	s1, c1 := after.Sum("apiserver_admission_webhook_admission_duration_seconds", match)
	r.webhookCalls = int(c1 - c0)
	if c1 > c0 {
		r.apiserverMean = time.Duration((s1 - s0) / (c1 - c0) * float64(time.Second))
	}
	// Every pod webhook's matchConditions, per pod created.
	eval := map[string]string{"kind": "webhook", "operation": "CREATE"}
	e0, _ := before.Sum("apiserver_admission_match_condition_evaluation_seconds", eval)
	e1, _ := after.Sum("apiserver_admission_match_condition_evaluation_seconds", eval)
	r.conditionMean = time.Duration((e1 - e0) / float64(o.pods) * float64(time.Second))
	r.conditionBytes = e.podConditionBytes(ctx)

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
			// Left to a scheduler that does not exist: the pod stays Pending,
			// untouched by kube-scheduler, kwok and the pod garbage collector
			// (which deletes pods bound to a missing node, mid-measurement),
			// so the measurement is admission and storage only.
			SchedulerName: noScheduler,
			Containers:    []corev1.Container{{Name: "app", Image: "nginx:1.25"}},
		},
	}
}

// ensureBenchSidecarSets makes exactly n bench SidecarSets exist: one whose
// selector matches the bench pods, the others matching other apps.
func (e *env) ensureBenchSidecarSets(ctx context.Context, n int) error {
	existing := &appsv1beta1.SidecarSetList{}
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
		list := &appsv1beta1.SidecarSetList{}
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

func benchSidecarSet(i int) *appsv1beta1.SidecarSet {
	name, app := fmt.Sprintf("bench-other-%04d", i), fmt.Sprintf("bench-other-%04d", i)
	if i == 0 {
		name, app = targetSidecarSet, benchTargetAppName
	}
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: "webhook"}},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{
				Name: benchSidecar, Image: "busybox:1.36", Command: []string{"sleep", "infinity"},
			}}},
			UpdateStrategy: appsv1beta1.SidecarSetUpdateStrategy{Type: appsv1beta1.NotUpdateSidecarSetStrategyType},
		},
	}
}

// waitInjected waits until a dry run of a measured pod's creation is (or is
// not) injected: the webhook's registry and its scope have caught up.
func (e *env) waitInjected(ctx context.Context, injected bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := benchPod(0)
		if err := e.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		got := slices.ContainsFunc(probe.Spec.Containers, func(c corev1.Container) bool { return c.Name == benchSidecar })
		return got == injected, nil
	})
}

// ensureProbeSidecarSet creates the SidecarSet that selects the probe pods
// of waitWebhookCalled (and no measured pod), so that the pod webhook's
// scope lets them through even when no bench SidecarSet exists.
func (e *env) ensureProbeSidecarSet(ctx context.Context) error {
	s := benchSidecarSet(0)
	s.Name = "bench-probe"
	s.Labels = map[string]string{benchLabel: "probe"}
	// The "app" key, like every bench SidecarSet: distinct values make the
	// selectors disjoint, so the shared sidecar name is no conflict.
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": probeApp}}
	s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: webhookNamespace}}
	if err := e.client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the probe SidecarSet: %w", err)
	}
	return e.waitWebhookCalled(ctx, true)
}

func (e *env) deleteBenchSidecarSets(ctx context.Context) error {
	return e.client.DeleteAllOf(ctx, &appsv1beta1.SidecarSet{}, client.MatchingLabels{benchLabel: "webhook"})
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
// server through an informer, a moment after it changes. The probe pod
// carries the probe SidecarSet's label, so the webhook's scope always
// includes it.
func (e *env) waitWebhookCalled(ctx context.Context, called bool) error {
	match := map[string]string{"name": podWebhookName, "operation": "CREATE"}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		m0, err := e.apiserverMetrics(ctx)
		if err != nil {
			return false, err
		}
		_, c0 := m0.Sum("apiserver_admission_webhook_admission_duration_seconds", match)
		probe := benchPod(0)
		probe.Name = "bench-probe"
		probe.Labels = map[string]string{"app": probeApp}
		if err := e.client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		m1, err := e.apiserverMetrics(ctx)
		if err != nil {
			return false, err
		}
		_, c1 := m1.Sum("apiserver_admission_webhook_admission_duration_seconds", match)
		return (c1 > c0) == called, nil
	})
}

// podConditionBytes is the length of the required pod webhook's
// matchCondition, in the operator's configuration or, while it is measured,
// the bare webhook's (0 when neither can be read).
func (e *env) podConditionBytes(ctx context.Context) int {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: podWebhookConfig}, cfg); err != nil {
		if err := e.client.Get(ctx, client.ObjectKey{Name: bareWebhookConfig}, cfg); err != nil {
			return 0
		}
	}
	for _, w := range cfg.Webhooks {
		if w.Name == podWebhookName {
			n := 0
			for _, c := range w.MatchConditions {
				n += len(c.Expression)
			}
			return n
		}
	}
	return 0
}
