package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/promtext"
)

// Every change reaches running pods: a resources change is resized in place,
// a change that needs new pods is made by evicting them (with the recreate
// annotation), within the strategy and the PodDisruptionBudget, and pods
// created before their SidecarSet get it the same way.
var _ = ginkgo.Describe("Every change reaching running pods", ginkgo.Label("resize", "recreate", "large"), ginkgo.Ordered, func() {
	const replicas = 100
	var (
		ns, name string
		before   map[types.UID]string // the Deployment's pods before the rollouts, by UID
		bare     *corev1.Pod
	)
	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "every-change")
		s := createSidecarSet(ctx, sidecarSet(ns, "agent", "busybox:1.36").MaxUnavailable(intstr.FromString("10%")).
			Containers(builder.MakeContainer("agent", "busybox:1.36").Command("sleep", "999d").Env("MODE", "a").Requests("50m", "32Mi")).Obj())
		name = s.Name
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: new(intstr.FromString("10%")), Selector: &metav1.LabelSelector{MatchLabels: deployLabels}}}
		gomega.Expect(env.Client.Create(ctx, pdb)).To(gomega.Succeed())
		d := app(ns, "web", replicas).PodLabel("deploy", "web").
			Containers(builder.MakeContainer("main", "nginx:1.25").Requests("100m", "64Mi")).Obj()
		// A replacement takes two seconds to become ready, as an image pull
		// or a readiness probe would: evicted pods stay unavailable long
		// enough for the PodDisruptionBudget to bind.
		d.Spec.Template.Annotations = map[string]string{startDelayAnnotation: "2s"}
		pods := runDeployment(ctx, d, name)
		before = map[types.UID]string{}
		for _, p := range pods {
			before[p.UID] = p.Name
			gomega.Expect(specContainer(&p, "agent").ResizePolicy).To(gomega.ConsistOf(
				corev1.ContainerResizePolicy{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}))
		}
		bare = runPod(ctx, builder.MakePod("bare", ns).Name("bare").Label("app", "web").
			Containers(builder.MakeContainer("main", "nginx:1.25")).Obj(), name, true)
		expectStatus(ctx, name, getSidecarSet(ctx, gomega.Default, name).Generation, counts{replicas + 1, replicas + 1, replicas + 1, replicas + 1})
	}, ginkgo.NodeTimeout(rolloutTimeout))

	ginkgo.It("should resize every sidecar in place, no pod recreated nor restarted, and report a deferred and an infeasible resize without hanging", func(ctx ginkgo.SpecContext) {
		pods := listPods(ctx, gomega.Default, ns, deployLabels)
		deferred, infeasible := &pods[0], &pods[1]
		annotate(ctx, deferred, resizeTestAnnotation, "Deferred")
		annotate(ctx, infeasible, resizeTestAnnotation, "Infeasible")

		ginkgo.By("doubling the sidecar's CPU and memory")
		gen := updateSidecarSet(ctx, name, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Resources.Requests = builder.MakeContainer("", "").Requests("100m", "64Mi").Resources.Requests
		})
		expectStatus(ctx, name, gen, counts{replicas + 1, replicas - 1, replicas + 1, replicas - 1}, rolloutTimeout)
		s := getSidecarSet(ctx, gomega.Default, name)
		gomega.Expect(s.Status.ResizePendingPods).To(gomega.Equal(int32(2)))
		c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionResized)
		gomega.Expect(c).NotTo(gomega.BeNil())
		gomega.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonResizeInfeasible))
		gomega.Expect(c.Message).To(gomega.And(gomega.ContainSubstring(ns+"/"+deferred.Name+" (deferred: "),
			gomega.ContainSubstring(ns+"/"+infeasible.Name+" (infeasible: ")))
		p := expectProgressing(ctx, name, gen, metav1.ConditionFalse, appsv1beta1.ReasonResizePending)
		gomega.Expect(p.Message).To(gomega.HavePrefix("2 of 101 pods wait for the kubelet to apply their resize"))
		gomega.Eventually(sidecarSetEvents).WithContext(ctx).WithArguments(name, "ResizePending").Should(gomega.Not(gomega.BeEmpty()))

		ginkgo.By("checking every pod: the same pods, new resources applied, sidecars never restarted")
		for _, p := range listPods(ctx, gomega.Default, ns, deployLabels) {
			gomega.Expect(before).To(gomega.HaveKey(p.UID), "pod %s was recreated", p.Name)
			st := containerStatus(&p, "agent")
			gomega.Expect(st.RestartCount).To(gomega.BeZero(), "pod %s restarted its sidecar", p.Name)
			want := "100m"
			if p.UID == deferred.UID || p.UID == infeasible.UID {
				want = "50m"
			}
			gomega.Expect(st.Resources.Requests.Cpu().String()).To(gomega.Equal(want), "pod %s", p.Name)
			gomega.Expect(specContainer(&p, "agent").Resources.Requests.Cpu().String()).To(gomega.Equal("100m"), "pod %s", p.Name)
		}

		ginkgo.By("the deferred resize's node making room: that pod is updated, the infeasible one stays reported")
		annotate(ctx, deferred, resizeTestAnnotation, "")
		expectStatus(ctx, name, gen, counts{replicas + 1, replicas, replicas + 1, replicas})
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, name)
			g.Expect(s.Status.ResizePendingPods).To(gomega.Equal(int32(1)))
			c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionResized)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.HavePrefix("1 pod waits for its in-place resize"), c.Message)
		}).WithContext(ctx).Should(gomega.Succeed())
	}, ginkgo.NodeTimeout(2*rolloutTimeout))

	ginkgo.It("should recreate every pod of the Deployment for an env change, never more unavailable than the budgets allow, never a bare pod", func(ctx ginkgo.SpecContext) {
		sampler := sampleUnavailable(ctx, ns, deployLabels, replicas)
		evictions := evictionResponses(ctx)
		ginkgo.By("asking for recreation, with a strategy (20%) looser than the PodDisruptionBudget (10%), and changing the env")
		gen := updateSidecarSet(ctx, name, func(s *appsv1beta1.SidecarSet) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[appsv1beta1.RecreatePodsAnnotation] = "true"
			s.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromString("20%"))
			s.Spec.Containers[0].Env[0].Value = "b"
		})
		expectStatus(ctx, name, gen, counts{replicas + 1, replicas, replicas + 1, replicas}, 2*rolloutTimeout)
		pods := expectReadyPods(ctx, ns, deployLabels, replicas, name)
		for _, p := range pods {
			gomega.Expect(before).NotTo(gomega.HaveKey(p.UID), "pod %s was not recreated", p.Name)
			gomega.Expect(specContainer(&p, "agent").Env).To(gomega.ContainElement(corev1.EnvVar{Name: "MODE", Value: "b"}))
		}
		most, events := sampler.stop()
		ginkgo.AddReportEntry("recreation of 100 pods", fmt.Sprintf("at most %d unavailable over %d pod events", most, events))
		gomega.Expect(events).To(gomega.BeNumerically(">", replicas), "too few pod events sampled")
		gomega.Expect(most).To(gomega.BeNumerically("<=", 10), "more pods unavailable than the PodDisruptionBudget allows")
		gomega.Expect(most).To(gomega.BeNumerically(">", 0), "no pod was ever unavailable: nothing was sampled")
		after := evictionResponses(ctx)
		ginkgo.AddReportEntry("evictions", fmt.Sprintf("before %v, after %v (by response code)", evictions, after))
		gomega.Expect(after["201"]-evictions["201"]).To(gomega.BeNumerically(">=", replicas), "evictions accepted")
		gomega.Expect(after["429"]-evictions["429"]).To(gomega.BeNumerically(">", 0),
			"no eviction refused: the PodDisruptionBudget never held the looser strategy back")
		gomega.Expect(sidecarSetEvents(ctx, name, "WaitingForPodDisruptionBudget")).NotTo(gomega.BeEmpty())

		ginkgo.By("checking the bare pod: untouched, and named")
		got := getPod(ctx, gomega.Default, bare)
		gomega.Expect(got.UID).To(gomega.Equal(bare.UID))
		gomega.Expect(got.DeletionTimestamp).To(gomega.BeNil())
		gomega.Expect(specContainer(got, "agent").Env).To(gomega.ContainElement(corev1.EnvVar{Name: "MODE", Value: "a"}))
		s := getSidecarSet(ctx, gomega.Default, name)
		c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
		gomega.Expect(c).NotTo(gomega.BeNil())
		gomega.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonPodsNotRecreatable))
		gomega.Expect(c.Message).To(gomega.ContainSubstring(ns + "/bare ("))
		gomega.Expect(s.Status.RecreatePendingPods).To(gomega.BeZero())
	}, ginkgo.NodeTimeout(3*rolloutTimeout))
})

