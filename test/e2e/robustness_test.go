package e2e_test

import (
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Rollouts that meet trouble: an image that cannot be pulled, a pod deleted
// while it is upgraded, the operator killed mid-rollout.
var _ = ginkgo.Describe("A rollout in trouble", ginkgo.Label("robustness"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "trouble")
	})

	ginkgo.It("should stall after maxUnavailable pods on a bad image, say why, and complete once the image is fixed", func(ctx ginkgo.SpecContext) {
		const bad = "centos:7-invalid"
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(2)).Obj())
		runDeployment(ctx, app(ns, "web", 10).Obj(), s.Name)
		rec := recordRollout(ctx, ns, "sidecar", v2)

		gen := setImage(ctx, s.Name, "sidecar", bad)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", bad)).To(gomega.Equal(2))
		}).WithContext(ctx).Should(gomega.Succeed())
		c := expectProgressing(ctx, s.Name, gen, metav1.ConditionTrue, appsv1beta1.ReasonWaitingForUnavailablePods)
		gomega.Expect(c.Message).To(gomega.Equal("8 of 10 pods wait: maxUnavailable 2 is used up by 2 pods upgrading or not ready"))
		expectStatus(ctx, s.Name, gen, counts{Matched: 10, Updated: 2, Ready: 8, UpdatedReady: 0})
		gomega.Consistently(func(g gomega.Gomega) {
			pods := listPods(ctx, g, ns, appLabels)
			g.Expect(withImage(pods, "sidecar", bad)).To(gomega.Equal(2))
			g.Expect(withImage(pods, "sidecar", v1)).To(gomega.Equal(8))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("fixing the image")
		gen = setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		expectStatus(ctx, s.Name, gen, counts{Matched: 10, Updated: 10, Ready: 10, UpdatedReady: 10})
		expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonRolloutComplete)
		gomega.Expect(rec.Err()).NotTo(gomega.HaveOccurred())
		gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(2))
	})

	ginkgo.It("should complete the rollout when a pod is deleted while its upgrade is in flight", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(2)).Obj())
		runDeployment(ctx, app(ns, "web", 8).Obj(), s.Name)

		gen := setImage(ctx, s.Name, "sidecar", v2)
		ginkgo.By("deleting a pod whose spec has the new image and whose kubelet has not restarted the sidecar yet")
		var deleted *corev1.Pod
		gomega.Eventually(func(g gomega.Gomega) {
			for _, p := range listPods(ctx, g, ns, appLabels) {
				if specContainer(&p, "sidecar").Image == v2 && containerStatus(&p, "sidecar").Image == qualified(v1) {
					g.Expect(env.Client.Delete(ctx, &p)).To(gomega.Succeed())
					deleted = &p
					return
				}
			}
			g.Expect(deleted).NotTo(gomega.BeNil(), "no upgrade in flight")
		}).WithContext(ctx).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())

		pods := expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		gomega.Expect(pods).To(gomega.HaveLen(8))
		for _, p := range pods {
			gomega.Expect(p.UID).NotTo(gomega.Equal(deleted.UID))
		}
		expectStatus(ctx, s.Name, gen, counts{Matched: 8, Updated: 8, Ready: 8, UpdatedReady: 8})
		expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonRolloutComplete)
	})

	ginkgo.It("should resume from what the pods record when the manager is killed mid-rollout, within maxUnavailable",
		ginkgo.Label("restart"), func(ctx ginkgo.SpecContext) {
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(3)).Obj())
			runDeployment(ctx, app(ns, "web", 12).Obj(), s.Name)
			rec := recordRollout(ctx, ns, "sidecar", v2)

			gen := setImage(ctx, s.Name, "sidecar", v2)
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.BeNumerically(">=", 3))
			}).WithContext(ctx).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())

			ginkgo.By("killing the manager")
			gomega.Expect(env.Manager.Kill()).To(gomega.Succeed())
			running := false
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				if !running {
					gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
				}
			})
			killedAt := withImage(listPods(ctx, gomega.Default, ns, appLabels), "sidecar", v2)
			gomega.Expect(killedAt).To(gomega.BeNumerically("<", 12), "the rollout finished before the manager was killed")
			gomega.Consistently(func(g gomega.Gomega) {
				g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.Equal(killedAt))
			}).WithContext(ctx).Should(gomega.Succeed(), "pods were upgraded while no manager ran")

			ginkgo.By("restarting the manager")
			gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
			running = true
			expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
			expectStatus(ctx, s.Name, gen, counts{Matched: 12, Updated: 12, Ready: 12, UpdatedReady: 12})
			gomega.Expect(rec.Err()).NotTo(gomega.HaveOccurred())
			gomega.Expect(rec.Order()).To(gomega.HaveLen(12))
			gomega.Expect(rec.MaxUnavailable()).To(gomega.BeNumerically("<=", 3))
			for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
				gomega.Expect(containerStatus(&p, "sidecar").RestartCount).To(gomega.Equal(int32(1)), "pod %s", p.Name)
			}
		}, ginkgo.SpecTimeout(managerReadyTimeout+2*rolloutTimeout))
})
