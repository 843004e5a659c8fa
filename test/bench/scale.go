package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/promtext"
)

// The scale benchmark's objects.
const (
	scaleLabel     = "sidecarset-bench-scale"
	scaleApp       = "scale"
	scaleRollout   = "scale-rollout"
	scaleNamespace = "scale-%03d"
	scaleNSLabel   = "bench-scale-ns"
)

type scaleOptions struct {
	// sizes are the pod counts measured in turn (the last is the scale).
	sizes []int
	// namespaces hold the pods, one Deployment each.
	namespaces int
	// sidecarSets exist while the pods are measured; selecting of them
	// select pods.
	sidecarSets, selecting int
	writers                int
	webhook                webhookOptions
	healthAddr             string
	// pprofAddr is the manager's pprof address, profileDir where the idle
	// profiles go.
	pprofAddr, profileDir string
	// rollouts: the rollouts run at each size; keep: the objects stay.
	rollouts, keep bool
	// memorySettings are the Go memory settings the manager ran with
	// (GOMEMLIMIT, GOGC), as the dev environment starts it: the shipped
	// Deployment's.
	memorySettings string
	// figures is the file the largest size's figures are written to
	// (scaleFigures); none if empty.
	figures string
}

// sizeRun is what was measured at one number of pods.
type sizeRun struct {
	pods     int
	rollouts []rolloutRun
	idle     idleFigures
	calls    float64 // API requests per reconcile
}

// idleFigures is the manager at rest with the pods and SidecarSets.
type idleFigures struct {
	anon, file, heap float64 // MiB
	// held is what the Go heap held free, not returned to the system, when
	// the anonymous RSS was highest (MiB).
	held   float64
	cpu    time.Duration
	window time.Duration
	// heapProfile is where the heap profile taken at rest went.
	heapProfile string
}

// startFigures is the manager's start at the largest size.
type startFigures struct {
	ready, firstStatus time.Duration
	// err is why the start was not measured.
	err error
	// profile is the CPU profile of the start, if one was taken.
	profile string
}

// String says what was measured, or why nothing was.
func (f startFigures) String() string {
	if f.err != nil || f.ready == 0 || f.firstStatus == 0 {
		why := "the manager did not become ready"
		if f.err != nil {
			why = f.err.Error()
		}
		return "not measured (" + why + ")"
	}
	return fmt.Sprintf("webhooks serving after %.1f s, first status written after %.1f s", f.ready.Seconds(), f.firstStatus.Seconds())
}

// met reports whether the manager was measured ready within 10 seconds.
func (f startFigures) met() bool {
	return f.err == nil && f.ready > 0 && f.firstStatus > 0 && f.ready <= 10*time.Second && f.firstStatus <= 10*time.Second
}

