package docs_test

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
)

// The Kustomization examples of the guide are not objects the docs suite
// can apply: they are built here, against this checkout's config/default.
var _ = ginkgo.Describe("The guide's kustomize overlays", func() {
	ginkgo.It("should keep both pod webhooks away from kube-system in install.md's overlay", func() {
		p, err := readPage("install.md")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		blocks, problems := yamlBlocks(p)
		gomega.Expect(problems).To(gomega.BeEmpty())
		var overlay string
		for _, b := range blocks {
			if strings.Contains(b.body, "kind: Kustomization") && strings.Contains(b.body, "kube-system") {
				overlay = b.body
			}
		}
		gomega.Expect(overlay).NotTo(gomega.BeEmpty(), "install.md has the overlay keeping the pod webhooks away from kube-system")

		root, err := filepath.Abs(filepath.Join(docsDir, ".."))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		dir := ginkgo.GinkgoT().TempDir()
		rel, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// The page names config/default as from an overlay two levels down.
		overlay = strings.Replace(overlay, "../../config/default", filepath.ToSlash(rel), 1)
		gomega.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600)).To(gomega.Succeed())
		objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), dir)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())

		var podWebhooks []admissionregistrationv1.MutatingWebhook
		for _, u := range objects {
			if u.GetKind() != "MutatingWebhookConfiguration" {
				continue
			}
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c)).To(gomega.Succeed())
			for _, w := range c.Webhooks {
				if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil && *w.ClientConfig.Service.Path == "/mutate-pod" {
					podWebhooks = append(podWebhooks, w)
				}
			}
		}
		gomega.Expect(podWebhooks).To(gomega.HaveLen(2), "the best-effort and the fail-closed pod webhooks")
		for _, w := range podWebhooks {
			gomega.Expect(w.NamespaceSelector).NotTo(gomega.BeNil(), "webhook %s", w.Name)
			gomega.Expect(w.NamespaceSelector.MatchExpressions).To(gomega.ContainElement(gomega.And(
				gomega.HaveField("Key", "kubernetes.io/metadata.name"),
				gomega.HaveField("Operator", gomega.BeEquivalentTo("NotIn")),
				gomega.HaveField("Values", gomega.ContainElement("kube-system")))), "webhook %s", w.Name)
		}
	})
})
