package e2e_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The simulated kubelet resizes pods in place (test/cluster/stages/
// pod-resize.yaml), which the resize rollout depends on.
var _ = ginkgo.Describe("The kwok cluster's in-place resize", ginkgo.Label("kwok", "resize"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "kwok-resize")
	})

	ginkgo.It("should report container resources and observedGeneration, and apply a resize about a second later without a restart", func(ctx ginkgo.SpecContext) {
		pod := runningPod(ctx, ns, "resized",
			corev1.Container{Name: "sidecar", Image: "centos:7", Resources: requirements("100m", "64Mi"),
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}},
			corev1.Container{Name: "app", Image: "nginx:1.25"})
		gomega.Expect(pod.Status.ObservedGeneration).To(gomega.Equal(pod.Generation))
		gomega.Expect(pod.Status.ContainerStatuses[0].Resources).NotTo(gomega.BeNil())
		gomega.Expect(pod.Status.ContainerStatuses[0].Resources.Requests.Cpu().String()).To(gomega.Equal("100m"))
		gomega.Expect(pod.Status.ContainerStatuses[0].AllocatedResources.Memory().String()).To(gomega.Equal("64Mi"))
		gomega.Expect(pod.Status.ContainerStatuses[1].Resources).NotTo(gomega.BeNil(), "a container without resources reports empty ones")

		start := time.Now()
		resize(ctx, pod, "sidecar", requirements("200m", "128Mi"))
		var seenInProgress bool
		gomega.Eventually(func(g gomega.Gomega) {
			got := getPod(ctx, g, pod)
			if podCondition(got, corev1.PodResizeInProgress) != nil {
				seenInProgress = true
			}
			g.Expect(got.Generation).To(gomega.BeNumerically(">", pod.Generation))
			g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
			g.Expect(podCondition(got, corev1.PodResizeInProgress)).To(gomega.BeNil())
			st := got.Status.ContainerStatuses[0]
			g.Expect(st.Resources.Requests.Cpu().String()).To(gomega.Equal("200m"))
			g.Expect(st.AllocatedResources.Memory().String()).To(gomega.Equal("128Mi"))
			g.Expect(st.RestartCount).To(gomega.BeZero(), "a NotRequired resize restarted the container")
			g.Expect(podReady(got)).To(gomega.BeTrue())
		}).WithContext(ctx).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
		gomega.Expect(seenInProgress).To(gomega.BeTrue(), "the resize was never reported in progress")
		gomega.Expect(time.Since(start)).To(gomega.BeNumerically(">=", 900*time.Millisecond), "applied before the kubelet's delay")
	})

	ginkgo.It("should restart a container whose resizePolicy asks for it", func(ctx ginkgo.SpecContext) {
		pod := runningPod(ctx, ns, "restarted", corev1.Container{Name: "sidecar", Image: "centos:7", Resources: requirements("100m", "64Mi"),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}})
		resize(ctx, pod, "sidecar", requirements("100m", "128Mi"))
		gomega.Eventually(func(g gomega.Gomega) {
			st := getPod(ctx, g, pod).Status.ContainerStatuses[0]
			g.Expect(st.AllocatedResources.Memory().String()).To(gomega.Equal("128Mi"))
			g.Expect(st.RestartCount).To(gomega.Equal(int32(1)))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	// A kubelet restarts a container for a resize only when a resource whose
	// policy says RestartContainer changed: a CPU change under a memory
	// RestartContainer policy leaves it running, as the real node shows.
	ginkgo.It("should restart a container only for a changed resource whose resizePolicy asks for it", func(ctx ginkgo.SpecContext) {
		pod := runningPod(ctx, ns, "mixed", corev1.Container{Name: "sidecar", Image: "centos:7", Resources: requirements("100m", "64Mi"),
			ResizePolicy: []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
			}})
		resize(ctx, pod, "sidecar", requirements("200m", "64Mi"))
		gomega.Eventually(func(g gomega.Gomega) {
			got := getPod(ctx, g, pod)
			g.Expect(podCondition(got, corev1.PodResizeInProgress)).To(gomega.BeNil())
			st := got.Status.ContainerStatuses[0]
			g.Expect(st.Resources.Requests.Cpu().String()).To(gomega.Equal("200m"))
			g.Expect(st.RestartCount).To(gomega.BeZero(), "a CPU-only resize restarted the container whose memory policy is RestartContainer")
		}).WithContext(ctx).Should(gomega.Succeed())
		resize(ctx, pod, "sidecar", requirements("200m", "128Mi"))
		gomega.Eventually(func(g gomega.Gomega) {
			st := getPod(ctx, g, pod).Status.ContainerStatuses[0]
			g.Expect(st.AllocatedResources.Memory().String()).To(gomega.Equal("128Mi"))
			g.Expect(st.RestartCount).To(gomega.Equal(int32(1)))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.DescribeTable("should hold a resize the test annotation refuses, and apply it once the annotation is gone",
		func(ctx ginkgo.SpecContext, reason, message string) {
			pod := runningPod(ctx, ns, "refused", corev1.Container{Name: "sidecar", Image: "centos:7", Resources: requirements("100m", "64Mi")})
			annotate(ctx, pod, resizeTestAnnotation, reason)
			resize(ctx, pod, "sidecar", requirements("200m", "64Mi"))
			gomega.Eventually(func(g gomega.Gomega) {
				got := getPod(ctx, g, pod)
				c := podCondition(got, corev1.PodResizePending)
				g.Expect(c).NotTo(gomega.BeNil())
				g.Expect(c.Reason).To(gomega.Equal(reason))
				g.Expect(c.Message).To(gomega.HavePrefix(message))
				g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Consistently(func(g gomega.Gomega) {
				got := getPod(ctx, g, pod)
				g.Expect(got.Status.ContainerStatuses[0].Resources.Requests.Cpu().String()).To(gomega.Equal("100m"))
				g.Expect(podCondition(got, corev1.PodResizePending)).NotTo(gomega.BeNil())
			}).WithContext(ctx).Should(gomega.Succeed())

			annotate(ctx, pod, resizeTestAnnotation, "")
			gomega.Eventually(func(g gomega.Gomega) {
				got := getPod(ctx, g, pod)
				g.Expect(podCondition(got, corev1.PodResizePending)).To(gomega.BeNil())
				g.Expect(podCondition(got, corev1.PodResizeInProgress)).To(gomega.BeNil())
				g.Expect(got.Status.ContainerStatuses[0].Resources.Requests.Cpu().String()).To(gomega.Equal("200m"))
			}).WithContext(ctx).Should(gomega.Succeed())
		},
		ginkgo.Entry("deferred until the node has room", "Deferred", "Node didn't have enough resource"),
		ginkgo.Entry("infeasible on the node", "Infeasible", "Node didn't have enough capacity"),
	)
})

// resizeTestAnnotation makes the simulated kubelet hold a pod's resizes,
// Deferred or Infeasible (test/cluster/stages/pod-resize.yaml).
const resizeTestAnnotation = "test.sidecarset-operator.dev/resize"

// requirements are CPU and memory requests and limits, equal.
func requirements(cpu, memory string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// resize changes a container's resources through pods/resize.
func resize(ctx ginkgo.SpecContext, pod *corev1.Pod, container string, r corev1.ResourceRequirements) {
	res, err := json.Marshal(r)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":%s}]}}`, container, res)
	p := &corev1.Pod{}
	p.Namespace, p.Name = pod.Namespace, pod.Name
	gomega.Expect(env.Client.SubResource("resize").Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))).To(gomega.Succeed())
}

// annotate sets an annotation on a pod, or removes it when value is empty.
func annotate(ctx ginkgo.SpecContext, pod *corev1.Pod, key, value string) {
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
	p := &corev1.Pod{}
	p.Namespace, p.Name = pod.Namespace, pod.Name
	gomega.Expect(env.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch)))).To(gomega.Succeed())
}

// podCondition returns a pod's condition of a type, or nil.
func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