// benchScale measures admission with up to sidecarSets SidecarSets, then,
// for each size, rollouts, the manager at idle and its API calls per
// reconcile with sidecarSets SidecarSets (selecting of them selecting
// pods), and last the manager's start at the largest size. Every figure is
// printed next to its floor or reference, with the targets' verdicts.
func benchScale(ctx context.Context, e *env, o scaleOptions) (bool, error) {
	if err := e.requireNodes(ctx, o.sizes[len(o.sizes)-1]); err != nil {
		return false, err
	}
	// A run interrupted before its deferred clean-up leaves thousands of
	// SidecarSets and pods behind; they would skew every figure.
	if err := e.removeScaleLeftovers(ctx, o); err != nil {
		return false, err
	}
	var pairings []pairing
	if len(o.webhook.counts) > 0 {
		var err error
		if pairings, err = e.measureAdmission(ctx, o.webhook); err != nil {
			return false, fmt.Errorf("admission: %w", err)
		}
		printAdmission(o.webhook, pairings)
	}
	// The admission's SidecarSets (this run's, or an interrupted run's) are
	// deleted as it ends, thousands of them, which takes the API server
	// minutes: measured beside them, the manager's memory would hold them
	// too.
	if err := e.waitBenchSidecarSetsGone(ctx); err != nil {
		return false, err
	}

	if !o.keep {
		defer func() {
			if err := e.cleanScale(context.WithoutCancel(ctx), o); err != nil {
				fmt.Fprintln(os.Stderr, "bench: cleaning up:", err)
			}
		}()
	}
	if err := e.createScaleObjects(ctx, o); err != nil {
		return false, err
	}
	// The manager at rest with the SidecarSets and no pod: what does not
	// depend on the pods, measured rather than extrapolated.
	noPods, err := e.idleFigures(ctx, o, 0)
	if err != nil {
		return false, err
	}
	w, err := e.watchPods(ctx, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = scaleLabel + "=true" }))
	if err != nil {
		return false, err
	}
	defer w.stop()
	var runs []sizeRun
	image := 1
	for _, size := range o.sizes {
		r := sizeRun{pods: size}
		if err := e.scaleTo(ctx, o, size); err != nil {
			return false, err
		}
		if err := w.wait(ctx, size, fmt.Sprintf("busybox:1.%d", image), 15*time.Minute); err != nil {
			return false, fmt.Errorf("waiting for %d injected pods: %w", size, err)
		}
		if err := e.waitStatusUpdated(ctx, scaleRollout, size); err != nil {
			return false, err
		}
		for _, mu := range []string{"100%", "10%"} {
			if !o.rollouts {
				break
			}
			run, err := e.scaleRolloutRun(ctx, w, o, size, mu, &image)
			if err != nil {
				return false, err
			}
			r.rollouts = append(r.rollouts, run)
		}
		if r.idle, err = e.idleFigures(ctx, o, size); err != nil {
			return false, err
		}
		if r.calls, err = e.callsPerReconcile(ctx, o); err != nil {
			return false, err
		}
		runs = append(runs, r)
		printSize(r)
	}
	if o.figures != "" {
		if err := writeScaleFigures(o.figures, figuresOf(o, noPods, runs)); err != nil {
			return false, err
		}
	}
	if o.memorySettings, err = e.managerMemorySettings(); err != nil {
		return false, err
	}
	start, err := e.restartManager(ctx, o, runs[len(runs)-1].pods)
	if err != nil {
		fmt.Printf("bench: restarting the manager: %v\n", err)
		start.err = err
	}
	return printScale(o, pairings, noPods, runs, start), nil
}

// requireNodes fails unless the cluster has room for the pods (110 each).
func (e *env) requireNodes(ctx context.Context, pods int) error {
	nodes := &corev1.NodeList{}
	if err := e.client.List(ctx, nodes); err != nil {
		return err
	}
	need := int(math.Ceil(float64(pods)*1.05/110)) + 2
	if len(nodes.Items) < need {
		return fmt.Errorf("%d nodes, %d pods need %d: run `make bench-scale`, which starts the dev cluster with enough", len(nodes.Items), pods, need)
	}
	return nil
}

// scaleSidecarSet is the i-th SidecarSet of the scale run. The first
// injects the sidecar the rollouts upgrade into every pod; the next
// selecting-1 select pods in mixed ways (matchLabels, expressions,
// spec.namespace, namespaceSelector) and never update; the rest select no
// pod.
func scaleSidecarSet(i int, o scaleOptions) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%04d", i), Labels: map[string]string{scaleLabel: "true"}}}
	s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	container := func(name string) []appsv1beta1.SidecarContainer {
		return []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.36"}}}
	}
	ns := fmt.Sprintf(scaleNamespace, i%o.namespaces)
	switch {
	case i == 0:
		s.Name = scaleRollout
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": scaleApp}}
		s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: agent, Image: "busybox:1.1"}}}
		s.Spec.UpdateStrategy = appsv1beta1.SidecarSetUpdateStrategy{Type: appsv1beta1.RollingUpdateSidecarSetStrategyType}
	case i < o.selecting:
		name := fmt.Sprintf("extra-%02d", i)
		s.Spec.Containers = container(name)
		switch i % 4 {
		case 0:
			s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": scaleApp, "shard": strconv.Itoa(i)}}
		case 1:
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "shard", Operator: metav1.LabelSelectorOpIn, Values: []string{strconv.Itoa(i)}},
				{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		case 2:
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: ns}}
			s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"shard": strconv.Itoa(i)}}
		default:
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{scaleNSLabel: ns}}
			s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"shard": strconv.Itoa(i)}}
		}
	default:
		s.Spec.Containers = container("idle")
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("idle-%04d", i)}}
	}
	return s
}

