package controller_test

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// unpullableImage is an image the test kubelet never runs.
const unpullableImage = "nginx:invalid"

// withImage lists the pods of a namespace whose sidecar has the image in
// their spec.
func withImage(ctx context.Context, g gomega.Gomega, ns, image string) []string {
	var names []string
	for _, p := range listPods(ctx, g, ns) {
		if specImage(&p, sidecar) == image {
			names = append(names, p.Name)
		}
	}
	return names
}

// expectWithImage waits until n pods of a namespace have the image in
// their sidecar's spec.
func expectWithImage(ctx context.Context, ns, image string, n int) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		g.Expect(withImage(ctx, g, ns, image)).To(gomega.HaveLen(n))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// progressing returns a SidecarSet's Progressing condition's reason and
// message ("" if it has none).
func progressing(s *appsv1beta1.SidecarSet) (string, string) {
	c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

// revisionsOf lists the ControllerRevisions of a SidecarSet.
func revisionsOf(ctx context.Context, g gomega.Gomega, set string) []appsv1.ControllerRevision {
	list := &appsv1.ControllerRevisionList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
		client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: set})).To(gomega.Succeed())
	return list.Items
}

// startBudgetedPods creates a SidecarSet with a failure budget of 1 in a
// window of 2 (maxUnavailable 3) and 4 pods running its sidecar at v1, and
// waits until its rollout is complete.
func startBudgetedPods(ctx context.Context, ns string) {
	createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer(sidecar, v1)).
		MaxUnavailable(intstr.FromInt32(3)).
		Annotation(appsv1beta1.FailureBudgetAnnotation, "1").Annotation(appsv1beta1.FailureWindowAnnotation, "2").Obj())
	startPods(ctx, ns, sidecar, podNames(4), nil)
	expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{4, 4, 4, 4})
}

var _ = ginkgo.Describe("The rollout guards", func() {
	ginkgo.It("should pause a rollout whose upgraded pods fail beyond the failure budget, and roll it back in place onto the recorded revision", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		startBudgetedPods(ctx, ns)
		first := getSidecarSet(ctx, gomega.Default, ns).Status.LatestRevision
		uids := map[string]types.UID{}
		for _, p := range listPods(ctx, gomega.Default, ns) {
			uids[p.Name] = p.UID
		}

		ginkgo.By("changing the image to one that cannot be pulled: maxUnavailable lets 3 pods take it")
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = unpullableImage })
		expectWithImage(ctx, ns, unpullableImage, 3)
		runKubelet(ctx, ns)

		ginkgo.By("letting the failure window pass: 3 failed pods are more than the budget of 1, the controller pauses the rollout")
		var bad string
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, ns)
			g.Expect(s.Spec.UpdateStrategy.Paused).To(gomega.BeTrue(), "not paused")
			bad = s.Status.LatestRevision
			reason, message := progressing(s)
			g.Expect(reason).To(gomega.Equal(appsv1beta1.ReasonFailureBudgetExceeded), message)
			g.Expect(message).To(gomega.HavePrefix("3 pods upgraded to revision " + bad + " fail, more than the failure budget of 1: "))
			g.Expect(message).To(gomega.ContainSubstring("sidecar sidecar (ErrImagePull) not ready within 2s of the upgrade on " + ns + "/pod-"))
			// The pause may come before the kubelet reports why.
			g.Expect(eventNotes(ctx, g, ns, controllers.EventRolloutPaused)).To(gomega.ConsistOf(gomega.HavePrefix(
				"3 pods upgraded to revision " + bad + " fail, more than the failure budget of 1: ")))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(bad).NotTo(gomega.Equal(first))
		s := getSidecarSet(ctx, gomega.Default, ns)
		gomega.Expect(s.Spec.Containers[0].Image).To(gomega.Equal(unpullableImage), "the pause changed the spec beyond updateStrategy.paused")
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(withImage(ctx, g, ns, unpullableImage)).To(gomega.HaveLen(3), "a pod was upgraded while paused")
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("restoring the first revision's containers and resuming, as kubectl sidecarset rollout undo does")
		var rev appsv1.ControllerRevision
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: first}, &rev)).To(gomega.Succeed())
		data, err := revision.Decode(rev.Data.Raw)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers = data.Containers
			s.Spec.UpdateStrategy.Paused = false
		})
		expectWithImage(ctx, ns, v1, 4)
		runKubelet(ctx, ns)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{4, 4, 4, 4})

		ginkgo.By("checking that the first revision was reused as the newest, and no pod was recreated")
		gomega.Expect(getSidecarSet(ctx, gomega.Default, ns).Status.LatestRevision).To(gomega.Equal(first))
		numbers := map[string]int64{}
		for _, r := range revisionsOf(ctx, gomega.Default, ns) {
			numbers[r.Name] = r.Revision
		}
		gomega.Expect(numbers).To(gomega.Equal(map[string]int64{first: 3, bad: 2}))
		for _, p := range listPods(ctx, gomega.Default, ns) {
			gomega.Expect(p.UID).To(gomega.Equal(uids[p.Name]), "pod %s was recreated", p.Name)
		}
	})

	ginkgo.It("should report a rollout that makes no progress past its deadline, and go on when it progresses", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer(sidecar, v1)).
			MaxUnavailable(intstr.FromInt32(1)).Annotation(appsv1beta1.ProgressDeadlineAnnotation, "2").Obj())
		startPods(ctx, ns, sidecar, podNames(3), nil)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{3, 3, 3, 3})

		ginkgo.By("changing the image to one that cannot be pulled: the first pod never comes up")
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = unpullableImage })
		expectWithImage(ctx, ns, unpullableImage, 1)
		runKubelet(ctx, ns)
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, ns)
			reason, message := progressing(s)
			g.Expect(reason).To(gomega.Equal(appsv1beta1.ReasonProgressDeadlineExceeded), message)
			g.Expect(message).To(gomega.MatchRegexp(`^no pod was newly updated and ready since \S+, longer than the progress deadline of 2s; ` +
				`2 of 3 pods wait: maxUnavailable 1 is used up by 1 pod upgrading or not ready$`))
			g.Expect(meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionUpdated).Reason).
				To(gomega.Equal(appsv1beta1.ReasonProgressDeadlineExceeded))
			g.Expect(eventNotes(ctx, g, ns, controllers.EventProgressDeadlineExceeded)).To(gomega.ConsistOf(
				"Revision " + s.Status.LatestRevision + ": " + message))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(getSidecarSet(ctx, gomega.Default, ns).Spec.UpdateStrategy.Paused).To(gomega.BeFalse(), "a deadline only reports")

		ginkgo.By("fixing the image with room for every pod: the rollout progresses and completes")
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Image = v2
			s.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromInt32(3))
		})
		expectWithImage(ctx, ns, v2, 3)
		runKubelet(ctx, ns)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{3, 3, 3, 3})
	})
})
