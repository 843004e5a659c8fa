package e2e_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Native sidecars (init containers with restartPolicy Always), as in the
// manual's example but with RollingUpdate: injected, then upgraded in
// place like containers.
var _ = ginkgo.Describe("Native sidecars", ginkgo.Label("native"), func() {
	ginkgo.It("should inject a native sidecar and upgrade it in place with RollingUpdate", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "native")
		s := builder.MakeSidecarSet(ns, "app", "web").Namespace(ns).RollingUpdate().MaxUnavailable(intstr.FromInt32(2)).
			InitContainers(builder.MakeContainer("sidecar", "nginx:alpine").RestartAlways()).Obj()
		s.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 10"}},
		}}
		createSidecarSet(ctx, s)
		pods := runDeployment(ctx, app(ns, "web", 3).Obj(), s.Name)
		before := map[string]string{}
		for i := range pods {
			p := &pods[i]
			gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"sidecar"}))
			gomega.Expect(p.Spec.InitContainers[0].RestartPolicy).To(gomega.HaveValue(gomega.Equal(corev1.ContainerRestartPolicyAlways)))
			gomega.Expect(containerStatus(p, "sidecar").Image).To(gomega.Equal("docker.io/library/nginx:alpine"))
			before[p.Name] = containerStatus(p, "sidecar").ImageID
		}
		expectStatus(ctx, s.Name, 1, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})

		gen := setImage(ctx, s.Name, "sidecar", "nginx:1.27-alpine")
		gomega.Eventually(func(g gomega.Gomega) {
			pods := listPods(ctx, g, ns, appLabels)
			g.Expect(pods).To(gomega.HaveLen(3))
			for i := range pods {
				p := &pods[i]
				g.Expect(before).To(gomega.HaveKey(p.Name), "the pod was recreated")
				g.Expect(p.Spec.InitContainers[0].Image).To(gomega.Equal("nginx:1.27-alpine"))
				st := p.Status.InitContainerStatuses
				g.Expect(st).To(gomega.HaveLen(1))
				g.Expect(st[0].Image).To(gomega.Equal("docker.io/library/nginx:1.27-alpine"))
				g.Expect(st[0].ImageID).NotTo(gomega.Equal(before[p.Name]))
				g.Expect(st[0].RestartCount).To(gomega.Equal(int32(1)))
				g.Expect(containerStatus(p, "main").RestartCount).To(gomega.BeZero())
				g.Expect(podReady(p)).To(gomega.BeTrue())
			}
		}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
		expectStatus(ctx, s.Name, gen, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
	})
})