// createScaleObjects creates the namespaces, their (empty) Deployments and
// the SidecarSets, 20 at a time, and waits until the controller has seen
// every SidecarSet.
func (e *env) createScaleObjects(ctx context.Context, o scaleOptions) error {
	var jobs []func() error
	for i := range o.namespaces {
		name := fmt.Sprintf(scaleNamespace, i)
		jobs = append(jobs, func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scaleLabel: "true", scaleNSLabel: name}}}
			if err := e.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	if err := parallel(jobs); err != nil {
		return fmt.Errorf("creating namespaces: %w", err)
	}
	jobs = nil
	for i := range o.sidecarSets {
		jobs = append(jobs, func() error {
			if err := e.client.Create(ctx, scaleSidecarSet(i, o)); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	start := time.Now()
	if err := parallel(jobs); err != nil {
		return fmt.Errorf("creating SidecarSets: %w", err)
	}
	fmt.Printf("bench: %d SidecarSets created in %.0f s\n", o.sidecarSets, time.Since(start).Seconds())
	jobs = nil
	for i := range o.namespaces {
		ns := fmt.Sprintf(scaleNamespace, i)
		jobs = append(jobs, func() error {
			return client.IgnoreAlreadyExists(e.client.Create(ctx, scaleDeployment(ns, i, 0)))
		})
	}
	if err := parallel(jobs); err != nil {
		return fmt.Errorf("creating Deployments: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &appsv1beta1.SidecarSetList{}
		if err := e.client.List(ctx, list, client.MatchingLabels{scaleLabel: "true"}); err != nil {
			return false, err
		}
		for _, s := range list.Items {
			if s.Status.ObservedGeneration != s.Generation {
				return false, nil
			}
		}
		return len(list.Items) == o.sidecarSets, nil
	})
}

// scaleDeployment is the Deployment of the i-th namespace: its pods carry
// the shard label some selecting SidecarSets look for.
func scaleDeployment(ns string, i int, replicas int32) *appsv1.Deployment {
	podLabels := map[string]string{"app": scaleApp, "shard": strconv.Itoa(i % 50), scaleLabel: "true"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: scaleApp, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": scaleApp}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
			},
		},
	}
}

// scaleTo spreads size pods over the namespaces' Deployments.
func (e *env) scaleTo(ctx context.Context, o scaleOptions, size int) error {
	var jobs []func() error
	for i := range o.namespaces {
		replicas := int32(size / o.namespaces)
		if i < size%o.namespaces {
			replicas++
		}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: scaleApp, Namespace: fmt.Sprintf(scaleNamespace, i)}}
		jobs = append(jobs, func() error {
			patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
			return e.client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))
		})
	}
	return parallel(jobs)
}

// scaleRolloutRun upgrades every pod's sidecar with the operator, then
// with the floor client (the rollout paused), at one maxUnavailable.
func (e *env) scaleRolloutRun(ctx context.Context, w *podWatch, o scaleOptions, size int, mu string, image *int) (rolloutRun, error) {
	round, err := e.imageRound(ctx, w, scaleRollout, size, mu, image, o.writers, 0, nil, "")
	return rolloutRun{pods: size, maxUnavailable: mu, rounds: []rolloutRound{round}}, err
}

// managerScrape reads the manager's own /metrics.
func (e *env) managerScrape(ctx context.Context) (promtext.Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.managerMetrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return promtext.Parse(raw)
}

