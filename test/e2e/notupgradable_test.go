package e2e_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// A change other than an image cannot be applied in place: the pods are
// reported not upgradable, once per change, and become upgradable again
// when the change is undone.
var _ = ginkgo.Describe("Pods that cannot be upgraded in place", ginkgo.Label("notupgradable"), func() {
	ginkgo.It("should report pods not upgradable after an env change, with one event per change, and recover when it is undone", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "immutable")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).Obj())
		name := s.Name
		setEnv := func(value string) int64 {
			return updateSidecarSet(ctx, name, func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: value}}
			})
		}
		setEnv("a")
		runDeployment(ctx, app(ns, "web", 3).Obj(), name)
		expectStatus(ctx, name, 2, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})

		ginkgo.By("changing the sidecar's env")
		gen := setEnv("b")
		gomega.Eventually(func(g gomega.Gomega) {
			for _, p := range listPods(ctx, g, ns, appLabels) {
				c := upgradableCondition(&p)
				g.Expect(c).NotTo(gomega.BeNil(), "pod %s has no %s condition", p.Name, appsv1beta1.SidecarSetUpgradableCondition)
				g.Expect(c.Status).To(gomega.Equal(corev1.ConditionFalse))
				g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.UpdateImmutableFieldReason))
				g.Expect(c.Message).To(gomega.Equal(fmt.Sprintf(`{"%s":false}`, name)))
			}
		}).WithContext(ctx).Should(gomega.Succeed())
		expectStatus(ctx, name, gen, counts{Matched: 3, Updated: 0, Ready: 3, UpdatedReady: 0})
		c := expectProgressing(ctx, name, gen, metav1.ConditionFalse, appsv1beta1.ReasonNotUpgradablePods)
		gomega.Expect(c.Message).To(gomega.HavePrefix("3 of 3 pods cannot be upgraded in place: a field other than images and resources changed"))
		gomega.Eventually(notUpgradableEvents).WithContext(ctx).WithArguments(name).Should(gomega.Equal(1))

		ginkgo.By("reconciling again and again: no more events for the same change")
		for i, p := range listPods(ctx, gomega.Default, ns, appLabels) {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, i)
			gomega.Expect(env.Client.Patch(ctx, &p, client.RawPatch(types.MergePatchType, []byte(patch)))).To(gomega.Succeed())
		}
		gomega.Consistently(notUpgradableEvents).WithContext(ctx).WithArguments(name).Should(gomega.Equal(1))
		for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
			gomega.Expect(specContainer(&p, "sidecar").Env).To(gomega.ContainElement(corev1.EnvVar{Name: "MODE", Value: "a"}))
		}

		ginkgo.By("changing the env again: one more event")
		gen = setEnv("c")
		expectStatus(ctx, name, gen, counts{Matched: 3, Updated: 0, Ready: 3, UpdatedReady: 0})
		gomega.Eventually(notUpgradableEvents).WithContext(ctx).WithArguments(name).Should(gomega.Equal(2))
		gomega.Consistently(notUpgradableEvents).WithContext(ctx).WithArguments(name).Should(gomega.Equal(2))

		ginkgo.By("undoing the change: the pods are up to date and upgradable again")
		gen = setEnv("a")
		expectStatus(ctx, name, gen, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
		expectProgressing(ctx, name, gen, metav1.ConditionFalse, appsv1beta1.ReasonRolloutComplete)
		gomega.Eventually(func(g gomega.Gomega) {
			for _, p := range listPods(ctx, g, ns, appLabels) {
				c := upgradableCondition(&p)
				g.Expect(c).NotTo(gomega.BeNil())
				g.Expect(c.Status).To(gomega.Equal(corev1.ConditionTrue))
				g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.AllSidecarSetUpgradableReason))
				g.Expect(podstate.DecodeUpgradable(c.Message)).To(gomega.Equal(map[string]bool{name: true}))
			}
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})

// notUpgradableEvents counts the NotUpgradablePods events emitted about a
// SidecarSet: the event objects, each counting its series (the recorder
// folds a repeated event into the first one's series).
func notUpgradableEvents(ctx context.Context, name string) (int, error) {
	list, err := env.Clientset.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason != "NotUpgradablePods" || e.Regarding.Kind != "SidecarSet" || e.Regarding.Name != name {
			continue
		}
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n, nil
}
