package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const agent = "agent"

type rolloutOptions struct {
	// writers is the floor client's parallelism, the manager's
	// --pod-writers default; compared is a second floor's, measured beside
	// it in each round of the image rollouts (0: none).
	writers, compared int
	// rounds per configuration; sizes are the Deployments' pods.
	rounds int
	sizes  []int
	// resizes: the largest size is also resized in place.
	resizes bool
	// profile, when it has a directory, takes a CPU profile of the manager
	// during the second round of each rollout of the largest size.
	profile *profiler
}

// rolloutRound is one rollout by the operator and its floors.
type rolloutRound struct {
	// ours runs from the SidecarSet's update until every pod reports the
	// change and the SidecarSet's status counts every pod updated;
	// oursPods stops at the pods alone, as the floor does.
	ours, oursPods time.Duration
	// floor is the client at the manager's parallelism; compared the
	// client at the compared parallelism (image rollouts, when measured).
	floor, compared time.Duration
	// managerCPU is the manager's CPU time during ours; floorCPU this
	// process's during floor (the client and its watch of the pods);
	// watchCPU this process's during ours, where it only watches the pods
	// (a protobuf informer, as the floor's) and reads the SidecarSet's
	// status: what following these pods costs a client that writes none.
	managerCPU, floorCPU, watchCPU time.Duration
	// reconciles is the number of the SidecarSet controller's reconciles
	// during ours (-1 when the manager's metrics cannot be read).
	reconciles   float64
	writesPerPod float64
	// resizesPerPod counts the pods/resize calls per pod.
	resizesPerPod float64
}

func (r rolloutRound) ratio() float64 { return r.ours.Seconds() / r.floor.Seconds() }

// rolloutRun is the rounds of one rollout configuration.
type rolloutRun struct {
	pods           int
	maxUnavailable string
	// resize: the run changes the sidecar's resources, not its image.
	resize bool
	rounds []rolloutRound
}

// median is the median over the rounds of one of their figures.
func (r rolloutRun) median(value func(rolloutRound) float64) float64 {
	vs := make([]float64, len(r.rounds))
	for i, round := range r.rounds {
		vs[i] = value(round)
	}
	return medianOf(vs)
}

func (r rolloutRun) seconds(value func(rolloutRound) time.Duration) string {
	return fmt.Sprintf("%.1f s", r.median(func(round rolloutRound) float64 { return value(round).Seconds() }))
}

// perPod is the median of a CPU time over the rounds, per pod, in ms.
func (r rolloutRun) perPod(value func(rolloutRound) time.Duration) float64 {
	return r.median(func(round rolloutRound) float64 {
		return float64(value(round)) / float64(r.pods) / float64(time.Millisecond)
	})
}

// ratios lists each round's ratio to its floor.
func (r rolloutRun) ratios(value func(rolloutRound) float64) string {
	var s []string
	for _, round := range r.rounds {
		s = append(s, fmt.Sprintf("%.2f×", value(round)))
	}
	return strings.Join(s, ", ")
}

// oneWritePerPod reports whether every round wrote each pod once (and
// resized it once, for a resize).
func (r rolloutRun) oneWritePerPod() bool {
	return !slices.ContainsFunc(r.rounds, func(round rolloutRound) bool {
		return math.Abs(round.writesPerPod-1) >= 0.01 || (r.resize && math.Abs(round.resizesPerPod-1) >= 0.01)
	})
}

// Targets of the rollouts: the ratio to the floor (median of the rounds) of
// an image rollout of 1000 pods or more, of smaller ones and of resizes, and
// the manager's CPU per upgraded pod of an image rollout.
const (
	largeRolloutRatio = 1.1
	rolloutRatio      = 1.2
	cpuPerUpgradedPod = 1.0 // ms
)

