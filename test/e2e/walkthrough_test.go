package e2e_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The user manual's walkthrough, step by step, with its own files: create
// the SidecarSet, create a matching pod, then change the sidecar's image
// and watch it upgraded in place.
var _ = ginkgo.Describe("The seed walkthrough", ginkgo.Label("walkthrough", "seed"), func() {
	ginkgo.It("should inject the seed pod and upgrade its sidecar in place when the manual changes the image", func(ctx ginkgo.SpecContext) {
		const name = "test-sidecarset"
		ns := createNamespace(ctx, "walkthrough")

		ginkgo.By("applying the seed sidecarset.yaml")
		applySeed(ctx, "01-sidecarset.yaml")
		expectObserved(ctx, name)

		ginkgo.By("applying the seed test pod")
		expectInjects(ctx, ns, map[string]string{"app": "nginx"}, name)
		kubectl(ctx, "apply", "-n", ns, "-f", seed("20-test-pod.yaml"))
		key := &corev1.Pod{}
		key.Namespace, key.Name = ns, "test-pod"
		var before *corev1.Pod
		gomega.Eventually(func(g gomega.Gomega) {
			before = getPod(ctx, g, key)
			g.Expect(containerNames(before.Spec.Containers)).To(gomega.Equal([]string{"sidecar1", "app"}))
			g.Expect(before.Status.Phase).To(gomega.Equal(corev1.PodRunning))
			g.Expect(podReady(before)).To(gomega.BeTrue())
			g.Expect(containerStatus(before, "sidecar1").Image).To(gomega.Equal("docker.io/library/centos:6.7"))
		}).WithContext(ctx).Should(gomega.Succeed())
		rows := tableRows(kubectl(ctx, "get", "pod", "test-pod", "-n", ns))
		gomega.Expect(rows).To(gomega.HaveLen(1))
		gomega.Expect(rows[0][:3]).To(gomega.Equal([]string{"test-pod", "2/2", "Running"}))

		ginkgo.By("reading the SidecarSet's status: 1 matched, 1 updated, 1 ready")
		expectStatus(ctx, name, 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		rows = tableRows(kubectl(ctx, "get", "sidecarset", name))
		gomega.Expect(rows).To(gomega.HaveLen(1))
		gomega.Expect(rows[0][:4]).To(gomega.Equal([]string{name, "1", "1", "1"}))

		ginkgo.By("changing the sidecar image to centos:7 as kubectl edit would: the whole containers list, command and volumeMounts kept")
		kubectl(ctx, "patch", "sidecarset", name, "--type", "merge", "-p",
			`{"spec":{"containers":[{"name":"sidecar1","image":"centos:7","command":["sleep","999d"],`+
				`"volumeMounts":[{"name":"log-volume","mountPath":"/var/log"}]}]}}`)

		ginkgo.By("seeing the sidecar restarted in place with the new image, the app container untouched")
		gomega.Eventually(func(g gomega.Gomega) {
			p := getPod(ctx, g, key)
			g.Expect(p.UID).To(gomega.Equal(before.UID), "the pod was recreated")
			g.Expect(specContainer(p, "sidecar1").Image).To(gomega.Equal("centos:7"))
			sidecar := containerStatus(p, "sidecar1")
			g.Expect(sidecar.Image).To(gomega.Equal("docker.io/library/centos:7"))
			g.Expect(sidecar.ImageID).NotTo(gomega.Equal(containerStatus(before, "sidecar1").ImageID))
			g.Expect(sidecar.RestartCount).To(gomega.Equal(int32(1)))
			g.Expect(containerStatus(p, "app").RestartCount).To(gomega.Equal(int32(0)))
			g.Expect(containerStatus(p, "app").ImageID).To(gomega.Equal(containerStatus(before, "app").ImageID))
			g.Expect(podReady(p)).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())
		expectStatus(ctx, name, 2, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})

		ginkgo.By("keeping everything but the image: the pod still upgradable, its command and mounts unchanged")
		p := &corev1.Pod{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "test-pod"}, p)).To(gomega.Succeed())
		gomega.Expect(specContainer(p, "sidecar1").Command).To(gomega.Equal([]string{"sleep", "999d"}))
		gomega.Expect(specContainer(p, "sidecar1").VolumeMounts).To(gomega.ContainElement(
			corev1.VolumeMount{Name: "log-volume", MountPath: "/var/log"}))
		if c := upgradableCondition(p); c != nil {
			gomega.Expect(c.Status).To(gomega.Equal(corev1.ConditionTrue), "the pod was reported not upgradable: %s", c.Message)
		}
		gomega.Expect(p.Annotations).To(gomega.HaveKey(appsv1beta1.InPlaceUpdateStateAnnotation))
	})
})
