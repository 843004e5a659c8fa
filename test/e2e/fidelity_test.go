package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Kwok kept honest: the same pod goes through the same changes on a kwok
// node and on the real node, and what a user observes of each step must be
// the same: which containers restarted, on which image, whether their image
// ID changed, their readiness and waiting reasons, the resources they
// report, the resize conditions. What the simulation still does
// differently, and why that is acceptable, is listed in
// test/cluster/stages/README.md; those differences are normalized here,
// each named where it is. The kubelet's events of each step are reported,
// not compared: a kubelet reports more of them (pulls, creations, starts)
// and some after the step's change shows in the pod.
var _ = ginkgo.Describe("The kwok kubelet against a real one", ginkgo.Label(realNodeLabel, "kwok", "fidelity"), func() {
	ginkgo.It("should show the same restarts, images, resizes and refusals on a kwok node as on the real node", func(ctx ginkgo.SpecContext) {
		kwokPod := fidelityPod(ctx, createNamespace(ctx, "fidelity-kwok"))
		realPod := fidelityPod(ctx, createRealNodeNamespace(ctx, "fidelity-real"))
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(getPod(ctx, g, kwokPod).Spec.NodeName).To(gomega.HavePrefix("node-"))
			onRealNode(g, getPod(ctx, g, realPod))
		}).WithContext(ctx).Should(gomega.Succeed())
		var blocker *corev1.Pod
		steps := []fidelityStep{
			{name: "the pod started"},
			// Before the native sidecar restarts: a kubelet v1.37 does not
			// lower the memory limit of a container that restarted
			// (test/cluster/stages/README.md).
			{name: "the native sidecar's memory limit lowered", change: resizePod("native", requirementsOf("50m", "64Mi", "100m", "96Mi")),
				done: reportsLimits("native", "100m", "96Mi")},
			{name: "the sidecar's image changed", change: setPodImage("sidecar", "busybox:1.37"), done: runs("sidecar", "busybox:1.37")},
			{name: "the native sidecar's image changed", change: setPodImage("native", "fluent/fluent-bit:3.2"), done: runs("native", "fluent/fluent-bit:3.2")},
			{name: "the sidecar's CPU resized, its CPU policy NotRequired and its memory policy RestartContainer",
				change: resizePod("sidecar", requirementsOf("150m", "32Mi", "300m", "64Mi")), done: reportsLimits("sidecar", "300m", "64Mi")},
			{name: "the sidecar's memory resized", change: resizePod("sidecar", requirementsOf("150m", "48Mi", "300m", "96Mi")),
				done: reportsLimits("sidecar", "300m", "96Mi")},
			{name: "the sidecar's image changed to one that cannot be pulled", change: setPodImage("sidecar", "busybox:1.36-invalid"),
				done: func(g gomega.Gomega, p *corev1.Pod) {
					g.Expect(pullFailing(containerStatus(p, "sidecar"))).To(gomega.BeTrue())
					g.Expect(podReady(p)).To(gomega.BeFalse())
				}},
			{name: "the sidecar's image fixed", change: setPodImage("sidecar", "busybox:1.37"), done: runs("sidecar", "busybox:1.37")},
			{name: "a resize the node has no room for", change: func(ctx context.Context, p *corev1.Pod, onReal bool) {
				if onReal {
					blocker = fillRealNode(ctx, p.Namespace)
				} else {
					annotate(ctx.(ginkgo.SpecContext), p, resizeTestAnnotation, "Deferred")
				}
				resizePod("sidecar", requirementsOf("250m", "48Mi", "300m", "96Mi"))(ctx, p, onReal)
			}, done: func(g gomega.Gomega, p *corev1.Pod) {
				c := podCondition(p, corev1.PodResizePending)
				g.Expect(c).NotTo(gomega.BeNil())
				g.Expect(c.Reason).To(gomega.Equal(corev1.PodReasonDeferred))
			}},
			{name: "room made for the deferred resize", change: func(ctx context.Context, p *corev1.Pod, onReal bool) {
				if onReal {
					gomega.Expect(env.Client.Delete(ctx, blocker)).To(gomega.Succeed())
				} else {
					annotate(ctx.(ginkgo.SpecContext), p, resizeTestAnnotation, "")
				}
			}, done: func(g gomega.Gomega, p *corev1.Pod) {
				g.Expect(containerStatus(p, "sidecar").Resources.Requests.Cpu().String()).To(gomega.Equal("250m"))
				g.Expect(podCondition(p, corev1.PodResizePending)).To(gomega.BeNil())
				g.Expect(podCondition(p, corev1.PodResizeInProgress)).To(gomega.BeNil())
			}},
		}
		var report []string
		for _, step := range steps {
			ginkgo.By(step.name)
			kwokSeen, realSeen := observe(ctx, kwokPod), observe(ctx, realPod)
			// The first step compares the pods as they start with the pods
			// as created, without a status.
			before := map[bool]*corev1.Pod{false: kwokPod, true: realPod}
			if step.change != nil {
				before = map[bool]*corev1.Pod{false: getPod(ctx, gomega.Default, kwokPod), true: getPod(ctx, gomega.Default, realPod)}
				step.change(ctx, kwokPod, false)
				step.change(ctx, realPod, true)
			}
			got := map[bool]observation{}
			for onReal, pod := range map[bool]*corev1.Pod{false: kwokPod, true: realPod} {
				var after *corev1.Pod
				gomega.Eventually(func(g gomega.Gomega) {
					after = getPod(ctx, g, pod)
					if step.done != nil {
						step.done(g, after)
					} else {
						g.Expect(podReady(after)).To(gomega.BeTrue())
					}
				}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed(), "%s, on the real node: %v", step.name, onReal)
				seen := kwokSeen
				if onReal {
					seen = realSeen
				}
				got[onReal] = observeStep(before[onReal], after, seen.stop())
			}
			report = append(report, fmt.Sprintf("%s:\n  kwokPod: %s\n  real: %s", step.name, got[false], got[true]))
			kwokShows, realShows := got[false], got[true]
			kwokShows.Events, realShows.Events = nil, nil
			gomega.Expect(kwokShows).To(gomega.Equal(realShows), "after %q, what kwokPod shows (first) is not what the real node shows (second)", step.name)
		}
		ginkgo.AddReportEntry("what both nodes showed", strings.Join(report, "\n"))
	})
})