// reconciles is how many reconciles the SidecarSet controller made so far,
// from the manager's metrics; -1 when they cannot be read.
func (e *env) reconciles(ctx context.Context) float64 {
	m, err := e.managerScrape(ctx)
	if err != nil {
		return -1
	}
	if _, ok := m["controller_runtime_reconcile_total"]; !ok {
		return -1
	}
	n, _ := m.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "sidecarset"})
	return n
}

// processCPU is this process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRollout upgrades the sidecar of a Deployment's pods (200, then 1000)
// with maxUnavailable 100% and 10%, and compares each rollout with a
// trivial client patching the same pods' images at the same parallelism
// (the floor: what the API server and the simulated kubelets cost anyway),
// and with a second client at another parallelism. At 1000 pods it also
// resizes the sidecar's CPU and memory in place, each run against a client
// making the same pods/resize calls. Every configuration runs in rounds,
// each against its own floors, and reports their median.
func benchRollout(ctx context.Context, e *env, o rolloutOptions) (bool, error) {
	var runs []rolloutRun
	memory := e.sampleManagerMemory(ctx)
	for _, size := range o.sizes {
		r, err := e.rolloutsOf(ctx, size, o, size == slices.Max(o.sizes))
		if err != nil {
			return false, err
		}
		runs = append(runs, r...)
	}
	peak := memory()
	rss, err := e.managerPeakRSS()
	if err != nil {
		return false, fmt.Errorf("reading the manager's memory: %w", err)
	}

	fmt.Printf("\nIn-place sidecar rollout: time until every pod is updated and reports the new image, and the SidecarSet's status counts it; "+
		"the floor patches the same pods' images with %d parallel writers (the manager's --pod-writers) in the same window and waits for the same pod statuses; "+
		"median of %d rounds, each against its own floors (kwok dev cluster, 2 cores)\n\n", o.writers, o.rounds)
	ok := true
	var rows, resizeRows [][]string
	for _, r := range runs {
		ratio := r.median(rolloutRound.ratio)
		cpu := r.perPod(func(round rolloutRound) time.Duration { return round.managerCPU })
		floorCPU := fmt.Sprintf("%.2f ms", r.perPod(func(round rolloutRound) time.Duration { return round.floorCPU }))
		if r.resize {
			ok = ok && ratio <= rolloutRatio && r.oneWritePerPod()
			resizeRows = append(resizeRows, []string{fmt.Sprint(r.pods), r.maxUnavailable,
				r.seconds(func(round rolloutRound) time.Duration { return round.ours }), r.seconds(func(round rolloutRound) time.Duration { return round.floor }),
				fmt.Sprintf("%.2f×", ratio), r.ratios(rolloutRound.ratio), fmt.Sprintf("%.2f ms", cpu), floorCPU, fmt.Sprintf("%.0f", r.median(func(round rolloutRound) float64 { return round.reconciles })),
				fmt.Sprintf("%.2f + %.2f", r.median(func(round rolloutRound) float64 { return round.resizesPerPod }), r.median(func(round rolloutRound) float64 { return round.writesPerPod }))})
			continue
		}
		target := rolloutRatio
		if r.pods >= 1000 {
			target = largeRolloutRatio
		}
		ok = ok && ratio <= target && cpu <= cpuPerUpgradedPod && r.oneWritePerPod()
		compared := "-"
		if o.compared > 0 {
			compared = fmt.Sprintf("%s (%.2f×)", r.seconds(func(round rolloutRound) time.Duration { return round.compared }),
				r.median(func(round rolloutRound) float64 { return round.ours.Seconds() / round.compared.Seconds() }))
		}
		rows = append(rows, []string{fmt.Sprint(r.pods), r.maxUnavailable,
			r.seconds(func(round rolloutRound) time.Duration { return round.ours }),
			r.seconds(func(round rolloutRound) time.Duration { return round.oursPods }),
			r.seconds(func(round rolloutRound) time.Duration { return round.floor }),
			fmt.Sprintf("%.2f×", ratio), r.ratios(rolloutRound.ratio), compared,
			fmt.Sprintf("%.2f ms", cpu), floorCPU, fmt.Sprintf("%.2f ms", r.perPod(func(round rolloutRound) time.Duration { return round.watchCPU })),
			fmt.Sprintf("%.0f", r.median(func(round rolloutRound) float64 { return round.reconciles })),
			fmt.Sprintf("%.2f", r.median(func(round rolloutRound) float64 { return round.writesPerPod }))})
	}
	table([]string{"pods", "maxUnavailable", "operator", "pods alone", "floor", "operator vs floor", "each round",
		fmt.Sprintf("floor with %d writers (operator vs it)", o.compared), "manager CPU per pod", "floor client CPU per pod", "a pod watch alone, CPU per pod", "reconciles", "pod writes per upgraded pod"}, rows)
	fmt.Printf("\n(operator: until the pods report the new image and the status counts them; pods alone: until the pods report it, where the floor stops; " +
		"a pod watch alone: this bench's own watch of the pods during the operator's rollout, a protobuf informer that writes nothing)\n")
	fmt.Printf("\nIn-place resize of the sidecar's CPU and memory: time until every pod is updated and reports the new resources; " +
		"the floor makes the same pods/resize calls and waits for the same statuses\n\n")
	table([]string{"pods", "maxUnavailable", "operator", "floor", "operator vs floor", "each round", "manager CPU per pod", "floor client CPU per pod", "reconciles", "resizes + pod writes per pod"}, resizeRows)
	fmt.Printf("\nManager peak RSS: %.1f MiB (VmHWM). Sampled every 100 ms: anonymous memory (heap, stacks) peaked at %.1f MiB; "+
		"the binary's own mapped pages (file-backed, shared with the page cache) were at most %.1f MiB.\n", rss, peak.anon, peak.file)
	ok = ok && rss <= 60
	fmt.Printf("Targets: image rollouts ≤ %.1f× the floor at 100%% and 10%% (%.1f× below 1000 pods), resizes ≤ %.1f×, manager CPU ≤ %.0f ms per upgraded pod, "+
		"one write per upgraded pod (one resize and one write per resized pod), manager RSS ≤ 60 MiB: %s\n",
		largeRolloutRatio, rolloutRatio, rolloutRatio, cpuPerUpgradedPod, verdict(ok))
	return ok, nil
}

