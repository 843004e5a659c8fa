package crd_test

import (
	"encoding/json"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ = ginkgo.Describe("The SidecarSet CRD", func() {
	ginkgo.It("should be installed cluster-scoped, served as v1alpha1 and v1beta1, stored as v1beta1, each with the status subresource and the Kruise printer columns", func(ctx ginkgo.SpecContext) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarsets.apps.kruise.io"}, crd)).To(gomega.Succeed())
		gomega.Expect(crd.Spec.Group).To(gomega.Equal("apps.kruise.io"))
		gomega.Expect(crd.Spec.Scope).To(gomega.Equal(apiextensionsv1.ClusterScoped))
		gomega.Expect(crd.Spec.Versions).To(gomega.HaveLen(2))
		for i, want := range []struct {
			name    string
			storage bool
		}{{"v1alpha1", false}, {"v1beta1", true}} {
			v := crd.Spec.Versions[i]
			gomega.Expect(v.Name).To(gomega.Equal(want.name))
			gomega.Expect(v.Served).To(gomega.BeTrue(), v.Name)
			gomega.Expect(v.Storage).To(gomega.Equal(want.storage), v.Name)
			gomega.Expect(v.Subresources.Status).NotTo(gomega.BeNil(), v.Name)
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
			}), v.Name)
			gomega.Expect(wide).To(gomega.Equal([]string{"NOT-INJECTED=.status.notInjectedPods"}), v.Name)
		}
		gomega.Expect(crd.Spec.Conversion.Strategy).To(gomega.Equal(apiextensionsv1.WebhookConverter))
	})

	ginkgo.It("should list a SidecarSet written in either version through both, converted as OpenKruise 1.9 does", func(ctx ginkgo.SpecContext) {
		alpha := `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: conv-alpha, labels: {apps.kruise.io/sidecarset-custom-version: version-1}}
spec:
  namespace: ns-1
  namespaceSelector: {matchLabels: {env: prod}}
  selector: {matchLabels: {app: web}}
  containers: [{name: alpha, image: alpha:1}]
`
		beta := `apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: conv-beta}
spec:
  customVersion: version-a
  namespaceSelector: {matchLabels: {env: prod}}
  selector: {matchLabels: {app: api}}
  containers: [{name: beta, image: beta:1}]
`
		for _, manifest := range []string{alpha, beta} {
			_, stderr, err := kubectl(ctx, []byte(manifest), "apply", "-f", "-")
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		}
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			_, _, _ = kubectl(ctx, nil, "delete", "sidecarsets", "conv-alpha", "conv-beta")
		})
		read := func(resource, name string) map[string]any {
			out, stderr, err := kubectl(ctx, nil, "get", resource, name, "-o", "json")
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
			var obj map[string]any
			gomega.Expect(json.Unmarshal([]byte(out), &obj)).To(gomega.Succeed())
			return obj
		}
		byName := map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ns-1"}}
		prod := map[string]any{"matchLabels": map[string]any{"env": "prod"}}

		// Written as v1alpha1 with both: the namespace wins, the selector is dropped.
		got := read("sidecarsets.v1beta1.apps.kruise.io", "conv-alpha")
		gomega.Expect(got["spec"]).To(gomega.HaveKeyWithValue("namespaceSelector", byName))
		gomega.Expect(got["spec"]).To(gomega.HaveKeyWithValue("customVersion", "version-1"))
		gomega.Expect(got["metadata"]).NotTo(gomega.HaveKey("labels"))
		got = read("sidecarsets.v1alpha1.apps.kruise.io", "conv-alpha")
		gomega.Expect(got["spec"]).NotTo(gomega.HaveKey("namespace"))
		gomega.Expect(got["spec"]).To(gomega.HaveKeyWithValue("namespaceSelector", byName))
		gomega.Expect(got["metadata"]).To(gomega.HaveKeyWithValue("labels", map[string]any{"apps.kruise.io/sidecarset-custom-version": "version-1"}))

		// Written as v1beta1: spec.customVersion reads back as the label.
		got = read("sidecarsets.v1alpha1.apps.kruise.io", "conv-beta")
		gomega.Expect(got["spec"]).NotTo(gomega.HaveKey("customVersion"))
		gomega.Expect(got["spec"]).To(gomega.HaveKeyWithValue("namespaceSelector", prod))
		gomega.Expect(got["metadata"]).To(gomega.HaveKeyWithValue("labels", map[string]any{"apps.kruise.io/sidecarset-custom-version": "version-a"}))

		for _, resource := range []string{"sidecarsets.v1alpha1.apps.kruise.io", "sidecarsets.v1beta1.apps.kruise.io"} {
			out, stderr, err := kubectl(ctx, nil, "get", resource, "-o", "name")
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
			gomega.Expect(strings.Fields(out)).To(gomega.ContainElements("sidecarset.apps.kruise.io/conv-alpha", "sidecarset.apps.kruise.io/conv-beta"), resource)
		}

		// kubectl apply of the same v1alpha1 manifest again: the three-way
		// merge adds spec.namespace next to the stored namespaceSelector
		// (OpenKruise 1.9's case 5); it is accepted, the namespace winning.
		_, stderr, err := kubectl(ctx, []byte(alpha), "apply", "-f", "-")
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
		got = read("sidecarsets.v1beta1.apps.kruise.io", "conv-alpha")
		gomega.Expect(got["spec"]).To(gomega.HaveKeyWithValue("namespaceSelector", byName))
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
