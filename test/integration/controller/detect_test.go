package controller_test

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// eventNotes lists the notes of the events of a reason on a SidecarSet.
func eventNotes(ctx ginkgo.SpecContext, g gomega.Gomega, set, reason string) []string {
	events := &eventsv1.EventList{}
	g.Expect(k8s.List(ctx, events)).To(gomega.Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "SidecarSet" && e.Regarding.Name == set && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = ginkgo.Describe("Detection of pods that run without their sidecars", func() {
	ginkgo.It("should count, name and announce a pod created before its SidecarSet, and clear when it goes", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		early := builder.MakePod("pod", ns).Name("early").Label(specLabel, ns).Obj()
		early.Spec.NodeName = "node-1"
		gomega.Expect(k8s.Create(ctx, early)).To(gomega.Succeed())
		set := builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer("agent", "agent:1")).Obj()
		createSidecarSet(ctx, set)

		want := fmt.Sprintf("1 pod it selects runs without its sidecars: %s/early (created before the SidecarSet)", ns)
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, set.Name)
			g.Expect(s.Status.NotInjectedPods).To(gomega.Equal(int32(1)))
			c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonPodsNotInjected))
			g.Expect(c.Message).To(gomega.Equal(want))
			g.Expect(eventNotes(ctx, g, set.Name, controllers.EventPodsNotInjected)).To(gomega.ContainElement(want))
		}).WithContext(ctx).Should(gomega.Succeed())

		// Pods created now are injected: they do not count.
		startPods(ctx, ns, "agent", []string{"late"}, nil)
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(getSidecarSet(ctx, g, set.Name).Status.NotInjectedPods).To(gomega.Equal(int32(1)))
		}).WithContext(ctx).Should(gomega.Succeed())

		gomega.Expect(k8s.Delete(ctx, early, client.GracePeriodSeconds(0))).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, set.Name)
			g.Expect(s.Status.NotInjectedPods).To(gomega.BeZero())
			g.Expect(meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)).To(gomega.BeNil())
			g.Expect(eventNotes(ctx, g, set.Name, controllers.EventPodsInjected)).To(gomega.ConsistOf(
				"Every pod the SidecarSet selects carries its sidecars"))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	// Issue 22: the operator's label exempted a pod in any namespace from
	// detection; it exempts the operator's own pods, in its namespace, only.
	ginkgo.It("should count a pod carrying the operator's label outside the operator's namespace", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		var pods []*corev1.Pod
		for _, namespace := range []string{ns, framework.OperatorNamespace} {
			p := builder.MakePod("pod", namespace).Name(ns+"-operator").Label(specLabel, ns).
				Label(appsv1beta1.OperatorPodLabel, appsv1beta1.OperatorPodName).Obj()
			p.Spec.NodeName = "node-1"
			gomega.Expect(k8s.Create(ctx, p)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(gomega.Succeed())
			})
			pods = append(pods, p)
		}
		set := builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer("agent", "agent:1")).Obj()
		createSidecarSet(ctx, set)
		want := fmt.Sprintf("1 pod it selects runs without its sidecars: %s/%s (created before the SidecarSet)", ns, pods[0].Name)
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, set.Name)
			g.Expect(s.Status.NotInjectedPods).To(gomega.Equal(int32(1)))
			c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.Equal(want))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should name a pod whose own container has a sidecar's name", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		set := builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer("agent", "agent:1")).Obj()
		createSidecarSet(ctx, set)
		startPods(ctx, ns, "agent", []string{"injected"}, nil)
		own := builder.MakePod("pod", ns).Name("own").Label(specLabel, ns).
			Containers(builder.MakeContainer("main", "app:1"), builder.MakeContainer("agent", "my-agent:9")).Obj()
		gomega.Expect(k8s.Create(ctx, own)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, set.Name)
			g.Expect(s.Status.NotInjectedPods).To(gomega.Equal(int32(1)))
			c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.Equal(fmt.Sprintf(
				"1 pod it selects runs without its sidecars: %s/own (has a container of a sidecar's name)", ns)))
		}).WithContext(ctx).Should(gomega.Succeed())
		var pod corev1.Pod
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(own), &pod)).To(gomega.Succeed())
		gomega.Expect(containerNames(&pod)).To(gomega.Equal([]string{"main", "agent"}))
	})
})
