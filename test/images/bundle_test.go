package images

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
)

// bundleCSVPath is the CSV's path in the bundle image.
func bundleCSVPath(t *testing.T, tree release.Tree) string {
	t.Helper()
	p, err := release.CSVFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The bundle image holds what bundle.Dockerfile's COPY lines put in it, the
// files of bundle/ byte for byte except the CSV (next test).
func TestBundleImage_HoldsWhatBundleDockerfileCopies(t *testing.T) {
	b := images(t)
	final := finalStage(parseDockerfile(t, filepath.Join(b.root, "bundle.Dockerfile"), nil))
	want := copyTree(t, b.root, "/", final.copies, noIgnore)
	for p, img := range platformImages(t, b.bundle, b.platforms) {
		t.Run(p, func(t *testing.T) {
			tree := files(t, img)
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), tree.Paths()); diff != "" {
				t.Fatalf("files (-bundle.Dockerfile +image):\n%s", diff)
			}
			csvPath := bundleCSVPath(t, tree)
			for path, src := range want {
				data, err := os.ReadFile(filepath.Join(b.root, src.src))
				if err != nil {
					t.Fatal(err)
				}
				if path != csvPath && !bytes.Equal(tree[path].Data, data) {
					t.Errorf("/%s differs from %s", path, src.src)
				}
			}
			requireTimes(t, img)
		})
	}
}

// The CSV in the bundle image is bundle/'s with the manager image pinned by
// digest to the pushed manager, and no other change: line for line, only
// the lines naming the tagged manager differ, and by that reference only.
func TestBundleImage_CSVPinsTheManagerByDigest(t *testing.T) {
	b := images(t)
	tree, err := release.IndexFiles(b.bundle)
	if err != nil {
		t.Fatal(err)
	}
	csvPath := bundleCSVPath(t, tree)
	original, err := os.ReadFile(filepath.Join(b.root, "bundle", csvPath))
	if err != nil {
		t.Fatal(err)
	}
	c, err := csv.Decode(original)
	if err != nil {
		t.Fatal(err)
	}
	tagged := c.Metadata.Annotations[csv.AnnotationContainerImage]
	wantPinned := registryHost + "/sidecarset-operator/sidecarset-operator@" + digest(t, b.manager).String()
	if b.managerPinned != wantPinned {
		t.Fatalf("the manager was pulled as %s, want %s", b.managerPinned, wantPinned)
	}

	was, is := strings.Split(string(original), "\n"), strings.Split(string(tree[csvPath].Data), "\n")
	if len(was) != len(is) {
		t.Fatalf("the image's CSV has %d lines, bundle/'s %d", len(is), len(was))
	}
	changed := 0
	for i := range was {
		if was[i] == is[i] {
			continue
		}
		changed++
		if !strings.Contains(was[i], tagged) || strings.ReplaceAll(was[i], tagged, wantPinned) != is[i] {
			t.Errorf("line %d: %q became %q; only %s may become %s", i+1, was[i], is[i], tagged, wantPinned)
		}
	}
	pinned, err := csv.Decode(tree[csvPath].Data)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, d := range pinned.Spec.Install.Spec.Deployments {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			images = append(images, ctr.Image)
		}
	}
	for _, ri := range pinned.Spec.RelatedImages {
		images = append(images, ri.Image)
	}
	images = append(images, pinned.Metadata.Annotations[csv.AnnotationContainerImage])
	if want := 3; changed != want || slices.Contains(images, tagged) || !slices.Contains(images, wantPinned) {
		t.Errorf("%d lines changed, want %d (deployment, relatedImages, containerImage); the CSV's images: %v", changed, want, images)
	}
}

// The bundle image's labels are bundle/metadata/annotations.yaml, as
// bundle.Dockerfile labels it; the index carries the OCI metadata.
func TestBundleImage_LabelsAreTheAnnotations(t *testing.T) {
	b := images(t)
	annotations, err := release.ReadBundle(os.DirFS(filepath.Join(b.root, "bundle")))
	if err != nil {
		t.Fatal(err)
	}
	want, err := release.Annotations(annotations)
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := finalStage(parseDockerfile(t, filepath.Join(b.root, "bundle.Dockerfile"), nil)).labels
	if diff := cmp.Diff(want, dockerfile); diff != "" {
		t.Errorf("bundle.Dockerfile's labels differ from annotations.yaml (-annotations +Dockerfile):\n%s", diff)
	}
	for p, img := range platformImages(t, b.bundle, b.platforms) {
		if diff := cmp.Diff(want, configFile(t, img).Config.Labels); diff != "" {
			t.Errorf("%s: labels (-annotations.yaml +image):\n%s", p, diff)
		}
	}
	m, err := b.bundle.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(metadata(release.BundleMetadata()).Labels(), m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
}

// What OLM unpacks from the bundle image passes the repository's bundle
// validator (offline rules), with the image's labels standing in for
// bundle.Dockerfile's.
func TestBundleImage_PassesTheBundleValidator(t *testing.T) {
	b := images(t)
	final := finalStage(parseDockerfile(t, filepath.Join(b.root, "bundle.Dockerfile"), nil))
	for p, img := range platformImages(t, b.bundle, b.platforms) {
		t.Run(p, func(t *testing.T) {
			dockerfile := "FROM scratch\n" + layout.DockerfileLabels(configFile(t, img).Config.Labels)
			for _, c := range final.copies {
				dockerfile += fmt.Sprintf("COPY %s %s\n", strings.Join(c.srcs, " "), c.dest)
			}
			bundle, err := validate.Load(files(t, img).FS(), []byte(dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			findings := validate.Validate(bundle)
			for _, f := range validate.Errors(findings) {
				t.Error(f)
			}
			if bundle.CSV == nil || len(bundle.CRDs()) == 0 {
				t.Errorf("the validator found no CSV or no CRD in the image")
			}
			t.Logf("%d finding(s), %d error(s)", len(findings), len(validate.Errors(findings)))
		})
	}
}
