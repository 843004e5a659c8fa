package webhook_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// webhookConditions reads a pod webhook's matchConditions as the API
// server has them.
func webhookConditions(g gomega.Gomega, ctx ginkgo.SpecContext, name string) []admissionregistrationv1.MatchCondition {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, cfg)).To(gomega.Succeed())
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

	// Issue 22: when the scope cannot fit, it degrades to the best-effort
	// webhook receiving every pod, never to pods no webhook sees, and says
	// so on each SidecarSet left out (condition, event, metric).
	ginkgo.It("should serve the SidecarSets the scope cannot express through the best-effort webhook, and say so", ginkgo.Serial, func(ctx ginkgo.SpecContext) {
		// Negative-only selectors with long values cannot be compacted:
		// 320 of them are over the limit. Each selects the pods of the
		// namespaces carrying its own label.
		long := strings.Repeat("v", 50)
		var sets []*appsv1beta1.SidecarSet
		for i := range 320 {
			s := builder.MakeSidecarSet(fmt.Sprintf("degrade-%03d", i), "unused", "x").
				Containers(builder.MakeContainer(fmt.Sprintf("sidecar-%03d", i), "agent:v1")).Obj()
			var values []string
			for j := range 4 {
				values = append(values, fmt.Sprintf("%s-%03d-%d", long, i, j))
			}
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: fmt.Sprintf("example.com/%s%03d", strings.Repeat("k", 40), i), Operator: metav1.LabelSelectorOpNotIn, Values: values,
			}}}
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{fmt.Sprintf("degrade-%03d", i): "on"}}
			gomega.Expect(k8s.Create(ctx, s)).To(gomega.Succeed())
			deleteSidecarSetAtEnd(s)
			sets = append(sets, s)
		}
		gomega.Expect(scope.Build(sets).Required.Level).To(gomega.Equal(scope.Degraded))
		// Every pod but the operator's own in its namespace.
		everyPod := scope.Condition{Expression: "true"}.Exempting(framework.OperatorNamespace).Expression

		var out *appsv1beta1.SidecarSet
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(webhookConditions(g, ctx, podBestEffortWebhook)[0].Expression).To(gomega.Equal(everyPod))
			left := metricValue("sidecarset_pod_webhook_scope_degraded_sidecarsets", map[string]string{"webhook": podWebhook})
			g.Expect(left).To(gomega.BeNumerically(">", 0))
			list := &appsv1beta1.SidecarSetList{}
			g.Expect(k8s.List(ctx, list)).To(gomega.Succeed())
			var degraded []*appsv1beta1.SidecarSet
			for i := range list.Items {
				if c := meta.FindStatusCondition(list.Items[i].Status.Conditions, appsv1beta1.SidecarSetConditionScoped); c != nil {
					g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
					g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonScopeDegraded))
					g.Expect(c.Message).To(gomega.ContainSubstring("its pods are sent to the best-effort webhook"))
					degraded = append(degraded, &list.Items[i])
				}
			}
			g.Expect(degraded).To(gomega.HaveLen(int(left)))
			// The conditions, the metric and the required webhook agree
			// once the scope settles (conditions written while the 320
			// SidecarSets were still arriving name earlier left-outs).
			required := webhookConditions(g, ctx, podWebhook)[0].Expression
			for _, d := range degraded {
				g.Expect(required).NotTo(gomega.ContainSubstring(d.Spec.Selector.MatchExpressions[0].Key))
			}
			out = degraded[0]
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events)).To(gomega.Succeed())
			g.Expect(slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Name == out.Name && e.Reason == controllers.EventScopeDegraded && e.Type == corev1.EventTypeWarning
			})).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())

		// A pod the left-out SidecarSet selects is injected, by the
		// best-effort webhook; a pod of the SidecarSets kept is injected
		// by the required one.
		ns := newNamespace(ctx, map[string]string{out.Name: "on"})
		created, _ := createInjected(ctx, builder.MakePod("left-out", ns).Obj(), out.Name)
		gomega.Expect(containerNames(created.Spec.Containers)).To(gomega.ContainElement(out.Spec.Containers[0].Name))

		// Once the others are gone, the scope fits again and the condition
		// is removed.
		for _, s := range sets {
			if s.Name != out.Name {
				gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, s))).To(gomega.Succeed())
			}
		}
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(webhookConditions(g, ctx, podBestEffortWebhook)[0].Expression).NotTo(gomega.Equal(everyPod))
			got := &appsv1beta1.SidecarSet{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(out), got)).To(gomega.Succeed())
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.SidecarSetConditionScoped)).To(gomega.BeNil())
			g.Expect(metricValue("sidecarset_pod_webhook_scope_degraded_sidecarsets", map[string]string{"webhook": podWebhook})).To(gomega.BeZero())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(gomega.Succeed())
		gomega.Expect(webhookConditions(gomega.Default, ctx, podWebhook)[0].Expression).To(gomega.ContainSubstring(out.Spec.Selector.MatchExpressions[0].Key))
	})

	ginkgo.It("should write degraded conditions the API server accepts", func(ctx ginkgo.SpecContext) {
		var sets []*appsv1beta1.SidecarSet
		for i := range 2500 {
			s := builder.MakeSidecarSet(fmt.Sprintf("s%04d", i), "app", "x").Obj()
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: fmt.Sprintf("example.com/k%04d", i), Operator: metav1.LabelSelectorOpNotIn,
				Values: []string{strings.Repeat("v", 60), strings.Repeat("w", 60)},
			}}}
			s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(fmt.Sprintf("team-%058d", i))
			sets = append(sets, s)
		}
		sc := scope.Build(sets)
		gomega.Expect(sc.Required.Level).To(gomega.Equal(scope.Degraded))
		gomega.Expect(sc.BestEffort.Expression).To(gomega.Equal("true"))
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		gomega.Expect(k8s.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, cfg)).To(gomega.Succeed())
		i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == podWebhook })
		probe := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "scope-probe"},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{cfg.Webhooks[i]},
		}
		probe.Webhooks[0].MatchConditions = sc.Required.MatchConditions()
		gomega.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed(), "%d characters", len(sc.Required.Expression))
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
			gomega.Expect(k8s.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, cfg)).To(gomega.Succeed())
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