var _ = ginkgo.Describe("Pods created before their SidecarSet", ginkgo.Label("recreate"), func() {
	ginkgo.It("should get the sidecar by being recreated, within maxUnavailable, when the SidecarSet asks for it", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "before")
		d := app(ns, "web", 8).Obj()
		gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			pods := listPods(ctx, g, ns, appLabels)
			g.Expect(pods).To(gomega.HaveLen(8))
			for _, p := range pods {
				g.Expect(podReady(&p)).To(gomega.BeTrue())
			}
		}).WithContext(ctx).Should(gomega.Succeed())
		sampler := sampleUnavailable(ctx, ns, appLabels, 8)

		s := createSidecarSet(ctx, sidecarSet(ns, "agent", "busybox:1.36").MaxUnavailable(intstr.FromInt32(2)).
			Annotation(appsv1beta1.RecreatePodsAnnotation, "true").Obj())
		pods := expectReadyPods(ctx, ns, appLabels, 8, s.Name)
		for _, p := range pods {
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"agent", "main"}))
		}
		expectStatus(ctx, s.Name, s.Generation, counts{8, 8, 8, 8})
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(getSidecarSet(ctx, g, s.Name).Status.NotInjectedPods).To(gomega.BeZero())
		}).WithContext(ctx).Should(gomega.Succeed())
		most, events := sampler.stop()
		ginkgo.AddReportEntry("recreation of 8 pods created before their SidecarSet", fmt.Sprintf("at most %d unavailable over %d pod events", most, events))
		gomega.Expect(most).To(gomega.BeNumerically("<=", 2), "more pods unavailable than maxUnavailable allows")
		gomega.Expect(most).To(gomega.BeNumerically(">", 0))
		// Each pod recreated once: no replacement was admitted before the
		// API server had the pod webhooks' new scope (then recreated again).
		gomega.Expect(sampler.pods()).To(gomega.Equal(16), "pods sampled: the 8 pods and their 8 replacements")
	})
})

