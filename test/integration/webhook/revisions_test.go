package webhook_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// recordedRevision waits until the controller has recorded the SidecarSet's
// current spec as a ControllerRevision other than previous, and returns it.
func recordedRevision(ctx context.Context, s *appsv1beta1.SidecarSet, previous string) *appsv1.ControllerRevision {
	rev := &appsv1.ControllerRevision{}
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(gomega.Succeed())
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation))
		g.Expect(s.Status.LatestRevision).NotTo(gomega.BeEmpty())
		g.Expect(s.Status.LatestRevision).NotTo(gomega.Equal(previous))
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: framework.OperatorNamespace, Name: s.Status.LatestRevision}, rev)).To(gomega.Succeed())
		g.Expect(rev.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetNameLabel, s.Name))
	}).WithContext(ctx).Should(gomega.Succeed())
	return rev
}

// withImage returns a check that the dry-run pod's container has the image.
func withImage(name, image string) func(gomega.Gomega, *corev1.Pod) {
	return func(g gomega.Gomega, p *corev1.Pod) {
		g.Expect(containerNames(p.Spec.Containers)).To(gomega.ContainElement(name))
		g.Expect(container(p.Spec.Containers, name).Image).To(gomega.Equal(image))
	}
}

var _ = ginkgo.Describe("Pod injection of a pinned revision", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should inject the newest revision labelled with the pinned customVersion", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "custom").CustomVersion("v1").
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		v1 := recordedRevision(ctx, s, "")
		v1Hash := s.Annotations[appsv1beta1.SidecarSetHashAnnotation]
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(v1), v1)).To(gomega.Succeed())
			g.Expect(v1.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetCustomVersionLabel, "v1"))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("changing the image and the custom version to v2")
		_, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.CustomVersion = "v2"
			s.Spec.Containers[0].Image = "envoy:v2"
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		v2 := recordedRevision(ctx, s, v1.Name)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(v2), v2)).To(gomega.Succeed())
			g.Expect(v2.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetCustomVersionLabel, "v2"))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(v1), v1)).To(gomega.Succeed())
		gomega.Expect(v1.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetCustomVersionLabel, "v1"))

		ginkgo.By("pinning customVersion v1")
		_, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(s.Spec.InjectionStrategy.Revision.Policy).To(gomega.Equal(appsv1beta1.AlwaysSidecarSetInjectRevisionPolicy))

		p, _ := createOnceDryRun(ctx, pod(ns).Obj(), withImage("proxy", "envoy:v1"))
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))
		entry := readState(p).Hashes[s.Name]
		gomega.Expect(entry.ControllerRevision).To(gomega.Equal(v1.Name))
		gomega.Expect(entry.Hash).To(gomega.Equal(v1Hash))
		gomega.Expect(entry.Hash).NotTo(gomega.Equal(s.Annotations[appsv1beta1.SidecarSetHashAnnotation]))
	})

	ginkgo.It("should inject the pinned revisionName to pods outside the update selector with policy Partial", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "partial").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		v1 := recordedRevision(ctx, s, "")
		_, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "envoy:v2" })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		v2 := recordedRevision(ctx, s, v1.Name)

		_, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{
				RevisionName: new(v1.Name), Policy: appsv1beta1.PartialSidecarSetInjectRevisionPolicy}
			s.Spec.UpdateStrategy.Selector = builder.MakeSidecarSet("x", "canary", "true").Spec.Selector
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())

		stable, _ := createOnceDryRun(ctx, pod(ns).Obj(), withImage("proxy", "envoy:v1"))
		gomega.Expect(readState(stable).Hashes[s.Name].ControllerRevision).To(gomega.Equal(v1.Name))
		canary, _ := createOnceDryRun(ctx, pod(ns).Label("canary", "true").Obj(), withImage("proxy", "envoy:v2"))
		gomega.Expect(readState(canary).Hashes[s.Name].ControllerRevision).To(gomega.Equal(v2.Name))
		gomega.Expect(readState(canary).Hashes[s.Name].Hash).To(gomega.Equal(s.Annotations[appsv1beta1.SidecarSetHashAnnotation]))

		ginkgo.By("sending every selected pod to the pinned revision with a partition of 100%")
		warnings, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = nil
			s.Spec.UpdateStrategy.Partition = new(intstr.FromString("100%"))
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.Equal([]string{"spec.updateStrategy.partition: 100% holds back every pod, " +
			"so nothing is upgraded in place; lower it to start the rollout"}))
		for range 3 {
			held, _ := createOnceDryRun(ctx, pod(ns).Label("canary", "true").Obj(), withImage("proxy", "envoy:v1"))
			gomega.Expect(container(held.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v1"))
			gomega.Expect(readState(held).Hashes[s.Name].ControllerRevision).To(gomega.Equal(v1.Name))
		}

		ginkgo.By("sending every pod to the latest spec with a partition of 0%")
		_, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Partition = new(intstr.FromString("0%")) })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		for range 3 {
			latest, _ := createOnceDryRun(ctx, pod(ns).Obj(), withImage("proxy", "envoy:v2"))
			gomega.Expect(container(latest.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v2"))
		}
	})

	ginkgo.It("should deny pods, naming the SidecarSet and the revision, once the pinned revision is gone", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "gone").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		v1 := recordedRevision(ctx, s, "")
		_, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "envoy:v2" })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		recordedRevision(ctx, s, v1.Name)
		_, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{RevisionName: new(v1.Name)}
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		createOnceDryRun(ctx, pod(ns).Obj(), withImage("proxy", "envoy:v1"))

		ginkgo.By("deleting the pinned ControllerRevision")
		gomega.Expect(k8s.Delete(ctx, v1)).To(gomega.Succeed())
		want := denial(podWebhook, fmt.Sprintf(`SidecarSet %q: injectionStrategy.revision revisionName %q not found; `+
			`pods matching it cannot be created until it exists or the pin is removed`, s.Name, v1.Name))
		gomega.Eventually(func(g gomega.Gomega) {
			_, _, err := createPod(ctx, pod(ns).Obj())
			g.Expect(err).To(gomega.MatchError(want))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should reject a SidecarSet pinning a revision that does not exist or belongs to another SidecarSet", func(ctx ginkgo.SpecContext) {
		other, _ := createSidecarSet(ctx, sidecarSet(ns, "other").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		foreign := recordedRevision(ctx, other, "")
		consequence := "pods matching this SidecarSet would be rejected at creation while it is missing; " +
			"pin an existing revision (kubectl get controllerrevisions -n " + framework.OperatorNamespace + " -l kruise.io/sidecarset-name=" + ns + "-pinned) " +
			"or remove injectionStrategy.revision"

		s := sidecarSet(ns, "pinned").Containers(builder.MakeContainer("logger", "fluentbit:v1"))
		err := k8s.Create(ctx, s.Clone().InjectRevision(appsv1beta1.SidecarSetInjectRevision{RevisionName: new(foreign.Name)}).Obj())
		gomega.Expect(causes(err)).To(gomega.Equal([]string{fmt.Sprintf(
			`spec.injectionStrategy.revision.revisionName: Invalid value: %q: ControllerRevision %q cannot be resolved `+
				`(ControllerRevision %s/%s belongs to SidecarSet %q, not %q): %s`,
			foreign.Name, foreign.Name, framework.OperatorNamespace, foreign.Name, other.Name, s.Name, consequence)}))

		// Issue 22: a SidecarSet recreated under an old name cannot pin the
		// revision of the one it replaced (recorded under another author's
		// authority, and not yet garbage collected).
		old, _ := createSidecarSet(ctx, sidecarSet(ns, "pinned").Containers(builder.MakeContainer("logger", "fluentbit:v0")).Obj())
		left := recordedRevision(ctx, old, "")
		gomega.Expect(k8s.Delete(ctx, old)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(old), &appsv1beta1.SidecarSet{}))).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())
		err = k8s.Create(ctx, s.Clone().InjectRevision(appsv1beta1.SidecarSetInjectRevision{RevisionName: new(left.Name)}).Obj())
		gomega.Expect(causes(err)).To(gomega.HaveLen(1))
		gomega.Expect(causes(err)[0]).To(gomega.ContainSubstring(fmt.Sprintf(
			`ControllerRevision %s/%s is controlled by %s, an earlier SidecarSet named %q, not by this one`,
			framework.OperatorNamespace, left.Name, old.UID, s.Obj().Name)))

		err = k8s.Create(ctx, s.Clone().InjectRevision(appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v9")}).Obj())
		gomega.Expect(causes(err)).To(gomega.Equal([]string{fmt.Sprintf(
			`spec.injectionStrategy.revision.customVersion: Invalid value: "v9": no ControllerRevision with custom version "v9" `+
				`can be resolved (no ControllerRevision of SidecarSet %q in %s has %s=v9): %s`,
			s.Name, framework.OperatorNamespace, appsv1beta1.SidecarSetCustomVersionLabel, consequence)}))
	})
})
