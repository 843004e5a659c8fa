package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// The records of the objects a SidecarSet was judged against (issue 38,
// N5 and N7): the mutating webhook writes them, the pod webhook obeys them.
// A namespace cannot be deleted on envtest (no namespace controller): the
// e2e suite (identity_security_test.go) deletes and re-creates one.
var _ = ginkgo.Describe("SidecarSet identity records", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should record the UID of the namespace a SidecarSet names, over the author's value, and keep it on a pause", func(ctx ginkgo.SpecContext) {
		nsObj := &corev1.Namespace{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(gomega.Succeed())
		want := `{"` + ns + `":"` + string(nsObj.UID) + `"}`

		s, _ := createSidecarSet(ctx, sidecarSet(ns, "pinned").Namespace(ns).
			Annotation(appsv1beta1.NamespaceUIDsAnnotation, `{"`+ns+`":"forged"}`).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj())
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.NamespaceUIDsAnnotation, want))

		// The operator's pause (updateStrategy.paused alone) keeps it, even
		// when the request carries another value.
		_, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.Paused = true
			s.Annotations[appsv1beta1.NamespaceUIDsAnnotation] = `{"` + ns + `":"forged"}`
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.NamespaceUIDsAnnotation, want))
		gomega.Expect(s.Spec.UpdateStrategy.Paused).To(gomega.BeTrue())

		p, _ := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.ContainElement("agent"))
	})

	ginkgo.It("should refuse a canary whose base does not exist", func(ctx ginkgo.SpecContext) {
		canary := sidecarSet(ns, "canary").NotUpdate().
			Annotation(appsv1beta1.SidecarSetCanaryAnnotation, "true").Annotation(appsv1beta1.SidecarSetBaseAnnotation, ns+"-base").
			Containers(builder.MakeContainer("proxy", "envoy:v2")).Obj()
		err := k8s.Create(ctx, canary)
		gomega.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "%v", err)
		gomega.Expect(causes(err)).To(gomega.ContainElement(
			`metadata.annotations[apps.kruise.io/sidecarset-base]: Not found: "` + ns + `-base": no SidecarSet named "` + ns +
				`-base" exists: create the base first, or remove the canary annotations`))
	})

	ginkgo.It("should not let a canary replace a base deleted and created again until the canary is written again", func(ctx ginkgo.SpecContext) {
		baseObj := sidecarSet(ns, "base").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj()
		base, _ := createSidecarSet(ctx, baseObj.DeepCopy())
		canary := sidecarSet(ns, "canary").SelectorLabel("canary", "true").NotUpdate().
			Annotation(appsv1beta1.SidecarSetCanaryAnnotation, "true").Annotation(appsv1beta1.SidecarSetBaseAnnotation, base.Name).
			Containers(builder.MakeContainer("proxy", "envoy:v2")).Obj()
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Create(ctx, canary.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed())
		canary, _ = createSidecarSet(ctx, canary)
		gomega.Expect(canary.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.CanaryBaseUIDAnnotation, string(base.UID)))
		createInjected(ctx, pod(ns).Label("canary", "true").Obj(), canary.Name)

		// The base is deleted and created again: a new object of the same
		// name, which the canary was never judged against.
		gomega.Expect(k8s.Delete(ctx, base)).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			err := env.ManagerCache.Get(ctx, client.ObjectKeyFromObject(base), &appsv1beta1.SidecarSet{})
			g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "the operator's cache still has the base: %v", err)
		}).WithContext(ctx).Should(gomega.Succeed())
		again, _ := createSidecarSet(ctx, baseObj.DeepCopy())
		gomega.Expect(again.UID).NotTo(gomega.Equal(base.UID))

		p, warnings := createInjected(ctx, pod(ns).Label("canary", "true").Obj(), again.Name)
		gomega.Expect(container(p.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v1"))
		gomega.Expect(warnings).To(gomega.ContainElement(`SidecarSet "` + canary.Name + `" is not injected: its base "` + again.Name +
			`" was deleted and created again since the canary was written (UID ` + string(base.UID) + ` then, ` + string(again.UID) +
			` now): the canary is left out, and the base applies, until the canary is written again`))

		// Written again (and judged again), the canary replaces the new base.
		_, err := patchSidecarSet(ctx, canary, func(s *appsv1beta1.SidecarSet) { s.Labels = map[string]string{"rewritten": "true"} })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(canary.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.CanaryBaseUIDAnnotation, string(again.UID)))
		p, _ = createInjected(ctx, pod(ns).Label("canary", "true").Obj(), canary.Name)
		gomega.Expect(container(p.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v2"))
	})
})