// rolloutsOf creates a Deployment of size pods with a SidecarSet and runs
// the rollouts on it. For the largest size, the manager's CPU is profiled
// during the second round of each (with --profile-dir), and the resizes
// follow (with --resizes).
func (e *env) rolloutsOf(ctx context.Context, size int, o rolloutOptions, largest bool) ([]rolloutRun, error) {
	ns := fmt.Sprintf("bench-rollout-%d", size)
	app := ns
	if err := e.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{benchLabel: "rollout"}},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: ns}},
			// The sidecar requests CPU and memory from the start: the pods
			// are Burstable, and a resize keeps them so.
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: agent, Image: "busybox:1.0",
				Resources: corev1.ResourceRequirements{Requests: sidecarRequests(1)}}}},
		},
	}
	_ = e.client.Delete(ctx, ss)
	if err := e.client.Create(ctx, ss); err != nil {
		return nil, err
	}
	defer func() {
		bg := context.WithoutCancel(ctx)
		_ = e.client.Delete(bg, ss)
		_ = e.client.Delete(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}()
	labels := map[string]string{"app": app}
	replicas := int32(size)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
			},
		},
	}
	if err := e.client.Create(ctx, d); err != nil {
		return nil, err
	}
	w, err := e.watchPods(ctx, informers.WithNamespace(ns))
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := w.wait(ctx, size, "busybox:1.0", 5*time.Minute); err != nil {
		return nil, fmt.Errorf("waiting for %d injected pods: %w", size, err)
	}

	image := 0
	var runs []rolloutRun
	for _, mu := range []string{"100%", "10%"} {
		run := rolloutRun{pods: size, maxUnavailable: mu}
		for i := range o.rounds {
			var prof *profiler
			if largest && i == 1 {
				prof = o.profile.lasting(run.rounds[0].ours)
			}
			round, err := e.imageRound(ctx, w, ss.Name, size, mu, &image, o.writers, o.compared,
				prof, fmt.Sprintf("rollout of %d pods at %s", size, mu))
			if err != nil {
				return nil, err
			}
			run.rounds = append(run.rounds, round)
		}
		runs = append(runs, run)
	}
	if largest && o.resizes {
		resized, err := e.resizeRollouts(ctx, ss.Name, w, size, o)
		if err != nil {
			return nil, err
		}
		runs = append(runs, resized...)
	}
	return runs, nil
}

