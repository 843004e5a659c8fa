package webhook_test

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/failureevents"
)

// failureFlushTimeout is how often the webhook reports failures as events.
const failureFlushTimeout = 10 * time.Second

// noTargetSidecar is a sidecar whose resourcesPolicy finds no container in
// the specs' pods (they have only "main"): the SidecarSet cannot be applied.
func noTargetSidecar() *builder.ContainerWrapper {
	c := builder.MakeContainer("log-agent", "agent:v1")
	c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
		TargetContainerMode:       appsv1beta1.TargetContainerModeSum,
		TargetContainersNameRegex: "^app",
		ResourceExpr:              appsv1beta1.ResourceExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%"}},
	}
	return c
}

var _ = ginkgo.Describe("Failure policy", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) { ns = newNamespace(ctx, nil) })

	// Issue 11, reproduction 2: a SidecarSet's own defect denied every pod
	// it selected.
	ginkgo.It("should admit a pod without a best-effort SidecarSet that cannot be applied, with a warning, a metric and an event", func(ctx ginkgo.SpecContext) {
		broken := sidecarSet(ns, "logs").Annotation(appsv1beta1.FailurePolicyAnnotation, appsv1beta1.FailurePolicyIgnore).
			Containers(noTargetSidecar()).Obj()
		createSidecarSet(ctx, broken)
		mesh, _ := createSidecarSet(ctx, sidecarSet(ns, "mesh").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		failures := map[string]string{"sidecarset": broken.Name, "failure_policy": "Ignore"}
		before := metricValue("sidecarset_injection_failures_total", failures)

		p, warnings := createInjected(ctx, pod(ns).Obj(), mesh.Name)
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))
		msg := fmt.Sprintf(`SidecarSet %q, sidecar "log-agent": resourcesPolicy: no containers match targetContainersNameRegex "^app"`, broken.Name)
		gomega.Expect(warnings).To(gomega.Equal([]string{fmt.Sprintf("best-effort SidecarSet %q was not injected: %s", broken.Name, msg)}))
		// The dry runs of createInjected count in the metric, not in the
		// event: the event says 1 pod.
		gomega.Expect(metricValue("sidecarset_injection_failures_total", failures)).To(gomega.BeNumerically(">", before))
		gomega.Eventually(func(g gomega.Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events)).To(gomega.Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Regarding.Name == broken.Name && e.Reason == failureevents.EventInjectionFailed {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(gomega.ContainElement(fmt.Sprintf(
				"1 pod admitted without this best-effort SidecarSet; last: pod %s/%s*: %s", ns, p.GenerateName, msg)))
		}).WithContext(ctx).WithTimeout(3 * failureFlushTimeout).Should(gomega.Succeed())
	})

	ginkgo.It("should deny a pod a required SidecarSet selects but cannot be applied to", func(ctx ginkgo.SpecContext) {
		broken, _ := createSidecarSet(ctx, sidecarSet(ns, "logs").Containers(noTargetSidecar()).Obj())
		failures := map[string]string{"sidecarset": broken.Name, "failure_policy": "Fail"}
		before := metricValue("sidecarset_injection_failures_total", failures)
		gomega.Eventually(func(g gomega.Gomega) {
			_, _, err := createPod(ctx, pod(ns).Obj())
			g.Expect(err).To(gomega.MatchError(denial(podWebhook, fmt.Sprintf(
				`SidecarSet %q, sidecar "log-agent": resourcesPolicy: no containers match targetContainersNameRegex "^app"`, broken.Name))))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(metricValue("sidecarset_injection_failures_total", failures)).To(gomega.BeNumerically(">", before))
	})
})
