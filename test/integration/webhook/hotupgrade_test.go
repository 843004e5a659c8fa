package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("Pod injection of hot-upgrade sidecars", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should inject <name>-1 with the image and <name>-2 with the empty image, with their version annotations", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "hot").Containers(
			builder.MakeContainer("proxy", "envoy:v1").Env("MODE", "hot").HotUpgrade("envoy:empty"),
		).InitContainers(
			builder.MakeContainer("mesh", "mesh:v1").RestartAlways().HotUpgrade("mesh:empty"),
		).Obj())

		p, warnings := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy-1", "proxy-2", "main"}))
		gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"mesh-1", "mesh-2"}))
		for _, twin := range []struct {
			container corev1.Container
			image     string
		}{
			{container(p.Spec.Containers, "proxy-1"), "envoy:v1"},
			{container(p.Spec.Containers, "proxy-2"), "envoy:empty"},
			{container(p.Spec.InitContainers, "mesh-1"), "mesh:v1"},
			{container(p.Spec.InitContainers, "mesh-2"), "mesh:empty"},
		} {
			c := twin.container
			gomega.Expect(c.Image).To(gomega.Equal(twin.image), c.Name)
			own := []string{}
			if c.Name == "proxy-1" || c.Name == "proxy-2" {
				own = []string{"MODE=hot"}
			}
			gomega.Expect(envStrings(c.Env)).To(gomega.Equal(append(own,
				"IS_INJECTED=true",
				"SIDECARSET_VERSION<-metadata.annotations['version.sidecarset.kruise.io/"+c.Name+"']",
				"SIDECARSET_VERSION_ALT<-metadata.annotations['versionalt.sidecarset.kruise.io/"+c.Name+"']",
			)), c.Name)
		}
		for _, c := range p.Spec.InitContainers {
			gomega.Expect(c.RestartPolicy).To(gomega.HaveValue(gomega.Equal(corev1.ContainerRestartPolicyAlways)), c.Name)
		}

		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("version.sidecarset.kruise.io/proxy-1", "1"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("versionalt.sidecarset.kruise.io/proxy-1", "0"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("version.sidecarset.kruise.io/proxy-2", "0"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("versionalt.sidecarset.kruise.io/proxy-2", "1"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("version.sidecarset.kruise.io/mesh-1", "1"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("versionalt.sidecarset.kruise.io/mesh-2", "1"))
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.WorkingHotUpgradeContainerAnnotation,
			`{"mesh":"mesh-1","proxy":"proxy-1"}`))
		gomega.Expect(readState(p).Hashes[s.Name].SidecarList).To(gomega.Equal([]string{"mesh", "proxy"}))
	})

	ginkgo.It("should keep the working twins of another SidecarSet already recorded on the pod", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "hot").Containers(
			builder.MakeContainer("proxy", "envoy:v1").HotUpgrade("envoy:empty")).Obj())

		p, _ := createInjected(ctx, pod(ns).
			Annotation(appsv1beta1.WorkingHotUpgradeContainerAnnotation, `{"agent":"agent-2"}`).Obj(), s.Name)
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.WorkingHotUpgradeContainerAnnotation,
			`{"agent":"agent-2","proxy":"proxy-1"}`))
	})
})