// window is how many pods a rollout at maxUnavailable mu has in flight.
func window(size int, mu string) int {
	if mu == "10%" {
		return int(math.Ceil(float64(size) * 0.1))
	}
	return size // 100%
}

// imageRound upgrades every pod's sidecar image with the operator, measuring
// its time, its CPU and its pod writes (and profiling it with prof); then
// pauses the rollout and patches the pods' images directly with the floor
// client, at `writers` parallel writers and, when compared is not 0, at
// that many; then brings the SidecarSet in line with the pods again.
func (e *env) imageRound(ctx context.Context, w *podWatch, name string, size int, mu string, image *int, writers, compared int, prof *profiler, label string) (rolloutRound, error) {
	var round rolloutRound
	*image++
	next := fmt.Sprintf("busybox:1.%d", *image)
	before, err := e.apiserverMetrics(ctx)
	if err != nil {
		return round, err
	}
	cpu, reconciles := e.cpuSnapshot()["manager"], e.reconciles(ctx)
	profiled := prof.start(ctx, e, label)
	watchCPU := processCPU()
	start := time.Now()
	if err := e.setSidecarSet(ctx, name, next, mu, false); err != nil {
		return round, err
	}
	if err := w.wait(ctx, size, next, 30*time.Minute); err != nil {
		return round, fmt.Errorf("operator rollout to %s: %w", next, err)
	}
	round.oursPods = time.Since(start)
	if err := e.waitStatusUpdated(ctx, name, size); err != nil {
		return round, err
	}
	round.ours, round.watchCPU = time.Since(start), processCPU()-watchCPU
	round.managerCPU, round.reconciles = e.cpuSnapshot()["manager"]-cpu, e.reconciles(ctx)-reconciles
	profiled()
	if prof != nil && prof.dir != "" && prof.managerAddr != "" {
		fmt.Printf("bench: the manager's CPU profile of the %s (%s):\n", label, prof.path(label, "manager"))
		printCPUProfile(prof.path(label, "manager"), size, rolloutParts)
	}
	after, err := e.apiserverMetrics(ctx)
	if err != nil {
		return round, err
	}
	round.writesPerPod = (podWrites(after) - podWrites(before)) / float64(size)

	if err := e.setSidecarSet(ctx, name, "", mu, true); err != nil {
		return round, err
	}
	for i, n := range []int{writers, compared} {
		if n == 0 {
			continue
		}
		*image++
		next = fmt.Sprintf("busybox:1.%d", *image)
		cpu := processCPU()
		start = time.Now()
		if err := e.floorRollout(ctx, w, next, window(size, mu), n); err != nil {
			return round, err
		}
		if i == 0 {
			round.floor, round.floorCPU = time.Since(start), processCPU()-cpu
		} else {
			round.compared = time.Since(start)
		}
	}
	if err := e.setSidecarSet(ctx, name, next, mu, false); err != nil {
		return round, err
	}
	return round, e.waitStatusUpdated(ctx, name, size)
}

