package e2e_test

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The simulated kubelet: the in-place upgrade tests depend on these rules of
// our kwok stages (test/cluster/stages), so they are checked on their own.
var _ = ginkgo.Describe("The kwok cluster", ginkgo.Label("kwok"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "kwok")
	})

	ginkgo.It("should run a Deployment's pods on the kwok nodes", func(ctx ginkgo.SpecContext) {
		d := deployment(ns, "web", 3, corev1.Container{Name: "nginx", Image: "nginx:1.25"})
		gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			pods := listPods(ctx, g, ns, map[string]string{"app": "web"})
			g.Expect(pods).To(gomega.HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning))
				g.Expect(p.Spec.NodeName).To(gomega.HavePrefix("node-"))
				g.Expect(podReady(&p)).To(gomega.BeTrue())
				g.Expect(p.Status.ContainerStatuses[0].Image).To(gomega.Equal("docker.io/library/nginx:1.25"))
				g.Expect(p.Status.ContainerStatuses[0].ImageID).To(gomega.HavePrefix("docker.io/library/nginx@sha256:"))
			}
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should restart only the changed container with a new image and imageID after an in-place image change", func(ctx ginkgo.SpecContext) {
		pod := runningPod(ctx, ns, "two", corev1.Container{Name: "sidecar1", Image: "centos:6.7"}, corev1.Container{Name: "app", Image: "nginx:1.15.1"})
		before := pod.Status.ContainerStatuses

		patchImage(ctx, pod, "sidecar1", "centos:7")
		gomega.Eventually(func(g gomega.Gomega) {
			got := getPod(ctx, g, pod)
			g.Expect(got.Status.ContainerStatuses[0].Image).To(gomega.Equal("docker.io/library/centos:7"))
			g.Expect(got.Status.ContainerStatuses[0].ImageID).NotTo(gomega.Equal(before[0].ImageID))
			g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(gomega.Equal(int32(1)))
			g.Expect(got.Status.ContainerStatuses[0].Ready).To(gomega.BeTrue())
			g.Expect(got.Status.ContainerStatuses[1]).To(gomega.Equal(before[1]), "the app container changed")
			g.Expect(podReady(got)).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should never make an image ending in invalid ready, and recover once it is fixed", func(ctx ginkgo.SpecContext) {
		pod := runningPod(ctx, ns, "bad", corev1.Container{Name: "sidecar1", Image: "centos:6.7"})
		oldID := pod.Status.ContainerStatuses[0].ImageID

		patchImage(ctx, pod, "sidecar1", "centos:invalid")
		gomega.Eventually(func(g gomega.Gomega) {
			got := getPod(ctx, g, pod)
			s := got.Status.ContainerStatuses[0]
			g.Expect(s.State.Waiting).NotTo(gomega.BeNil())
			g.Expect(s.State.Waiting.Reason).To(gomega.Equal("ErrImagePull"))
			g.Expect(s.ImageID).To(gomega.Equal(oldID))
			g.Expect(s.Ready).To(gomega.BeFalse())
			g.Expect(podReady(got)).To(gomega.BeFalse())
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(podReady(getPod(ctx, g, pod))).To(gomega.BeFalse())
		}).WithContext(ctx).Should(gomega.Succeed())

		patchImage(ctx, pod, "sidecar1", "centos:7")
		gomega.Eventually(func(g gomega.Gomega) {
			got := getPod(ctx, g, pod)
			g.Expect(got.Status.ContainerStatuses[0].Image).To(gomega.Equal("docker.io/library/centos:7"))
			g.Expect(got.Status.ContainerStatuses[0].ImageID).NotTo(gomega.Equal(oldID))
			g.Expect(podReady(got)).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})

func deployment(ns, name string, replicas int32, containers ...corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

// runningPod creates a pod and waits until it runs and is ready.
func runningPod(ctx ginkgo.SpecContext, ns, name string, containers ...corev1.Container) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: containers},
	}
	gomega.Expect(env.Client.Create(ctx, pod)).To(gomega.Succeed())
	var got *corev1.Pod
	gomega.Eventually(func(g gomega.Gomega) {
		got = getPod(ctx, g, pod)
		g.Expect(podReady(got)).To(gomega.BeTrue())
		g.Expect(got.Status.ContainerStatuses).To(gomega.HaveLen(len(containers)))
	}).WithContext(ctx).Should(gomega.Succeed())
	return got
}

func patchImage(ctx ginkgo.SpecContext, pod *corev1.Pod, container, image string) {
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"image":%q}]}}`, container, image)
	gomega.Expect(env.Client.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))).To(gomega.Succeed())
}
