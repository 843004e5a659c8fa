package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// webhookByIndex finds a webhook of a configuration named by its position:
// a JSON patch path (/webhooks/0/...) or a JSONPath or jq index
// (.webhooks[1]). The order of the entries is the manifests', and it
// differs between installs (OLM generates one configuration per webhook),
// so a command that picks the first entry reads or patches the wrong one.
var webhookByIndex = regexp.MustCompile(`webhooks(/[0-9]+|\[[0-9]+\])`)

var _ = ginkgo.Describe("The guide's webhook commands", func() {
	ginkgo.It("should name a webhook of a configuration by its name, never by its index", func() {
		root, err := filepath.Abs(filepath.Join(docsDir, ".."))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		pages := []string{filepath.Join(root, "README.md")}
		gomega.Expect(filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				pages = append(pages, path)
			}
			return err
		})).To(gomega.Succeed())
		var found []string
		for _, path := range pages {
			data, err := os.ReadFile(path)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			rel, err := filepath.Rel(root, path)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for i, line := range strings.Split(string(data), "\n") {
				if m := webhookByIndex.FindString(line); m != "" {
					found = append(found, rel+":"+strconv.Itoa(i+1)+": "+m)
				}
			}
		}
		gomega.Expect(found).To(gomega.BeEmpty(),
			"select the webhook by name: a strategic merge patch keyed by name, or the JSONPath filter .webhooks[?(@.name==\"mpod.sidecarset-operator.dev\")]")
	})
})