// fidelityStep changes both pods in the same way (onReal says which one
// change is given, for what only differs in how: making a node lack room),
// then waits for each until done.
type fidelityStep struct {
	name   string
	change func(ctx context.Context, p *corev1.Pod, onReal bool)
	done   func(g gomega.Gomega, p *corev1.Pod)
}

// fidelityPod runs the scenario's pod in a namespace: an application, a
// sidecar with CPU and memory whose policies differ (CPU NotRequired,
// memory RestartContainer) and a native sidecar, all serving or sleeping,
// stopped within 2 s.
func fidelityPod(ctx context.Context, ns string) *corev1.Pod {
	sidecar := builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d").Requests("100m", "32Mi").Limits("200m", "64Mi").
		ResizePolicy(corev1.NotRequired, corev1.RestartContainer)
	native := builder.MakeContainer("native", "fluent/fluent-bit:3.1").Requests("50m", "64Mi").Limits("100m", "128Mi").RestartAlways()
	p := builder.MakePod("fidelity", ns).Name("fidelity").TerminationGracePeriod(2).
		Containers(builder.MakeContainer("app", "nginx:1.25"), sidecar).InitContainers(native).Obj()
	gomega.Expect(env.Client.Create(ctx, p)).To(gomega.Succeed())
	return p
}

func setPodImage(container, image string) func(context.Context, *corev1.Pod, bool) {
	return func(ctx context.Context, p *corev1.Pod, _ bool) {
		got := getPod(ctx, gomega.Default, p)
		specContainer(got, container).Image = image
		gomega.Expect(env.Client.Update(ctx, got)).To(gomega.Succeed())
	}
}

