package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("Pod injection matching", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should inject a pod the selector matches and leave a pod it does not match untouched", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "web").SelectorLabel("tier", "web").
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())

		matched, _ := createInjected(ctx, pod(ns).Label("tier", "web").Obj(), s.Name)
		gomega.Expect(containerNames(matched.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))

		other, warnings, err := createPod(ctx, pod(ns).Label("tier", "db").Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(containerNames(other.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(other.Annotations).To(gomega.BeEmpty())
	})

	ginkgo.It("should inject only pods of the namespace spec.namespace names", func(ctx ginkgo.SpecContext) {
		elsewhere := newNamespace(ctx, nil)
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "pinned").Namespace(ns).
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())

		inside, _ := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(containerNames(inside.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))

		outside, _, err := createPod(ctx, builder.MakePod("pod", elsewhere).Label(specLabel, ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(outside.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(outside.Annotations).To(gomega.BeEmpty())
	})

	ginkgo.It("should inject by namespace labels, reading them at admission when they change", func(ctx ginkgo.SpecContext) {
		production := newNamespace(ctx, map[string]string{"environment": "production"})
		staging := newNamespace(ctx, map[string]string{"environment": "staging"})
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "prod").
			NamespaceSelector(map[string]string{"environment": "production"}).
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		inProduction := func(namespace string) *corev1.Pod {
			return builder.MakePod("pod", namespace).Label(specLabel, ns).Obj()
		}

		injected, _ := createInjected(ctx, inProduction(production), s.Name)
		gomega.Expect(containerNames(injected.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))

		notInjected, _, err := createPod(ctx, inProduction(staging))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(notInjected.Spec.Containers)).To(gomega.Equal([]string{"main"}))

		ginkgo.By("relabelling the staging namespace as production")
		nsObj := &corev1.Namespace{}
		gomega.Expect(k8s.Get(ctx, keyOf(staging), nsObj)).To(gomega.Succeed())
		nsObj.Labels["environment"] = "production"
		gomega.Expect(k8s.Update(ctx, nsObj)).To(gomega.Succeed())
		now, _ := createInjected(ctx, inProduction(staging), s.Name)
		gomega.Expect(containerNames(now.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))
	})

	ginkgo.It("should inject several SidecarSets in name order whatever their creation order", func(ctx ginkgo.SpecContext) {
		var names []string
		for _, suffix := range []string{"c", "a", "b"} {
			s, _ := createSidecarSet(ctx, sidecarSet(ns, suffix).Containers(
				builder.MakeContainer("before-"+suffix, "busybox:1.36"),
				builder.MakeContainer("after-"+suffix, "busybox:1.36").InjectPolicy(appsv1beta1.AfterAppContainerType),
			).Obj())
			names = append(names, s.Name)
		}
		for range 2 {
			p, warnings := createInjected(ctx, pod(ns).Obj(), names...)
			gomega.Expect(warnings).To(gomega.BeEmpty())
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{
				"before-a", "before-b", "before-c", "main", "after-a", "after-b", "after-c"}))
			gomega.Expect(p.Annotations[appsv1beta1.SidecarSetListAnnotation]).To(gomega.Equal(joinSorted(names...)))
		}
	})

	ginkgo.It("should not replace a container of the pod that has a sidecar's name, and warn", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "proxy").
			Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		syncRegistry(ctx, ns)

		p, warnings, err := createPod(ctx, pod(ns).Containers(
			builder.MakeContainer("main", "busybox:1.36"), builder.MakeContainer("proxy", "my-proxy:v7")).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.Equal([]string{
			`SidecarSet "` + s.Name + `": sidecar "proxy" was not injected: the pod's container "proxy" has that name and is kept as it is`}))
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"main", "proxy"}))
		gomega.Expect(container(p.Spec.Containers, "proxy").Image).To(gomega.Equal("my-proxy:v7"))
		gomega.Expect(p.Annotations).To(gomega.BeEmpty())
	})

	ginkgo.It("should leave out, with a warning, a sidecar whose name an earlier SidecarSet already injects, and inject the others", func(ctx ginkgo.SpecContext) {
		first, _ := createSidecarSet(ctx, sidecarSet(ns, "a").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		// Our validation rejects the second SidecarSet; one created before
		// the operator took over (OpenKruise misses such overlaps) exists
		// anyway, and injection must not duplicate the container.
		second := createUnvalidated(ctx, sidecarSet(ns, "b").Containers(
			builder.MakeContainer("proxy", "envoy:v2"), builder.MakeContainer("logger", "fluentbit:v1")).Obj())
		syncRegistry(ctx, ns)

		p, warnings := createInjected(ctx, pod(ns).Obj(), first.Name, second.Name)
		gomega.Expect(warnings).To(gomega.Equal([]string{`SidecarSet "` + second.Name +
			`": sidecar "proxy" was not injected: its name is taken by sidecar "proxy" of SidecarSet "` + first.Name + `"`}))
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy", "logger", "main"}))
		gomega.Expect(container(p.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v1"))
		gomega.Expect(readState(p).Hashes).To(gomega.HaveLen(2))
		gomega.Expect(readState(p).Hashes[second.Name].SidecarList).To(gomega.Equal([]string{"logger"}))
	})
})
