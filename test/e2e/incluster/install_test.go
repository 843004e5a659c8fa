package incluster_test

import (
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
)

const operatorNamespace = framework.OperatorNamespace

var _ = ginkgo.Describe("The operator from its release image", ginkgo.Label(realNodeLabel), func() {
	ginkgo.It("should run two replicas of the shipped image on the real node, serve the webhooks through their Service, and roll a sidecar out in place",
		func(ctx ginkgo.SpecContext) {
			ginkgo.By("waiting for both replicas of config/default to be ready, on the real node, running the image built")
			var managers []corev1.Pod
			gomega.Eventually(func(g gomega.Gomega) {
				d := &appsv1.Deployment{}
				g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: "sidecarset-operator"}, d)).To(gomega.Succeed())
				g.Expect(d.Status.ReadyReplicas).To(gomega.Equal(int32(2)))
				list := &corev1.PodList{}
				g.Expect(env.Client.List(ctx, list, client.InNamespace(operatorNamespace),
					client.MatchingLabels{"app.kubernetes.io/name": "sidecarset-operator"})).To(gomega.Succeed())
				managers = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
				g.Expect(managers).To(gomega.HaveLen(2))
			}).WithContext(ctx).Should(gomega.Succeed())
			timing("both replicas ready %.1f s after config/default was applied", recordInstallReady().Seconds())
			var addresses []string
			for _, p := range managers {
				gomega.Expect(p.Spec.NodeName).To(gomega.Equal(framework.RealNodeName))
				st := p.Status.ContainerStatuses[0]
				gomega.Expect(st.Image).To(gomega.Equal(framework.ManagerImage))
				gomega.Expect(st.ImageID).To(gomega.HaveSuffix("@"+imageDigest), "the pod runs another image than the one built")
				gomega.Expect(st.RestartCount).To(gomega.BeZero(), "manager %s restarted", p.Name)
				addresses = append(addresses, webhookAddress(p))
			}

			ginkgo.By("finding one leader, and both replicas behind the webhooks' Service")
			leaderPod(ctx, managers)
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(readyWebhookAddresses(ctx, g)).To(gomega.ConsistOf(addresses))
				mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
				g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarset-operator-mutating"}, mwc)).To(gomega.Succeed())
				for _, w := range mwc.Webhooks {
					g.Expect(w.ClientConfig.CABundle).NotTo(gomega.BeEmpty(), "webhook %s", w.Name)
					g.Expect(w.ClientConfig.Service).NotTo(gomega.BeNil(), "webhook %s", w.Name)
				}
			}).WithContext(ctx).Should(gomega.Succeed())

			ginkgo.By("injecting a Deployment's pods through the Service")
			ns := builder.MakeNamespace("in-cluster").Obj()
			ns.Annotations = node.NamespaceAnnotations()
			gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(gomega.Succeed())
			})
			s := builder.MakeSidecarSet(ns.Name, "app", "web").Namespace(ns.Name).MaxUnavailable(intstr.FromInt32(1)).
				Containers(builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d")).Obj()
			gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
			})
			probe := builder.MakePod("probe", ns.Name).Label("app", "web").Obj()
			gomega.Eventually(func(g gomega.Gomega) {
				dry := probe.DeepCopy()
				g.Expect(env.Client.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
				g.Expect(podstate.DecodeInjectedList(dry.Annotations[appsv1beta1.SidecarSetListAnnotation])).To(gomega.ContainElement(s.Name))
			}).WithContext(ctx).Should(gomega.Succeed())
			d := builder.MakeDeployment("web", ns.Name, 3).PodLabel("app", "web").TerminationGracePeriod(2).
				Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
			gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
			uids := map[types.UID]bool{}
			gomega.Eventually(func(g gomega.Gomega) {
				pods := webPods(ctx, g, ns.Name)
				g.Expect(pods).To(gomega.HaveLen(3))
				for _, p := range pods {
					g.Expect(p.Spec.NodeName).To(gomega.Equal(framework.RealNodeName))
					g.Expect(containerNames(p)).To(gomega.Equal([]string{"sidecar", "main"}))
					g.Expect(ready(p)).To(gomega.BeTrue())
					uids[p.UID] = true
				}
			}).WithContext(ctx).Should(gomega.Succeed())

			ginkgo.By("rolling busybox:1.37 out: the in-cluster leader upgrades the sidecars in place, one pod at a time")
			changed := time.Now()
			gomega.Eventually(func(g gomega.Gomega) {
				got := &appsv1beta1.SidecarSet{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(gomega.Succeed())
				got.Spec.Containers[0].Image = "busybox:1.37"
				g.Expect(env.Client.Update(ctx, got)).To(gomega.Succeed())
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				pods := webPods(ctx, g, ns.Name)
				g.Expect(pods).To(gomega.HaveLen(3))
				for _, p := range pods {
					g.Expect(uids).To(gomega.HaveKey(p.UID), "pod %s was recreated", p.Name)
					st := containerStatus(p, "sidecar")
					g.Expect(st.Image).To(gomega.Equal("docker.io/library/busybox:1.37"))
					g.Expect(st.RestartCount).To(gomega.Equal(int32(1)))
					g.Expect(containerStatus(p, "main").RestartCount).To(gomega.BeZero())
					g.Expect(ready(p)).To(gomega.BeTrue())
				}
				got := &appsv1beta1.SidecarSet{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(gomega.Succeed())
				g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
				g.Expect([]int32{got.Status.MatchedPods, got.Status.UpdatedPods, got.Status.ReadyPods, got.Status.UpdatedReadyPods}).
					To(gomega.Equal([]int32{3, 3, 3, 3}))
			}).WithContext(ctx).Should(gomega.Succeed())
			timing("3 pods upgraded in place by the in-cluster operator in %.1f s", time.Since(changed).Seconds())
			for _, p := range managers {
				got := &corev1.Pod{}
				gomega.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), got)).To(gomega.Succeed())
				gomega.Expect(got.Status.ContainerStatuses[0].RestartCount).To(gomega.BeZero(), "manager %s restarted", p.Name)
			}
		})
})

func webPods(ctx ginkgo.SpecContext, g gomega.Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(gomega.Succeed())
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

func containerNames(p corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func containerStatus(p corev1.Pod, name string) corev1.ContainerStatus {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return corev1.ContainerStatus{}
}

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
