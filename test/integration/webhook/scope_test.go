package webhook_test

import (
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// podWebhookConditions reads the pod webhook's matchConditions as the API
// server has them.
func podWebhookConditions(g gomega.Gomega, ctx ginkgo.SpecContext) []admissionregistrationv1.MatchCondition {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: webhooks.MutatingConfigName}, cfg)).To(gomega.Succeed())
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == podWebhook })
	g.Expect(i).To(gomega.BeNumerically(">=", 0))
	return cfg.Webhooks[i].MatchConditions
}

// podAdmissions counts the pod admission requests the webhook has served.
func podAdmissions() float64 { return metricValue(admissionDurationMetric, nil) }

var _ = ginkgo.Describe("The pod webhook's scope", func() {
	ginkgo.It("should send the API server's webhook calls only for pods some SidecarSet could select", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "scoped").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		gomega.Eventually(func(g gomega.Gomega) {
			conds := podWebhookConditions(g, ctx)
			g.Expect(conds).To(gomega.HaveLen(1))
			g.Expect(conds[0].Name).To(gomega.Equal(scope.ConditionName))
			g.Expect(conds[0].Expression).To(gomega.ContainSubstring(fmt.Sprintf("'%s'", ns)))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(metricValue("sidecarset_pod_webhook_scoped", nil)).To(gomega.Equal(1.0))
		createInjected(ctx, pod(ns).Name("selected").Obj(), s.Name)

		before := podAdmissions()
		other := builder.MakePod("other", ns).Label("app", "unrelated").Obj()
		created, _, err := createPod(ctx, other)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(created.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		unlabelled := builder.MakePod("unlabelled", ns).Obj()
		_, _, err = createPod(ctx, unlabelled)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(podAdmissions()).To(gomega.Equal(before), "the API server called the webhook for pods no SidecarSet selects")

		_, _, err = createPod(ctx, pod(ns).Name("selected-too").Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(podAdmissions()).To(gomega.Equal(before + 1))
	})

	ginkgo.It("should send every pod while a SidecarSet's selector requires no label, and narrow again when it goes", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		wide := builder.MakeSidecarSet(ns+"-wide", specLabel, ns).Namespace(ns).
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj()
		wide.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}},
		}}
		createSidecarSet(ctx, wide)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(podWebhookConditions(g, ctx)).To(gomega.BeEmpty())
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(metricValue("sidecarset_pod_webhook_scoped", nil)).To(gomega.Equal(0.0))
		// A pod without any label is selected, and injected.
		createInjected(ctx, builder.MakePod("bare", ns).Obj(), wide.Name)

		gomega.Expect(k8s.Delete(ctx, wide)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			conds := podWebhookConditions(g, ctx)
			g.Expect(conds).To(gomega.HaveLen(1))
			g.Expect(conds[0].Expression).NotTo(gomega.ContainSubstring(ns))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should write conditions the API server accepts for 1000 SidecarSets, and for more than fit with their values", func(ctx ginkgo.SpecContext) {
		var sets []*appsv1alpha1.SidecarSet
		for i := range 1000 {
			sets = append(sets, builder.MakeSidecarSet(fmt.Sprintf("s%04d", i), "app", fmt.Sprintf("bench-other-%04d", i)).Obj())
		}
		for _, n := range []int{1000, 5000} {
			for i := len(sets); i < n; i++ {
				sets = append(sets, builder.MakeSidecarSet(fmt.Sprintf("s%04d", i), "app", fmt.Sprintf("a-much-longer-application-name-%04d", i)).Obj())
			}
			conds, summary := scope.Conditions(sets)
			gomega.Expect(summary.Scoped).To(gomega.BeTrue())
			gomega.Expect(summary.ValuesDropped).To(gomega.Equal(n > 1000))
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			gomega.Expect(k8s.Get(ctx, types.NamespacedName{Name: webhooks.MutatingConfigName}, cfg)).To(gomega.Succeed())
			probe := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "scope-probe"},
				Webhooks:   []admissionregistrationv1.MutatingWebhook{cfg.Webhooks[0]},
			}
			probe.Webhooks[0].MatchConditions = conds
			gomega.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed(), "%d SidecarSets: %d characters", n, len(conds[0].Expression))
		}
	})
})