func resizePod(container string, r corev1.ResourceRequirements) func(context.Context, *corev1.Pod, bool) {
	return func(ctx context.Context, p *corev1.Pod, _ bool) {
		got := getPod(ctx, gomega.Default, p)
		specContainer(got, container).Resources = r
		gomega.Expect(env.Client.SubResource("resize").Update(ctx, got)).To(gomega.Succeed())
	}
}

// runs is done when a container runs the image, ready, and so does the pod.
func runs(container, image string) func(gomega.Gomega, *corev1.Pod) {
	return func(g gomega.Gomega, p *corev1.Pod) {
		st := containerStatus(p, container)
		g.Expect(st.Image).To(gomega.Equal(qualified(image)))
		g.Expect(st.State.Running).NotTo(gomega.BeNil())
		g.Expect(st.Ready).To(gomega.BeTrue())
		g.Expect(podReady(p)).To(gomega.BeTrue())
	}
}

// reportsLimits is done when a container reports the CPU and memory limits
// and the pod's resize is over.
func reportsLimits(container, cpu, memory string) func(gomega.Gomega, *corev1.Pod) {
	return func(g gomega.Gomega, p *corev1.Pod) {
		st := containerStatus(p, container)
		g.Expect(st.Resources).NotTo(gomega.BeNil())
		g.Expect(st.Resources.Limits.Cpu().String()).To(gomega.Equal(cpu))
		g.Expect(st.Resources.Limits.Memory().String()).To(gomega.Equal(memory))
		g.Expect(podCondition(p, corev1.PodResizeInProgress)).To(gomega.BeNil())
		g.Expect(podCondition(p, corev1.PodResizePending)).To(gomega.BeNil())
		g.Expect(st.State.Running).NotTo(gomega.BeNil())
		g.Expect(podReady(p)).To(gomega.BeTrue())
	}
}

// pullFailing reports whether a container waits on an image it cannot
// pull. A kubelet alternates ErrImagePull and ImagePullBackOff as it
// retries; kwok reports ErrImagePull throughout (README in
// test/cluster/stages): either is the same failure to a user.
func pullFailing(st *corev1.ContainerStatus) bool {
	return st.State.Waiting != nil && (st.State.Waiting.Reason == "ErrImagePull" || st.State.Waiting.Reason == "ImagePullBackOff")
}

// fillRealNode runs a pod on the real node that takes all of its free CPU
// but 50m, and returns it.
func fillRealNode(ctx context.Context, ns string) *corev1.Pod {
	free := freeCPU(ctx, gomega.Default)
	blocker := builder.MakePod("blocker", ns).Name("blocker").TerminationGracePeriod(1).
		Containers(builder.MakeContainer("main", "busybox:1.36").Command("sleep", "999d").Requests(fmt.Sprintf("%dm", free-50), "")).Obj()
	gomega.Expect(env.Client.Create(ctx, blocker)).To(gomega.Succeed())
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(getPod(ctx, g, blocker).Status.Phase).To(gomega.Equal(corev1.PodRunning))
	}).WithContext(ctx).Should(gomega.Succeed())
	return blocker
}

// observation is what a user sees of one step, per container: how many
// times it restarted during the step, whether its image ID changed, the
// image it reports, its readiness and waiting reason, whether its last state
// is a terminated instance, the resources it reports; and, of the pod, its
// readiness, its resize conditions at the end and those seen during the
// step, whether it observed its generation, and the kubelet's events of the
// step, by reason (reported only).
type observation struct {
	Containers         map[string]containerObservation
	PodReady           bool
	ResizeConditions   []string
	ResizeSeen         []string
	Events             []string
	GenerationObserved bool
}

type containerObservation struct {
	Restarts       int32
	NewImageID     bool
	Image          string
	Ready, Running bool
	Waiting        string
	LastTerminated bool
	Resources      string
}

func (o observation) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(o.Containers)) {
		fmt.Fprintf(&b, "%s %+v; ", name, o.Containers[name])
	}
	fmt.Fprintf(&b, "pod ready %v, resize conditions %v (seen %v), events %v, observedGeneration current %v",
		o.PodReady, o.ResizeConditions, o.ResizeSeen, o.Events, o.GenerationObserved)
	return b.String()
}

