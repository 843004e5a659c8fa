package controller_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("The SidecarSet status", func() {
	ginkgo.It("should hold the required zero counts and collisionCount 0 when the SidecarSet selects no pod", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		set := builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer("agent", "agent:1")).Obj()
		createSidecarSet(ctx, set)

		// Read as stored, not through the Go type, which decodes an
		// absent count as 0.
		gomega.Eventually(func(g gomega.Gomega) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(appsv1beta1.GroupVersion.WithKind("SidecarSet"))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: set.Name}, u)).To(gomega.Succeed())
			g.Expect(u.Object["status"]).To(gomega.HaveKeyWithValue("observedGeneration", gomega.BeEquivalentTo(u.GetGeneration())),
				"status of an older generation")
			for _, f := range []string{"matchedPods", "updatedPods", "readyPods", "collisionCount"} {
				g.Expect(u.Object["status"]).To(gomega.HaveKeyWithValue(f, gomega.BeEquivalentTo(0)), "status.%s", f)
			}
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})
