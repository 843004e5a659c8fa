package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("Pod injection of containers and init containers", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should put BeforeAppContainer sidecars first and AfterAppContainer ones last, marked IS_INJECTED", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "placement").Containers(
			builder.MakeContainer("before-1", "busybox:1.36"),
			builder.MakeContainer("after-1", "busybox:1.36").InjectPolicy(appsv1beta1.AfterAppContainerType),
			builder.MakeContainer("before-2", "busybox:1.36").InjectPolicy(appsv1beta1.BeforeAppContainerType).Env("OWN", "x"),
		).Obj())

		p, warnings := createInjected(ctx, pod(ns).Containers(
			builder.MakeContainer("app-1", "nginx:1.25"), builder.MakeContainer("app-2", "redis:7")).Obj(), s.Name)
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"before-1", "before-2", "app-1", "app-2", "after-1"}))
		gomega.Expect(envStrings(container(p.Spec.Containers, "before-1").Env)).To(gomega.Equal([]string{"IS_INJECTED=true"}))
		gomega.Expect(envStrings(container(p.Spec.Containers, "before-2").Env)).To(gomega.Equal([]string{"OWN=x", "IS_INJECTED=true"}))
		gomega.Expect(envStrings(container(p.Spec.Containers, "after-1").Env)).To(gomega.Equal([]string{"IS_INJECTED=true"}))
		gomega.Expect(container(p.Spec.Containers, "app-1").Env).To(gomega.BeEmpty())
		gomega.Expect(p.Spec.InitContainers).To(gomega.BeEmpty())
	})

	ginkgo.It("should inject init containers sorted by name across SidecarSets, around the pod's own", func(ctx ginkgo.SpecContext) {
		a, _ := createSidecarSet(ctx, sidecarSet(ns, "a").InitContainers(
			builder.MakeContainer("zeta-init", "busybox:1.36"),
			builder.MakeContainer("alpha-init", "busybox:1.36"),
		).Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		b, _ := createSidecarSet(ctx, sidecarSet(ns, "b").InitContainers(
			builder.MakeContainer("mid-init", "busybox:1.36"),
			builder.MakeContainer("first-init", "busybox:1.36").InjectPolicy(appsv1beta1.BeforeAppContainerType),
		).Obj())

		p, _ := createInjected(ctx, pod(ns).InitContainers(builder.MakeContainer("pod-init", "busybox:1.36")).Obj(), a.Name, b.Name)
		gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{
			"first-init", "pod-init", "alpha-init", "mid-init", "zeta-init"}))
		gomega.Expect(envStrings(container(p.Spec.InitContainers, "mid-init").Env)).To(gomega.Equal([]string{"IS_INJECTED=true"}))
		gomega.Expect(container(p.Spec.InitContainers, "pod-init").Env).To(gomega.BeEmpty())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))
		// Plain init containers are not sidecars: only proxy is listed.
		gomega.Expect(readState(p).Hashes[a.Name].SidecarList).To(gomega.Equal([]string{"proxy"}))
		gomega.Expect(readState(p).Hashes[b.Name].SidecarList).To(gomega.BeEmpty())
	})

	ginkgo.It("should inject a native sidecar (restartPolicy Always) and list it as a sidecar with its hash", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "native").InitContainers(
			builder.MakeContainer("mesh", "envoy:v1").RestartAlways(),
			builder.MakeContainer("setup", "busybox:1.36"),
		).Obj())

		p, _ := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"mesh", "setup"}))
		mesh := container(p.Spec.InitContainers, "mesh")
		gomega.Expect(mesh.RestartPolicy).To(gomega.HaveValue(gomega.Equal(corev1.ContainerRestartPolicyAlways)))
		gomega.Expect(container(p.Spec.InitContainers, "setup").RestartPolicy).To(gomega.BeNil())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		entry := readState(p).Hashes[s.Name]
		gomega.Expect(entry.SidecarList).To(gomega.Equal([]string{"mesh"}))
		gomega.Expect(entry.Hash).To(gomega.Equal(s.Annotations[appsv1beta1.SidecarSetHashAnnotation]))
	})

	ginkgo.It("should not inject into a pod that already exists when the pod is updated", func(ctx ginkgo.SpecContext) {
		existing, _, err := createPod(ctx, pod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		createSidecarSet(ctx, sidecarSet(ns, "late").
			InitContainers(builder.MakeContainer("late-init", "busybox:1.36")).
			Containers(builder.MakeContainer("late", "busybox:1.36")).Obj())
		syncRegistry(ctx, ns)

		existing.Labels["touched"] = "yes"
		gomega.Expect(k8s.Update(ctx, existing)).To(gomega.Succeed())
		gomega.Expect(containerNames(existing.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(existing.Spec.InitContainers).To(gomega.BeEmpty())
		gomega.Expect(existing.Annotations).To(gomega.BeEmpty())
		gomega.Expect(existing.Labels).To(gomega.HaveKeyWithValue("touched", "yes"))
	})

	ginkgo.It("should inject nothing while injection is paused, and inject once it is resumed", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "paused").InjectionPaused(true).
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		syncRegistry(ctx, ns)

		p, warnings, err := createPod(ctx, pod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(p.Annotations).To(gomega.BeEmpty())

		ginkgo.By("resuming injection")
		// A merge patch: an update could conflict with the controller's
		// status write for the pod it just found without the sidecars.
		_, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = false })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		resumed, _ := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(containerNames(resumed.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))
	})

	ginkgo.It("should merge imagePullSecrets after the pod's own, without duplicates", func(ctx ginkgo.SpecContext) {
		a, _ := createSidecarSet(ctx, sidecarSet(ns, "a").ImagePullSecrets("s0", "s1", "s2").
			Containers(builder.MakeContainer("sidecar-a", "registry.example.com/a:v1")).Obj())
		b, _ := createSidecarSet(ctx, sidecarSet(ns, "b").ImagePullSecrets("s1", "s4").
			Containers(builder.MakeContainer("sidecar-b", "registry.example.com/b:v1")).Obj())

		p, _ := createInjected(ctx, pod(ns).ImagePullSecrets("s2", "s3", "s3").Obj(), a.Name, b.Name)
		var names []string
		for _, s := range p.Spec.ImagePullSecrets {
			names = append(names, s.Name)
		}
		gomega.Expect(names).To(gomega.Equal([]string{"s2", "s3", "s0", "s1", "s4"}))
	})
})
