package webhook_test

import (
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// webhookConditions reads a pod webhook's matchConditions as the API
// server has them.
func webhookConditions(g gomega.Gomega, ctx ginkgo.SpecContext, name string) []admissionregistrationv1.MatchCondition {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: webhooks.MutatingConfigName}, cfg)).To(gomega.Succeed())
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == name })
	g.Expect(i).To(gomega.BeNumerically(">=", 0))
	return cfg.Webhooks[i].MatchConditions
}

// podAdmissions counts the pod admission requests the webhook has served.
func podAdmissions() float64 { return metricValue(admissionDurationMetric, nil) }

// expectScopeHas waits until a pod webhook's condition mentions text.
func expectScopeHas(ctx ginkgo.SpecContext, webhook, text string) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		conds := webhookConditions(g, ctx, webhook)
		g.Expect(conds).To(gomega.HaveLen(1))
		g.Expect(conds[0].Name).To(gomega.Equal(scope.ConditionName))
		g.Expect(conds[0].Expression).To(gomega.ContainSubstring(text))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// expectNotSent creates pods and checks that the API server called no pod
// webhook for them and that they were admitted unchanged.
func expectNotSent(ctx ginkgo.SpecContext, pods ...*corev1.Pod) {
	before := podAdmissions()
	for _, p := range pods {
		created, _, err := createPod(ctx, p)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
		gomega.ExpectWithOffset(1, containerNames(created.Spec.Containers)).To(gomega.Equal(containerNames(p.Spec.Containers)))
		deleteAtEnd(created)
	}
	gomega.ExpectWithOffset(1, podAdmissions()).To(gomega.Equal(before), "the API server called the webhook for pods no SidecarSet selects")
}

var _ = ginkgo.Describe("The pod webhooks' scope", func() {
	ginkgo.It("should send the API server's webhook calls only for pods some SidecarSet selects", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "scoped").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		expectScopeHas(ctx, podWebhook, fmt.Sprintf("'%s'", ns))
		gomega.Expect(metricValue("sidecarset_pod_webhook_scope_exact", map[string]string{"webhook": podWebhook})).To(gomega.Equal(1.0))
		createInjected(ctx, pod(ns).Name("selected").Obj(), s.Name)

		expectNotSent(ctx, builder.MakePod("other", ns).Label("app", "unrelated").Obj(), builder.MakePod("unlabelled", ns).Obj())
		before := podAdmissions()
		_, _, err := createPod(ctx, pod(ns).Name("selected-too").Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(podAdmissions()).To(gomega.Equal(before + 1))
	})

	// Issue 11, reproduction 1: a selector with no positive requirement used
	// to remove the scope for every pod of the cluster.
	ginkgo.It("should keep a DoesNotExist selector limited to its SidecarSet's namespace", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		optOut := builder.MakeSidecarSet(ns+"-opt-out", specLabel, ns).Namespace(ns).
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj()
		optOut.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "opt-out", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}
		createSidecarSet(ctx, optOut)
		expectScopeHas(ctx, podWebhook, fmt.Sprintf("request.namespace == '%s' && !('opt-out' in object.metadata.labels)", ns))

		other := newNamespace(ctx, nil)
		expectNotSent(ctx,
			builder.MakePod("x", "kube-system").Obj(),
			builder.MakePod("x", "default").Label("app", "web").Obj(),
			builder.MakePod("x", other).Obj(),
			builder.MakePod("opted-out", ns).Label("opt-out", "yes").Obj())
		// A pod without any label in its namespace is selected, and injected.
		createInjected(ctx, builder.MakePod("bare", ns).Obj(), optOut.Name)
	})

	ginkgo.It("should send the pods only best-effort SidecarSets select to the best-effort webhook", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		logs := sidecarSet(ns, "logs").Containers(builder.MakeContainer("log-agent", "agent:v1")).Obj()
		logs.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: appsv1beta1.FailurePolicyIgnore}
		createSidecarSet(ctx, logs)
		expectScopeHas(ctx, podBestEffortWebhook, fmt.Sprintf("'%s'", ns))
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(webhookConditions(g, ctx, podWebhook)[0].Expression).NotTo(gomega.ContainSubstring(ns))
		}).WithContext(ctx).Should(gomega.Succeed())
		created, _ := createInjected(ctx, pod(ns).Obj(), logs.Name)
		gomega.Expect(containerNames(created.Spec.Containers)).To(gomega.Equal([]string{"log-agent", "main"}))
	})

	ginkgo.DescribeTable("should write conditions the API server accepts for 5000 SidecarSets",
		func(ctx ginkgo.SpecContext, value string, want scope.Level) {
			var sets []*appsv1beta1.SidecarSet
			for i := range 5000 {
				s := builder.MakeSidecarSet(fmt.Sprintf("s%04d", i), "app", fmt.Sprintf(value, i)).Obj()
				if i%3 == 0 {
					s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(fmt.Sprintf("team-%03d", i%100))
				}
				sets = append(sets, s)
			}
			sc := scope.Build(sets)
			gomega.Expect(sc.Required.Level).To(gomega.Equal(want))
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			gomega.Expect(k8s.Get(ctx, types.NamespacedName{Name: webhooks.MutatingConfigName}, cfg)).To(gomega.Succeed())
			i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == podWebhook })
			probe := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "scope-probe"},
				Webhooks:   []admissionregistrationv1.MutatingWebhook{cfg.Webhooks[i]},
			}
			probe.Webhooks[0].MatchConditions = sc.Required.MatchConditions()
			gomega.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed(), "5000 SidecarSets: %d characters", len(sc.Required.Expression))
		},
		ginkgo.Entry("exact with short label values", "app-%04d", scope.Exact),
		ginkgo.Entry("widened to the values' prefix when they exceed the API server's 100 000 characters",
			"a-much-longer-application-name-%04d", scope.ValuePrefixes),
		ginkgo.Entry("widened to label keys per namespace when even that is too long",
			"amuchlongerapplicationnamewithoutanyseparator%04d", scope.LabelKeys),
	)
})