// idleFigures samples the manager at rest: after 15 s of quiet, a forced
// garbage collection (the manager's pprof heap endpoint, whose profile is
// kept) gives the live heap; then its resident memory and CPU over 30 s,
// with a CPU profile of that window.
func (e *env) idleFigures(ctx context.Context, o scaleOptions, pods int) (idleFigures, error) {
	var f idleFigures
	select {
	case <-ctx.Done():
		return f, ctx.Err()
	case <-time.After(15 * time.Second):
	}
	if o.pprofAddr == "" {
		return f, errors.New("the scale benchmark needs the manager's pprof endpoint (--manager-pprof) to force a garbage collection")
	}
	heap, err := e.managerPprof(ctx, o, "heap?gc=1")
	if err != nil {
		return f, err
	}
	f.heapProfile = fmt.Sprintf("%s/idle-%d-pods.heap.pprof", o.profileDir, pods)
	writeProfile(f.heapProfile, heap, nil)
	s, err := e.managerScrape(ctx)
	if err != nil {
		return f, err
	}
	alloc, _ := s.Sum("go_memstats_heap_alloc_bytes", nil)
	f.heap = alloc / (1 << 20)
	f.window = 30 * time.Second
	cpu0 := e.cpuSnapshot()
	profiled := make(chan []byte, 1)
	go func() {
		raw, _ := e.managerPprof(ctx, o, fmt.Sprintf("profile?seconds=%d", int(f.window.Seconds())))
		profiled <- raw
	}()
	deadline := time.Now().Add(f.window)
	for time.Now().Before(deadline) {
		m, err := e.managerMemory()
		if err != nil {
			return f, err
		}
		if m["RssAnon"] > f.anon {
			f.anon = m["RssAnon"]
			if s, err := e.managerScrape(ctx); err == nil {
				idle, _ := s.Sum("go_memstats_heap_idle_bytes", nil)
				released, _ := s.Sum("go_memstats_heap_released_bytes", nil)
				f.held = (idle - released) / (1 << 20)
			}
		}
		f.file = max(f.file, m["RssFile"])
		time.Sleep(time.Second)
	}
	f.cpu = e.cpuSnapshot().since(cpu0)["manager"]
	writeProfile(fmt.Sprintf("%s/idle-%d-pods.cpu.pprof", o.profileDir, pods), <-profiled, nil)
	return f, nil
}

// startProfileSeconds is the length of the CPU profile of a manager's
// start: past the 10 s target, to the first status write.
const startProfileSeconds = 15

// startProfile takes a CPU profile of seconds of the manager starting,
// once its pprof endpoint listens (it is asked for its command line until
// it answers, for at most listen); the returned function waits for the
// profile to be written to path.
func (e *env) startProfile(ctx context.Context, o scaleOptions, path string, seconds int, listen time.Duration) func() {
	var wg sync.WaitGroup
	wg.Go(func() {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, listen, true, func(ctx context.Context) (bool, error) {
			_, err := e.managerPprof(ctx, o, "cmdline")
			return err == nil, nil
		})
		var raw []byte
		if err == nil {
			raw, err = e.managerPprof(ctx, o, fmt.Sprintf("profile?seconds=%d", seconds))
		}
		writeProfile(path, raw, err)
	})
	return wg.Wait
}

// managerPprof reads one of the manager's pprof endpoints.
func (e *env) managerPprof(ctx context.Context, o scaleOptions, path string) ([]byte, error) {
	return readPprof(ctx, o.pprofAddr, path)
}

// callsPerReconcile touches every selecting SidecarSet (an annotation,
// which the controller reconciles) and divides the manager's API requests
// by its reconciles meanwhile.
func (e *env) callsPerReconcile(ctx context.Context, o scaleOptions) (float64, error) {
	before, err := e.managerScrape(ctx)
	if err != nil {
		return 0, err
	}
	r0, _ := before.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "sidecarset"})
	q0, _ := before.Sum("rest_client_requests_total", nil)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for i := range o.selecting {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: scaleSidecarSet(i, o).Name}}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.sidecarset-operator.dev/touched":%q}}}`, stamp)
		if err := e.client.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return 0, err
		}
	}
	var calls float64
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, false, func(ctx context.Context) (bool, error) {
		after, err := e.managerScrape(ctx)
		if err != nil {
			return false, err
		}
		r1, _ := after.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "sidecarset"})
		q1, _ := after.Sum("rest_client_requests_total", nil)
		if r1-r0 < float64(o.selecting) {
			return false, nil
		}
		calls = (q1 - q0) / (r1 - r0)
		return true, nil
	})
	return calls, err
}

