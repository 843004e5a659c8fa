package authoring_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// changingEvery is the policy's message for a change of a cluster-wide
// SidecarSet by a user without inject-all-namespaces.
func changingEvery(name, user string) string {
	return "spec.namespaceSelector: changing a SidecarSet that injects into every namespace " +
		lacks(authoring.VerbInjectAllNamespaces, name, user) + "; " + confine
}

// write updates a SidecarSet as a user (for real), retrying conflicts with
// the controller's writes, and returns the last error.
func write(ctx context.Context, user, name string, change func(*appsv1beta1.SidecarSet)) error {
	ginkgo.GinkgoHelper()
	var err error
	gomega.Eventually(func(g gomega.Gomega) {
		s := &appsv1beta1.SidecarSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, s)).To(gomega.Succeed())
		change(s)
		err = clients[user].Update(ctx, s)
		g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
	}).WithContext(ctx).Should(gomega.Succeed())
	return err
}

// revisionsOf waits for n ControllerRevisions of a SidecarSet and returns
// them.
func revisionsOf(ctx context.Context, name string, n int) []appsv1.ControllerRevision {
	ginkgo.GinkgoHelper()
	list := &appsv1.ControllerRevisionList{}
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(env.Client.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
			client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: name})).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(n))
	}).WithContext(ctx).Should(gomega.Succeed())
	return list.Items
}

// undo writes what `kubectl sidecarset rollout undo` writes, as user: the
// revision's content and custom version, the rollout resumed and the
// partition cleared, as a merge patch with the resourceVersion.
func undo(ctx context.Context, user, name string, rev *appsv1.ControllerRevision, partition *intstr.IntOrString) error {
	ginkgo.GinkgoHelper()
	var err error
	gomega.Eventually(func(g gomega.Gomega) {
		live := &appsv1beta1.SidecarSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, live)).To(gomega.Succeed())
		restored, rerr := revision.Restore(live, rev)
		g.Expect(rerr).NotTo(gomega.HaveOccurred())
		restored.Annotations, restored.Status = live.Annotations, live.Status
		restored.Spec.CustomVersion = rev.Labels[appsv1beta1.SidecarSetCustomVersionLabel]
		restored.Spec.UpdateStrategy.Paused, restored.Spec.UpdateStrategy.Partition = false, partition
		err = clients[user].Patch(ctx, restored, client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{}))
		g.Expect(apierrors.IsConflict(err)).To(gomega.BeFalse(), "retry after a conflict: %v", err)
	}).WithContext(ctx).Should(gomega.Succeed())
	return err
}

var _ = ginkgo.Describe("The on-call role", ginkgo.Ordered, func() {
	for i, j := range judges {
		ginkgo.Context("judged by "+j.name, ginkgo.Ordered, func() {
			ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
				j.installed(ctx)
			})

			ginkgo.It("should pause, resume, pause injection and undo a cluster-wide SidecarSet without any inject verb, and change nothing else", func(ctx ginkgo.SpecContext) {
				name := fmt.Sprintf("oncall-%d", i)
				s := builder.MakeSidecarSet(name, "app", name).Containers(builder.MakeContainer(name, "agent:1")).Obj()
				gomega.Expect(clients[carol].Create(ctx, s)).To(gomega.Succeed())
				ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
					gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
				})
				first := revisionsOf(ctx, name, 1)[0]
				gomega.Expect(write(ctx, carol, name, func(s *appsv1beta1.SidecarSet) {
					s.Spec.Containers[0].Image = "agent:2"
					s.Spec.UpdateStrategy.Partition = new(intstr.FromString("50%"))
				})).To(gomega.Succeed())
				revisionsOf(ctx, name, 2)
				record := func() string {
					got := &appsv1beta1.SidecarSet{}
					gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, got)).To(gomega.Succeed())
					return got.Annotations[authority.Annotation]
				}
				gomega.Expect(record()).To(gomega.Equal(authoring.VerbInjectAllNamespaces), "carol's verbs")

				// Stopping harm: pauses, by pause-rollouts.
				gomega.Expect(write(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true })).To(gomega.Succeed())
				gomega.Expect(write(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })).To(gomega.Succeed())
				// Going back to what the recorded authority approved: resumes,
				// by rollback.
				gomega.Expect(write(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = false })).To(gomega.Succeed())
				gomega.Expect(write(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = false })).To(gomega.Succeed())
				gomega.Expect(write(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true })).To(gomega.Succeed())

				// Starting harm is refused, with the policy's messages.
				// (New content records oscar's verbs, so the write is no restore
				// at all.)
				update(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:3" },
					j.denial(name, changingEvery(name, oscar)))
				update(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.Selector.MatchLabels["tier"] = "front" },
					j.denial(name, changingEvery(name, oscar)))
				update(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Partition = nil },
					j.denial(name, changingEvery(name, oscar)))
				update(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) {
					s.Spec.Containers[0].Image = "agent:1"
					s.Spec.UpdateStrategy.Partition = new(intstr.FromInt32(3))
				}, j.denial(name, changingEvery(name, oscar)))
				update(ctx, oscar, name, func(s *appsv1beta1.SidecarSet) {
					s.Annotations[authority.Annotation] = "inject-privileged,inject-secrets,inject-all-namespaces"
				}, fmt.Sprintf(`admission webhook "msidecarset.sidecarset-operator.dev" denied the request: sidecarsets.apps.kruise.io %q is forbidden: `+
					`metadata.annotations[%s]: the request changes it; remove it from the object you write; `+
					`only the operator writes it, from the permissions of whoever changes what the SidecarSet injects`, name, authority.Annotation))
				gomega.Expect(undo(ctx, oscar, name, &first, new(intstr.FromInt32(3)))).To(gomega.MatchError(gomega.ContainSubstring(changingEvery(name, oscar))),
					"undo with a partition other than 0")

				// Undo, as rollout undo writes it: the first revision's content,
				// resumed, no partition; the record stays carol's.
				gomega.Expect(undo(ctx, oscar, name, &first, nil)).To(gomega.Succeed())
				got := &appsv1beta1.SidecarSet{}
				gomega.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, got)).To(gomega.Succeed())
				gomega.Expect(got.Spec.Containers[0].Image).To(gomega.Equal("agent:1"))
				gomega.Expect(got.Spec.UpdateStrategy.Paused).To(gomega.BeFalse())
				if p := got.Spec.UpdateStrategy.Partition; p != nil {
					gomega.Expect(p.String()).To(gomega.Equal("0"), "the defaulted partition")
				}
				gomega.Expect(record()).To(gomega.Equal(authoring.VerbInjectAllNamespaces), "neither raised nor lowered to oscar's verbs")
			})
		})
	}
})
