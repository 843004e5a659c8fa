package e2e_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The update strategy: type, partition, maxUnavailable, paused and the
// canary selector, each on a small Deployment, then the manual's 100-pod
// examples. Every rollout changes the sidecar image from v1 to v2.
const (
	v1 = "centos:6.7"
	v2 = "centos:7"
	v3 = "centos:8"
)

var _ = ginkgo.Describe("The in-place rollout strategy", ginkgo.Label("strategy"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "strategy")
	})

	ginkgo.It("should upgrade nothing but keep the status fresh when the type is NotUpdate, and roll out once it is RollingUpdate", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).NotUpdate().MaxUnavailable(intstr.FromInt32(3)).Obj())
		runDeployment(ctx, app(ns, "web", 3).Obj(), s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})

		gen := setImage(ctx, s.Name, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 3, Updated: 0, Ready: 3, UpdatedReady: 0})
		c := expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonNotUpdate)
		gomega.Expect(c.Message).To(gomega.ContainSubstring("0 of 3 pods are updated"))
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.BeZero())
		}).WithContext(ctx).Should(gomega.Succeed())

		gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateSidecarSetStrategyType
		})
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
		expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonRolloutComplete)
	})

	ginkgo.It("should keep the status of a NotUpdate SidecarSet fresh when pods are deleted and created", ginkgo.Label("status"), func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).NotUpdate().Obj())
		d := app(ns, "web", 4).Obj()
		runDeployment(ctx, d, s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: 4, Updated: 4, Ready: 4, UpdatedReady: 4})

		ginkgo.By("scaling the Deployment down to 2 pods")
		gomega.Expect(env.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(gomega.Succeed())
		expectStatus(ctx, s.Name, 1, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})

		ginkgo.By("changing the image, then deleting a pod: its replacement gets the new sidecar at creation")
		gen := setImage(ctx, s.Name, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 0, Ready: 2, UpdatedReady: 0})
		pods := listPods(ctx, gomega.Default, ns, appLabels)
		gomega.Expect(env.Client.Delete(ctx, &pods[0])).To(gomega.Succeed())
		expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 1, Ready: 2, UpdatedReady: 1})
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.Equal(1))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.DescribeTable("should keep partition pods on the old sidecars",
		func(ctx ginkgo.SpecContext, partition intstr.IntOrString, wantUpdated int) {
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).
				Partition(partition).MaxUnavailable(intstr.FromInt32(5)).Obj())
			runDeployment(ctx, app(ns, "web", 5).Obj(), s.Name)

			gen := setImage(ctx, s.Name, "sidecar", v2)
			n := int32(wantUpdated)
			expectStatus(ctx, s.Name, gen, counts{Matched: 5, Updated: n, Ready: 5, UpdatedReady: n})
			c := expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonPartitionHeld)
			gomega.Expect(c.Message).To(gomega.ContainSubstring("held on the old sidecars by partition " + partition.String()))
			gomega.Consistently(func(g gomega.Gomega) {
				g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.Equal(wantUpdated))
			}).WithContext(ctx).Should(gomega.Succeed())

			ginkgo.By("lowering the partition to 0")
			gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) {
				s.Spec.UpdateStrategy.Partition = &intstr.IntOrString{}
			})
			expectRolledOut(ctx, ns, appLabels, "sidecar", v2)
			expectStatus(ctx, s.Name, gen, counts{Matched: 5, Updated: 5, Ready: 5, UpdatedReady: 5})
		},
		ginkgo.Entry("a number: 3 of 5 pods kept, 2 upgraded", intstr.FromInt32(3), 2),
		ginkgo.Entry("a percentage: 60% of 5 pods kept, 2 upgraded", intstr.FromString("60%"), 2),
		ginkgo.Entry("a percentage below 100% that rounds up to all pods: 99% of 5 keeps 4, 1 upgraded", intstr.FromString("99%"), 1),
	)

	ginkgo.DescribeTable("should never have more than maxUnavailable pods unavailable at once",
		func(ctx ginkgo.SpecContext, maxUnavailable intstr.IntOrString, pods int32, wantMax int) {
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(maxUnavailable).Obj())
			runDeployment(ctx, app(ns, "web", pods).Obj(), s.Name)
			rec := recordRollout(ctx, ns, "sidecar", v2)

			gen := setImage(ctx, s.Name, "sidecar", v2)
			expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
			expectStatus(ctx, s.Name, gen, counts{Matched: pods, Updated: pods, Ready: pods, UpdatedReady: pods})
			gomega.Expect(rec.Err()).NotTo(gomega.HaveOccurred())
			gomega.Expect(rec.Order()).To(gomega.HaveLen(int(pods)))
			gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(wantMax))
		},
		ginkgo.Entry("a number: 2 of 6 pods at a time", intstr.FromInt32(2), int32(6), 2),
		ginkgo.Entry("a percentage: 50% of 6 pods is 3 at a time", intstr.FromString("50%"), int32(6), 3),
		ginkgo.Entry("a small percentage never resolves to 0: 5% of 5 pods is 1 at a time", intstr.FromString("5%"), int32(5), 1),
	)

	ginkgo.It("should stop upgrading when paused mid-rollout and finish when resumed", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(2)).Obj())
		runDeployment(ctx, app(ns, "web", 10).Obj(), s.Name)

		setImage(ctx, s.Name, "sidecar", v2)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.BeNumerically(">=", 2))
		}).WithContext(ctx).Should(gomega.Succeed())
		gen := updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true })
		c := expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonPaused)
		gomega.Expect(c.Message).To(gomega.HavePrefix("updateStrategy.paused is true"))

		ginkgo.By("seeing no more pods upgraded while paused")
		paused := withImage(listPods(ctx, gomega.Default, ns, appLabels), "sidecar", v2)
		gomega.Expect(paused).To(gomega.BeNumerically("<", 10), "the rollout finished before it could be paused")
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.Equal(paused))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("resuming")
		gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = false })
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 10, Updated: 10, Ready: 10, UpdatedReady: 10})
	})

	ginkgo.It("should upgrade only the pods updateStrategy.selector selects, then the rest once it is removed", func(ctx ginkgo.SpecContext) {
		canary := map[string]string{"canary.release": "true"}
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).
			UpdateSelector(canary).MaxUnavailable(intstr.FromInt32(3)).Obj())
		runDeployment(ctx, app(ns, "canary", 3).PodLabel("canary.release", "true").Obj(), s.Name)
		runDeployment(ctx, app(ns, "stable", 3).Obj(), s.Name)

		gen := setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, canary, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 6, Updated: 3, Ready: 6, UpdatedReady: 3})
		c := expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonNotSelected)
		gomega.Expect(c.Message).To(gomega.ContainSubstring("3 of 6 pods are not updated: updateStrategy.selector does not select them"))
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(withImage(listPods(ctx, g, ns, map[string]string{"deployment": "stable"}), "sidecar", v1)).To(gomega.Equal(3))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("removing the selector")
		gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Selector = nil })
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 6, Updated: 6, Ready: 6, UpdatedReady: 6})
	})

	// The manual's examples, exactly: a Deployment of 100 pods.
	ginkgo.It("should upgrade 50 of 100 pods 10 at a time with partition 50 and maxUnavailable 10, then 20 at once with partition 80 and maxUnavailable 30",
		ginkgo.Label("seed", "large"), func(ctx ginkgo.SpecContext) {
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).
				Partition(intstr.FromInt32(50)).MaxUnavailable(intstr.FromInt32(10)).Obj())
			runDeployment(ctx, app(ns, "web", 100).Obj(), s.Name)
			expectStatus(ctx, s.Name, 1, counts{Matched: 100, Updated: 100, Ready: 100, UpdatedReady: 100})

			ginkgo.By("partition 50, maxUnavailable 10")
			rec := recordRollout(ctx, ns, "sidecar", v2)
			gen := setImage(ctx, s.Name, "sidecar", v2)
			expectStatus(ctx, s.Name, gen, counts{Matched: 100, Updated: 50, Ready: 100, UpdatedReady: 50}, rolloutTimeout)
			expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonPartitionHeld)
			gomega.Consistently(func(g gomega.Gomega) {
				g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v2)).To(gomega.Equal(50))
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Expect(rec.Err()).NotTo(gomega.HaveOccurred())
			gomega.Expect(rec.Order()).To(gomega.HaveLen(50))
			gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(10), "at most 10 pods unavailable at once, and the budget used")

			ginkgo.By("partition 80, maxUnavailable 30, a new image")
			rec = recordRollout(ctx, ns, "sidecar", v3)
			gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Image = v3
				s.Spec.UpdateStrategy.Partition = new(intstr.FromInt32(80))
				s.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromInt32(30))
			})
			expectStatus(ctx, s.Name, gen, counts{Matched: 100, Updated: 20, Ready: 100, UpdatedReady: 20}, rolloutTimeout)
			expectProgressing(ctx, s.Name, gen, metav1.ConditionFalse, appsv1beta1.ReasonPartitionHeld)
			gomega.Consistently(func(g gomega.Gomega) {
				g.Expect(withImage(listPods(ctx, g, ns, appLabels), "sidecar", v3)).To(gomega.Equal(20))
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Expect(rec.Err()).NotTo(gomega.HaveOccurred())
			gomega.Expect(rec.Order()).To(gomega.HaveLen(20))
			gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(20), "the 20 pods upgraded at once")
		})
})