// managerMemorySettings reads the Go memory settings of the running dev
// manager from its environment.
func (e *env) managerMemorySettings() (string, error) {
	data, err := os.ReadFile(e.pidFile)
	if err != nil {
		return "", err
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%s/environ", strings.TrimSpace(string(data))))
	if err != nil {
		return "", err
	}
	var settings []string
	for v := range strings.SplitSeq(string(environ), "\x00") {
		if name, value, _ := strings.Cut(v, "="); name == "GOMEMLIMIT" || name == "GOGC" {
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && name == "GOMEMLIMIT" {
				value = fmt.Sprintf("%d MiB", n>>20)
			}
			settings = append(settings, name+"="+value)
		}
	}
	if len(settings) == 0 {
		return "GOGC=100, no GOMEMLIMIT", nil
	}
	return strings.Join(settings, ", "), nil
}

// restartManager stops the dev manager, makes a SidecarSet's status stale
// while none runs, starts it again with the same command line, and
// measures the time until it is ready (webhooks serving) and until that
// SidecarSet's status is current again (its first status write). A CPU
// profile of the manager's first startProfileSeconds, from as soon as its
// pprof endpoint answers, goes to the profile directory.
func (e *env) restartManager(ctx context.Context, o scaleOptions, pods int) (startFigures, error) {
	var f startFigures
	data, err := os.ReadFile(e.pidFile)
	if err != nil {
		return f, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return f, err
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return f, err
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	// Its environment (the memory settings) is read while it runs: /proc
	// has none once it stopped.
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return f, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return f, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	}); err != nil {
		return f, fmt.Errorf("the manager did not stop: %w", err)
	}
	// The SidecarSet's status is made stale while no manager runs: its
	// first status write then shows. (Its spec cannot change now: the
	// SidecarSet webhooks are the manager's; its status goes through none.)
	s := &appsv1beta1.SidecarSet{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: scaleRollout}, s); err != nil {
		return f, err
	}
	generation := s.Generation
	stale := []byte(`{"status":{"observedGeneration":0}}`)
	if err := e.client.Status().Patch(ctx, s, client.RawPatch(types.MergePatchType, stale)); err != nil {
		return f, err
	}

	logFile, err := os.OpenFile(e.pidFile[:strings.LastIndex(e.pidFile, "/")+1]+"manager.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return f, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return f, err
	}
	if o.pprofAddr != "" {
		f.profile = fmt.Sprintf("%s/start-%d-pods.cpu.pprof", o.profileDir, pods)
		profiled := e.startProfile(ctx, o, f.profile, startProfileSeconds, 10*time.Second)
		defer profiled()
	}
	if err := os.WriteFile(e.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return f, err
	}
	_ = cmd.Process.Release()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if f.ready == 0 {
			if resp, err := http.Get("http://" + o.healthAddr + "/readyz"); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					f.ready = time.Since(start)
				}
			}
		}
		if f.firstStatus == 0 {
			got := &appsv1beta1.SidecarSet{}
			if err := e.client.Get(ctx, client.ObjectKey{Name: scaleRollout}, got); err == nil && got.Status.ObservedGeneration == generation {
				f.firstStatus = time.Since(start)
			}
		}
		return f.ready > 0 && f.firstStatus > 0, nil
	})
	return f, err
}

// benchStart measures the manager's start alone, with the SidecarSets and
// pods a scale run left (bench scale --keep): a quick check of the start
// target while working on it.
func benchStart(ctx context.Context, e *env, o scaleOptions) (bool, error) {
	var pods corev1.PodList
	if err := e.client.List(ctx, &pods, client.MatchingLabels{scaleLabel: "true"}); err != nil {
		return false, err
	}
	var sets appsv1beta1.SidecarSetList
	if err := e.client.List(ctx, &sets, client.MatchingLabels{scaleLabel: "true"}); err != nil {
		return false, err
	}
	if len(pods.Items) == 0 || !slices.ContainsFunc(sets.Items, func(s appsv1beta1.SidecarSet) bool { return s.Name == scaleRollout }) {
		return false, errors.New("no scale run's pods and SidecarSets here: run bench scale --keep first")
	}
	start, err := e.restartManager(ctx, o, len(pods.Items))
	if err != nil {
		return false, err
	}
	fmt.Printf("Manager start with %d pods and %d SidecarSets: %s: %s\n", len(pods.Items), len(sets.Items), start, verdict(start.met()))
	return start.met(), nil
}