// startDelayAnnotation delays a pod's start in the simulated kubelet
// (test/cluster/stages/pod-ready.yaml).
const startDelayAnnotation = "test.sidecarset-operator.dev/start-delay"

// deployLabels select the Deployment's pods, not the bare one.
var deployLabels = map[string]string{"app": "web", "deploy": "web"}

// unavailableSampler follows pods through a watch and records, at every
// event, how many of the expected replicas are not available (missing, not
// ready, or terminating), and which pods were down at the worst moment.
type unavailableSampler struct {
	mu     sync.Mutex
	max    int
	worst  string
	events int
	seen   map[types.UID]bool // every pod sampled
	cancel context.CancelFunc
	done   chan struct{}
}

// sampleUnavailable starts sampling the pods with the labels.
func sampleUnavailable(ctx context.Context, ns string, podLabels map[string]string, replicas int) *unavailableSampler {
	list, err := env.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(podLabels).String()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	wctx, cancel := context.WithCancel(ctx)
	w, err := env.Clientset.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(podLabels).String(), ResourceVersion: list.ResourceVersion})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	pods := map[types.UID]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].UID] = &list.Items[i]
	}
	s := &unavailableSampler{cancel: cancel, done: make(chan struct{}), seen: map[types.UID]bool{}}
	s.record(pods, replicas)
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(s.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(pods, p.UID)
			} else {
				pods[p.UID] = p
			}
			s.record(pods, replicas)
		}
	}()
	return s
}

func (s *unavailableSampler) record(pods map[types.UID]*corev1.Pod, replicas int) {
	n := 0
	var down []string
	for _, p := range pods {
		if podAvailable(p) {
			n++
			continue
		}
		state := "not ready"
		if p.DeletionTimestamp != nil {
			state = "terminating"
		}
		down = append(down, fmt.Sprintf("%s (%s, created %s, containers %v)", p.Name, state,
			p.CreationTimestamp.Format(time.TimeOnly), containerNames(p.Spec.Containers)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events++
	for uid := range pods {
		s.seen[uid] = true
	}
	if replicas-n > s.max {
		slices.Sort(down)
		s.max = replicas - n
		s.worst = fmt.Sprintf("%d of %d available at %s; down: %s", n, replicas, time.Now().Format(time.TimeOnly), strings.Join(down, ", "))
	}
}

// stop ends the sampling and returns the most unavailable pods seen and the
// number of samples; the worst moment goes to the report.
func (s *unavailableSampler) stop() (int, int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	ginkgo.AddReportEntry("the worst moment", s.worst)
	return s.max, s.events
}

// pods returns how many distinct pods were sampled (after stop).
func (s *unavailableSampler) pods() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func podAvailable(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && podReady(p)
}

// evictionResponses reads the API server's count of pod evictions, by
// response code (201 accepted, 429 refused by a PodDisruptionBudget).
func evictionResponses(ctx context.Context) map[string]float64 {
	raw, err := env.Clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	scrape, err := promtext.Parse(raw)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return scrape.SumBy("apiserver_request_total", map[string]string{"resource": "pods", "subresource": "eviction"}, "code")
}

// sidecarSetEvents lists the notes of a SidecarSet's events of a reason.
func sidecarSetEvents(ctx context.Context, name, reason string) ([]string, error) {
	list, err := env.Clientset.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "SidecarSet" && e.Regarding.Name == name {
			notes = append(notes, e.Note)
		}
	}
	slices.Sort(notes)
	return notes, nil
}