// resizeRollouts changes the sidecar's CPU and memory with maxUnavailable
// 100% and 10%, and compares each rollout with a client making the same
// pods/resize calls at the same parallelism and window, waiting for the
// same statuses (the floor). Each step doubles, then triples, ... the
// sidecar's requests, so every run resizes every pod.
func (e *env) resizeRollouts(ctx context.Context, name string, w *podWatch, size int, o rolloutOptions) ([]rolloutRun, error) {
	step := 1
	var runs []rolloutRun
	for _, mu := range []string{"100%", "10%"} {
		run := rolloutRun{pods: size, maxUnavailable: mu, resize: true}
		for range o.rounds {
			round, err := e.resizeRound(ctx, name, w, size, mu, &step, o.writers)
			if err != nil {
				return nil, err
			}
			run.rounds = append(run.rounds, round)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// resizeRound resizes every pod's sidecar with the operator, then with the
// floor client (the rollout paused), and brings the SidecarSet in line with
// the pods again.
func (e *env) resizeRound(ctx context.Context, name string, w *podWatch, size int, mu string, step *int, writers int) (rolloutRound, error) {
	var round rolloutRound
	*step++
	before, err := e.apiserverMetrics(ctx)
	if err != nil {
		return round, err
	}
	cpu, reconciles := e.cpuSnapshot()["manager"], e.reconciles(ctx)
	start := time.Now()
	if err := e.setSidecarSetRequests(ctx, name, sidecarRequests(*step), mu, false); err != nil {
		return round, err
	}
	if err := w.waitResized(ctx, size, sidecarRequests(*step), 10*time.Minute); err != nil {
		return round, fmt.Errorf("operator resize to step %d: %w", *step, err)
	}
	round.oursPods = time.Since(start)
	if err := e.waitStatusUpdated(ctx, name, size); err != nil {
		return round, err
	}
	round.ours = time.Since(start)
	round.managerCPU, round.reconciles = e.cpuSnapshot()["manager"]-cpu, e.reconciles(ctx)-reconciles
	after, err := e.apiserverMetrics(ctx)
	if err != nil {
		return round, err
	}
	round.writesPerPod = (podWrites(after) - podWrites(before)) / float64(size)
	round.resizesPerPod = (podResizes(after) - podResizes(before)) / float64(size)

	*step++
	if err := e.setSidecarSetRequests(ctx, name, nil, mu, true); err != nil {
		return round, err
	}
	cpu = processCPU()
	start = time.Now()
	if err := e.floorResize(ctx, w, sidecarRequests(*step), window(size, mu), writers); err != nil {
		return round, err
	}
	round.floor, round.floorCPU = time.Since(start), processCPU()-cpu
	// The SidecarSet in line with the pods again: nothing left to resize,
	// each pod records the revision.
	if err := e.setSidecarSetRequests(ctx, name, sidecarRequests(*step), mu, false); err != nil {
		return round, err
	}
	return round, e.waitStatusUpdated(ctx, name, size)
}

// sidecarRequests are the sidecar's requests at a step of the resize runs.
func sidecarRequests(step int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(10*step), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(16*step)<<20, resource.BinarySI),
	}
}

// setSidecarSetRequests sets the sidecar's requests (if non-nil),
// maxUnavailable and paused.
func (e *env) setSidecarSetRequests(ctx context.Context, name string, requests corev1.ResourceList, maxUnavailable string, paused bool) error {
	s := &appsv1beta1.SidecarSet{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	if requests != nil {
		s.Spec.Containers[0].Resources.Requests = requests
	}
	mu := intstr.FromString(maxUnavailable)
	s.Spec.UpdateStrategy.MaxUnavailable = &mu
	s.Spec.UpdateStrategy.Paused = paused
	return e.client.Patch(ctx, s, patch)
}

// floorResize resizes the sidecar of every pod the watch holds through
// pods/resize, with `writers` parallel writers, keeping at most `window`
// pods in flight (resized, not yet applied by the kubelet), and waits until
// every pod reports the new resources.
func (e *env) floorResize(ctx context.Context, w *podWatch, requests corev1.ResourceList, window, writers int) error {
	res, err := json.Marshal(corev1.ResourceRequirements{Requests: requests})
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":%s}]}}`, agent, res))
	return e.floorCalls(ctx, w, window, writers, func(pod *corev1.Pod) error {
		return e.client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
	}, func(p *corev1.Pod) bool { return resized(p, requests) })
}

// setSidecarSet sets the sidecar image (if non-empty), maxUnavailable and paused.
func (e *env) setSidecarSet(ctx context.Context, name, image, maxUnavailable string, paused bool) error {
	s := &appsv1beta1.SidecarSet{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	if image != "" {
		s.Spec.Containers[0].Image = image
	}
	mu := intstr.FromString(maxUnavailable)
	s.Spec.UpdateStrategy.MaxUnavailable = &mu
	s.Spec.UpdateStrategy.Paused = paused
	return e.client.Patch(ctx, s, patch)
}

// waitStatusUpdated waits until the SidecarSet's status shows every pod updated.
func (e *env) waitStatusUpdated(ctx context.Context, name string, size int) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		s := &appsv1beta1.SidecarSet{}
		if err := e.client.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
			return false, err
		}
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.MatchedPods == int32(size) && st.UpdatedPods == int32(size), nil
	})
}