// cleanScale deletes the scale run's SidecarSets, until they are gone, and
// its namespaces.
func (e *env) cleanScale(ctx context.Context, o scaleOptions) error {
	err := e.deleteSidecarSetsUntilGone(ctx, client.MatchingLabels{scaleLabel: "true"})
	for i := range o.namespaces {
		_ = e.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf(scaleNamespace, i)}})
	}
	return err
}

// waitBenchSidecarSetsGone deletes the admission's SidecarSets until they
// are gone.
func (e *env) waitBenchSidecarSetsGone(ctx context.Context) error {
	start := time.Now()
	if err := e.deleteSidecarSetsUntilGone(ctx, client.HasLabels{benchLabel}); err != nil {
		return fmt.Errorf("waiting for the admission's SidecarSets to be deleted: %w", err)
	}
	fmt.Printf("bench: the admission's SidecarSets deleted after %.0f s more\n", time.Since(start).Seconds())
	return nil
}

// sidecarSetLabels selects SidecarSets both to list and to delete.
type sidecarSetLabels interface {
	client.ListOption
	client.DeleteAllOfOption
}

// deleteSidecarSetsUntilGone deletes the SidecarSets the labels select
// until none is left. One collection delete does not finish 5 000 of them:
// the API server asks the validating webhook about each and gives up on the
// request after a minute, with about 1 800 deleted (2026-11-27), so it is
// asked again while any is left that is not being deleted.
func (e *env) deleteSidecarSetsUntilGone(ctx context.Context, labels sidecarSetLabels) error {
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		// Their metadata only: thousands of specs every two seconds would
		// load the API server the deletion waits on.
		sets := &metav1.PartialObjectMetadataList{}
		sets.SetGroupVersionKind(appsv1beta1.GroupVersion.WithKind("SidecarSetList"))
		if err := e.client.List(ctx, sets, labels); err != nil {
			return false, err
		}
		if slices.ContainsFunc(sets.Items, func(s metav1.PartialObjectMetadata) bool { return s.DeletionTimestamp == nil }) {
			// An error is a request that timed out: the poll asks again.
			_ = e.client.DeleteAllOf(ctx, &appsv1beta1.SidecarSet{}, labels)
		}
		return len(sets.Items) == 0, nil
	})
}

