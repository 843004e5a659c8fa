package crd_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ = ginkgo.Describe("The SidecarSet CRD", func() {
	ginkgo.It("should be installed cluster-scoped with a status subresource and the Kruise printer columns", func(ctx ginkgo.SpecContext) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarsets.apps.kruise.io"}, crd)).To(gomega.Succeed())
		gomega.Expect(crd.Spec.Group).To(gomega.Equal("apps.kruise.io"))
		gomega.Expect(crd.Spec.Scope).To(gomega.Equal(apiextensionsv1.ClusterScoped))
		gomega.Expect(crd.Spec.Versions).To(gomega.HaveLen(1))
		v := crd.Spec.Versions[0]
		gomega.Expect(v.Name).To(gomega.Equal("v1alpha1"))
		gomega.Expect(v.Subresources.Status).NotTo(gomega.BeNil())
		var columns, wide []string
		for _, c := range v.AdditionalPrinterColumns {
			if c.Priority > 0 {
				wide = append(wide, c.Name+"="+c.JSONPath)
				continue
			}
			columns = append(columns, c.Name+"="+c.JSONPath)
		}
		// The default columns are the manual's; the wide output adds ours.
		gomega.Expect(columns).To(gomega.Equal([]string{
			"MATCHED=.status.matchedPods", "UPDATED=.status.updatedPods", "READY=.status.readyPods", "AGE=.metadata.creationTimestamp",
		}))
		gomega.Expect(wide).To(gomega.Equal([]string{"NOT-INJECTED=.status.notInjectedPods"}))
	})

	ginkgo.It("should show the printer columns in kubectl get sidecarsets", func(ctx ginkgo.SpecContext) {
		_, stderr, err := kubectl(ctx, nil, "apply", "-f", "testdata/seeds/newest/01-sidecarset.yaml")
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			_, _, _ = kubectl(ctx, nil, "delete", "-f", "testdata/seeds/newest/01-sidecarset.yaml")
		})
		out, stderr, err := kubectl(ctx, nil, "get", "sidecarsets")
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		gomega.Expect(out).To(gomega.MatchRegexp(`(?m)^NAME\s+MATCHED\s+UPDATED\s+READY\s+AGE\s*$`))
		gomega.Expect(out).To(gomega.MatchRegexp(`(?m)^test-sidecarset\s+`))
	})

	ginkgo.It("should teach the update strategy through kubectl explain", func(ctx ginkgo.SpecContext) {
		out, stderr, err := kubectl(ctx, nil, "explain", "sidecarset.spec.updateStrategy")
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		for _, want := range []string{
			"GROUP:      apps.kruise.io",
			"updateStrategy controls the in-place upgrade",
			"maxUnavailable",
			"partition is the number, or percentage of matched pods, kept on the old",
			"paused stops in-place upgrades",
			"priorityStrategy",
			"scatterStrategy",
			"selector limits the upgrade",
			"type is RollingUpdate",
		} {
			gomega.Expect(out).To(gomega.ContainSubstring(want))
		}
	})
})
