package crd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// The examples of the user manual (the seed documents) are in
// testdata/seeds: verbatim where the manual gives a complete object, and
// completed only where it elides parts with "..." (each completed line is
// marked "# completed").
var _ = ginkgo.Describe("The seed examples", func() {
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		_, _, _ = kubectl(ctx, nil, "create", "namespace", "kruise-system")
	})

	newest, err := filepath.Glob("testdata/seeds/newest/*.yaml")
	if err != nil || len(newest) == 0 {
		panic(fmt.Sprintf("no seed examples found: %v", err))
	}
	entries := make([]ginkgo.TableEntry, 0, len(newest))
	for _, f := range newest {
		entries = append(entries, ginkgo.Entry(filepath.Base(f), f))
	}
	ginkgo.DescribeTable("should apply with kubectl apply -f and keep every field as written",
		func(ctx ginkgo.SpecContext, file string) {
			_, stderr, err := kubectl(ctx, nil, "apply", "-f", file)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				_, stderr, err := kubectl(ctx, nil, "delete", "-f", file, "--wait=true")
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
			})
			out, stderr, err := kubectl(ctx, nil, "get", "-f", file, "-o", "json")
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), stderr)
			want := asStored(readObject(file))
			var got map[string]any
			gomega.Expect(json.Unmarshal([]byte(out), &got)).To(gomega.Succeed())
			for _, section := range []string{"spec", "data"} {
				gomega.Expect(missing(want[section], got[section], section)).To(gomega.BeEmpty(),
					"fields of %s were changed or dropped by the API server", file)
			}
			gomega.Expect(missing(want["metadata"].(map[string]any)["labels"], got["metadata"].(map[string]any)["labels"], "metadata.labels")).To(gomega.BeEmpty())
		},
		entries,
	)

	ginkgo.DescribeTable("should reject a seed's invalid spelling with the field path",
		func(ctx ginkgo.SpecContext, file string, wantInStderr []string) {
			_, stderr, err := kubectl(ctx, nil, "apply", "-f", file)
			gomega.Expect(err).To(gomega.HaveOccurred(), "%s was accepted", file)
			for _, w := range wantInStderr {
				gomega.Expect(stderr).To(gomega.ContainSubstring(w))
			}
		},
		ginkgo.Entry("the oldest manual's spec.strategy, which no longer exists",
			"testdata/seeds/oldest/01-strategy-rejected.yaml",
			[]string{`unknown field "spec.strategy"`}),
		ginkgo.Entry("the v1.3 manual's volume with Name and a scalar hostPath",
			"testdata/seeds/v1.3/01-injection-rejected.yaml",
			[]string{`unknown field "spec.volumes[0].Name"`}),
		ginkgo.Entry("the v1.3 manual's canary matchLabels written as a list",
			"testdata/seeds/v1.3/02-canary-rejected.yaml",
			[]string{`spec.updateStrategy.selector.matchLabels`}),
	)

	ginkgo.It(`should reject the literal placeholder "disabled | enabled" naming the allowed values`, func(ctx ginkgo.SpecContext) {
		data, err := os.ReadFile("testdata/seeds/newest/04-injection-enabled.yaml")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		literal := strings.Replace(string(data), "type: enabled", "type: disabled | enabled", 1)
		_, stderr, err := kubectl(ctx, []byte(literal), "apply", "-f", "-")
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(stderr).To(gomega.ContainSubstring(
			`spec.containers[0].shareVolumePolicy.type: Unsupported value: "disabled | enabled": supported values: "enabled", "disabled"`))
	})
})

func readObject(file string) map[string]any {
	data, err := os.ReadFile(file)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var obj map[string]any
	gomega.Expect(yaml.Unmarshal(data, &obj)).To(gomega.Succeed())
	return obj
}

// asStored is a v1alpha1 SidecarSet as it reads back through v1alpha1: its
// spec.namespace is stored as, and reads back as, the namespaceSelector
// {kubernetes.io/metadata.name: <namespace>} (apps.kruise.io/v1beta1 has
// no spec.namespace; OpenKruise 1.9 does the same). Everything else reads
// back as written.
func asStored(obj map[string]any) map[string]any {
	spec, ok := obj["spec"].(map[string]any)
	if obj["kind"] != "SidecarSet" || !ok || spec["namespace"] == nil {
		return obj
	}
	spec["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": spec["namespace"]}}
	delete(spec, "namespace")
	return obj
}

// missing lists the leaves of want that got lacks or has with another value
// (got may have more, such as defaults).
func missing(want, got any, path string) []string {
	switch w := want.(type) {
	case nil:
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path + ": missing"}
		}
		var out []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, missing(w[k], g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d items, got %v", path, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}