// floorRollout patches the sidecar image of every pod the watch holds,
// with `writers` parallel writers, keeping at most `window` pods in flight
// (patched, new image not yet reported), and waits until every pod reports
// the new image.
func (e *env) floorRollout(ctx context.Context, w *podWatch, image string, window, writers int) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"image":%q}]}}`, agent, image))
	return e.floorCalls(ctx, w, window, writers, func(pod *corev1.Pod) error {
		return e.client.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
	}, func(p *corev1.Pod) bool { return runs(p, image) })
}

// floorCalls makes one call per pod the watch holds, with `writers`
// parallel writers, keeping at most `window` pods in flight (called, not yet
// done), and waits until every pod is done.
func (e *env) floorCalls(ctx context.Context, w *podWatch, window, writers int, call func(*corev1.Pod) error, done func(*corev1.Pod) bool) error {
	var pods []types.NamespacedName
	for _, obj := range w.store.List() {
		p := obj.(*corev1.Pod)
		pods = append(pods, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
	slots := make(chan struct{}, window)
	inFlight := map[string]bool{} // guarded by w.mu
	pw := w.begin(done, func(key string) {
		if inFlight[key] {
			delete(inFlight, key)
			<-slots
		}
	})
	defer w.end(pw)
	work := make(chan types.NamespacedName)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range writers {
		wg.Go(func() {
			for key := range work {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				if err := call(pod); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for _, key := range pods {
		slots <- struct{}{}
		w.mu.Lock()
		if pw.isDone[key.String()] {
			<-slots
		} else {
			inFlight[key.String()] = true
		}
		w.mu.Unlock()
		work <- key
	}
	close(work)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return w.until(ctx, pw, len(pods), 30*time.Minute)
}

// resized reports whether a pod's sidecar requests the CPU and memory, in
// its spec and as the kubelet reports them, and the pod is ready.
func resized(p *corev1.Pod, requests corev1.ResourceList) bool {
	same := func(l corev1.ResourceList) bool {
		return l.Cpu().Cmp(*requests.Cpu()) == 0 && l.Memory().Cmp(*requests.Memory()) == 0
	}
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Spec.Containers {
		if c.Name == agent && !same(c.Resources.Requests) {
			return false
		}
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == agent {
			return st.Resources != nil && same(st.Resources.Requests) && st.Ready
		}
	}
	return false
}

func runs(p *corev1.Pod, image string) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	specOK := false
	for _, c := range p.Spec.Containers {
		if c.Name == agent && c.Image == image {
			specOK = true
		}
	}
	if !specOK {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == agent {
			return s.Image == "docker.io/library/"+image && s.Ready
		}
	}
	return false
}