func observeStep(before, after *corev1.Pod, seen seenDuring) observation {
	o := observation{Containers: map[string]containerObservation{}, PodReady: podReady(after),
		ResizeSeen: seen.conditions, Events: seen.events, GenerationObserved: after.Status.ObservedGeneration == after.Generation}
	for _, name := range []string{"app", "sidecar", "native"} {
		st, was := containerStatus(after, name), containerStatus(before, name)
		c := containerObservation{
			Restarts: st.RestartCount - was.RestartCount, NewImageID: st.ImageID != was.ImageID, Image: st.Image,
			Ready: st.Ready, Running: st.State.Running != nil, LastTerminated: st.LastTerminationState.Terminated != nil,
		}
		if pullFailing(st) {
			c.Waiting = "ErrImagePull|ImagePullBackOff"
		} else if st.State.Waiting != nil {
			c.Waiting = st.State.Waiting.Reason
		}
		if r := st.Resources; r != nil {
			c.Resources = fmt.Sprintf("requests %s/%s limits %s/%s", r.Requests.Cpu(), r.Requests.Memory(), r.Limits.Cpu(), r.Limits.Memory())
		}
		o.Containers[name] = c
	}
	for _, c := range after.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			o.ResizeConditions = append(o.ResizeConditions, string(c.Type)+"="+c.Reason)
		}
	}
	slices.Sort(o.ResizeConditions)
	return o
}

// seenDuring is what a watch saw during a step: the resize conditions the
// pod carried at some point, and the kubelet's events about it.
type seenDuring struct {
	conditions, events []string
}

type stepWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   seenDuring
}

// kubeletEvents are the events compared: the ones kwok's stages emit, of
// restarts and resizes. A kubelet also reports pulls, creations and starts,
// which the simulation leaves out.
var kubeletEvents = []string{"Killing", "ResizeStarted", "ResizeCompleted", "ResizeDeferred"}

// observe watches a pod and its events until stop.
func observe(ctx context.Context, p *corev1.Pod) *stepWatch {
	ctx, cancel := context.WithCancel(ctx)
	sw := &stepWatch{cancel: cancel}
	pods, err := env.Clientset.CoreV1().Pods(p.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name).String()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	events, err := env.Clientset.EventsV1().Events(p.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	start := time.Now()
	sw.wg.Go(func() {
		defer pods.Stop()
		for ev := range pods.ResultChan() {
			got, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			sw.mu.Lock()
			for _, c := range got.Status.Conditions {
				if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && !slices.Contains(sw.seen.conditions, string(c.Type)) {
					sw.seen.conditions = append(sw.seen.conditions, string(c.Type))
				}
			}
			sw.mu.Unlock()
		}
	})
	sw.wg.Go(func() {
		defer events.Stop()
		for ev := range events.ResultChan() {
			e, ok := ev.Object.(*eventsv1.Event)
			if !ok || e.Regarding.UID != p.UID || !slices.Contains(kubeletEvents, e.Reason) || eventTime(e).Before(start.Add(-time.Second)) {
				continue
			}
			sw.mu.Lock()
			if !slices.Contains(sw.seen.events, e.Reason) {
				sw.seen.events = append(sw.seen.events, e.Reason)
			}
			sw.mu.Unlock()
		}
	})
	return sw
}

// stop ends the watch, after a moment for the last events to arrive, and
// returns what it saw, sorted.
func (sw *stepWatch) stop() seenDuring {
	time.Sleep(time.Second)
	sw.cancel()
	sw.wg.Wait()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	slices.Sort(sw.seen.conditions)
	slices.Sort(sw.seen.events)
	return sw.seen
}

func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case e.DeprecatedLastTimestamp.After(e.DeprecatedFirstTimestamp.Time):
		return e.DeprecatedLastTimestamp.Time
	default:
		return e.DeprecatedFirstTimestamp.Time
	}
}