// removeScaleLeftovers deletes what an interrupted run left and waits until
// it is gone.
func (e *env) removeScaleLeftovers(ctx context.Context, o scaleOptions) error {
	if err := e.cleanScale(ctx, o); err != nil {
		return fmt.Errorf("removing an earlier run's SidecarSets: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		var namespaces corev1.NamespaceList
		if err := e.client.List(ctx, &namespaces, client.MatchingLabels{scaleLabel: "true"}); err != nil {
			return false, err
		}
		return len(namespaces.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("removing an earlier run's namespaces: %w", err)
	}
	return nil
}

// parallelism is how many API requests the scale set-up issues at once.
const parallelism = 20

// parallel runs the jobs, parallelism at a time, and returns the first
// error.
func parallel(jobs []func() error) error {
	work := make(chan func() error)
	errs := make(chan error, len(jobs))
	var wg sync.WaitGroup
	for range parallelism {
		wg.Go(func() {
			for job := range work {
				if err := job(); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// printSize prints one size's figures as soon as they are measured, so
// that a failure later loses none.
func printSize(r sizeRun) {
	for _, ro := range r.rollouts {
		round := ro.rounds[0]
		fmt.Printf("bench: %d pods, maxUnavailable %s: operator %.1f s, floor %.1f s (%.2f×), %.2f pod writes per pod, manager CPU %.2f ms per pod\n",
			r.pods, ro.maxUnavailable, round.ours.Seconds(), round.floor.Seconds(), round.ratio(), round.writesPerPod,
			float64(round.managerCPU)/float64(r.pods)/float64(time.Millisecond))
	}
	fmt.Printf("bench: %d pods at rest: RSS %.0f + %.0f MiB (the Go heap holding %.0f MiB free), live heap %.1f MiB, CPU %s over %s, %.1f API requests per reconcile\n",
		r.pods, r.idle.anon, r.idle.file, r.idle.held, r.idle.heap, r.idle.cpu, r.idle.window, r.calls)
}

// printScale prints the scale run's tables and the targets' verdicts, and
// reports whether every target was met.
// heapGrowth is how much the live heap grew per 1000 pods from one size to a
// larger one.
func heapGrowth(from, to sizeRun) float64 {
	return (to.idle.heap - from.idle.heap) / (float64(to.pods-from.pods) / 1000)
}

func printScale(o scaleOptions, pairings []pairing, noPods idleFigures, runs []sizeRun, start startFigures) bool {
	largest := runs[len(runs)-1]
	fmt.Printf("\nScale: %d SidecarSets (%d selecting pods), pods in %d namespaces (Deployments); rollouts of the sidecar every pod carries, against a client patching the same pods at the same parallelism (%d) and window\n\n",
		o.sidecarSets, o.selecting, o.namespaces, o.writers)
	var rows [][]string
	for _, r := range runs {
		for _, ro := range r.rollouts {
			round := ro.rounds[0]
			rows = append(rows, []string{strconv.Itoa(r.pods), ro.maxUnavailable, fmt.Sprintf("%.1f s", round.ours.Seconds()),
				fmt.Sprintf("%.1f s", round.floor.Seconds()), fmt.Sprintf("%.2f×", round.ratio()), fmt.Sprintf("%.2f", round.writesPerPod),
				fmt.Sprintf("%.2f ms", ro.perPod(func(round rolloutRound) time.Duration { return round.managerCPU }))})
		}
	}
	table([]string{"pods", "maxUnavailable", "operator", "floor", "operator vs floor", "pod writes per upgraded pod", "manager CPU per upgraded pod"}, rows)

	fmt.Printf("\nThe manager at rest, by number of pods (RSS: the most seen over %s, anonymous + file-backed; live heap: allocated right after a forced garbage collection; CPU over the same window; heap and CPU profiles in %s)\n\n",
		runs[0].idle.window, o.profileDir)
	rows = nil
	// The first row is the manager with the SidecarSets and no pod (no
	// rollout ran, no reconcile is counted).
	prev := sizeRun{idle: noPods}
	for _, r := range append([]sizeRun{prev}, runs...) {
		growth, calls := "-", "-"
		if r.pods > 0 {
			growth, calls = fmt.Sprintf("%.2f MiB", heapGrowth(prev, r)), fmt.Sprintf("%.1f", r.calls)
		}
		rows = append(rows, []string{strconv.Itoa(r.pods), fmt.Sprintf("%.0f MiB", r.idle.anon+r.idle.file),
			fmt.Sprintf("%.0f + %.0f MiB", r.idle.anon, r.idle.file), fmt.Sprintf("%.1f MiB", r.idle.heap), growth,
			fmt.Sprintf("%.1f%%", 100*r.idle.cpu.Seconds()/r.idle.window.Seconds()), calls})
		prev = r
	}
	table([]string{"pods", "RSS", "anonymous + file", "live heap", "live heap per 1000 more pods", "CPU at idle", "API requests per reconcile"}, rows)
	fmt.Printf("\nManager start with %d pods and %d SidecarSets: %s\n", largest.pods, o.sidecarSets, start)

	byCount := map[string]pairing{}
	for _, pr := range pairings {
		byCount[pr.label] = pr
	}
	rate := func(label string) float64 {
		return median(byCount[label].runs, func(c creation) float64 { return c.podsPerSecond() })
	}
	// The pods/s of each round against its own floor (the API server alone,
	// measured just before): the floors move by a fifth between rounds on
	// this machine, more than the 10% the target allows.
	ofFloor := func(label string) float64 {
		return medianPairs(byCount[label], rateVsFloor)
	}
	perPod := func(label, component string) time.Duration { return byCount[label].cpuPerPod(component) }

	// A target's profile is the one that explains a miss; the CPU profile
	// of pods created is summarized under its target, per pod.
	cpuProfile := o.webhook.afterward.path(afterwardLabel, "manager")
	type target struct {
		what    string
		ok      bool
		profile string
	}
	var targets []target
	if !o.rollouts {
		targets = append(targets, target{"rollouts ≤ 1.2× the floor: not measured (--rollouts=false)", false, ""})
	}
	for _, ro := range largest.rollouts {
		ratio := ro.median(rolloutRound.ratio)
		targets = append(targets, target{fmt.Sprintf("rollout of %d pods at %s ≤ 1.2× the floor: %.2f×", largest.pods, ro.maxUnavailable, ratio), ratio <= 1.2, ""})
	}
	if len(o.webhook.counts) > 0 {
		one, most := "1 SidecarSets", fmt.Sprintf("%d SidecarSets", o.webhook.counts[len(o.webhook.counts)-1])
		admission := ofFloor(most) / ofFloor(one)
		targets = append(targets,
			target{fmt.Sprintf("admission with %s within 10%% of 1 SidecarSet, each against the floor beside it: %.2f× vs %.2f× the floor (%.2f; %.0f vs %.0f pods/s)",
				most, ofFloor(most), ofFloor(one), admission, rate(most), rate(one)), admission >= 0.9, ""},
			target{fmt.Sprintf("operator CPU per injected pod ≤ 0.5 ms: %s (the API server: %s%s)", ms(perPod(one, "manager")), ms(perPod(one, "kube-apiserver")), bareCPU(byCount[one])),
				perPod(one, "manager") <= 500*time.Microsecond, cpuProfile})
	}
	growth := heapGrowth(runs[0], largest)
	extrapolated := runs[0].idle.heap - growth*float64(runs[0].pods)/1000
	growthTarget := target{fmt.Sprintf("live heap per 1000 pods ≤ 4 MiB (its growth from %d to %d pods; the SidecarSets' share is the same at every size): %.2f MiB",
		runs[0].pods, largest.pods, growth), growth <= 4, largest.idle.heapProfile}
	extrapolatedText := fmt.Sprintf("; the live heap at %d pods less their growth: %.1f MiB", runs[0].pods, extrapolated)
	if len(runs) == 1 {
		// One size measures no growth (--sizes).
		growthTarget = target{"live heap per 1000 pods ≤ 4 MiB: not measured (one size; --sizes)", false, ""}
		extrapolatedText = ""
	}
	targets = append(targets, growthTarget,
		target{fmt.Sprintf("live heap independent of the pods with %d SidecarSets ≤ 35 MiB (measured with no pod%s): %.1f MiB",
			o.sidecarSets, extrapolatedText, noPods.heap), noPods.heap <= 35, noPods.heapProfile},
		target{fmt.Sprintf("live heap with %d pods and %d SidecarSets ≤ 80 MiB: %.1f MiB", largest.pods, o.sidecarSets, largest.idle.heap), largest.idle.heap <= 80, largest.idle.heapProfile},
		target{fmt.Sprintf("manager RSS with %d pods and %d SidecarSets ≤ 200 MiB, with the shipped memory settings (%s): %.0f MiB",
			largest.pods, o.sidecarSets, o.memorySettings, largest.idle.anon+largest.idle.file), largest.idle.anon+largest.idle.file <= 200, largest.idle.heapProfile},
		target{fmt.Sprintf("manager ready ≤ 10 s after start: %s", start), start.met(), start.profile},
	)
	fmt.Printf("\nTargets\n\n")
	ok := true
	for _, t := range targets {
		explained := ""
		if !t.ok && t.profile != "" {
			explained = " (profile: " + t.profile + ")"
		}
		fmt.Printf("- %s: %s%s\n", t.what, verdict(t.ok), explained)
		if !t.ok && t.profile != "" && t.profile == cpuProfile {
			printCPUProfile(t.profile, o.webhook.pods, admissionParts)
		}
		ok = ok && t.ok
	}
	return ok
}

// bareCPU is what the bare webhook cost per pod in a configuration's rounds,
// when it was measured: the floor of the operator's CPU per injected pod.
func bareCPU(pr pairing) string {
	b, ok := pr.bareRounds()
	if !ok {
		return ""
	}
	return fmt.Sprintf("; the bare webhook, which decides nothing: %s", ms(b.cpuPerPod(bareComponent)))
}
