package images

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
)

// catalogOf parses the declarative config of a catalog image, failing
// unless it is the image's only file and the image says where it is.
func catalogOf(t *testing.T, idx v1.ImageIndex, platforms []v1.Platform) *release.Catalog {
	t.Helper()
	var out *release.Catalog
	for p, img := range platformImages(t, idx, platforms) {
		if got := configFile(t, img).Config.Labels[release.CatalogConfigsLabel]; got != "/configs" {
			t.Errorf("%s: label %s=%q, want /configs", p, release.CatalogConfigsLabel, got)
		}
		tree := files(t, img)
		want := []string{"configs/sidecarset-operator/catalog.json"}
		if !slices.Equal(tree.Paths(), want) {
			t.Fatalf("%s: files %v, want %v", p, tree.Paths(), want)
		}
		c, err := release.ParseCatalog(tree[want[0]].Data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if out != nil {
			if diff := cmp.Diff(out, c); diff != "" {
				t.Errorf("the platforms' catalogs differ:\n%s", diff)
			}
		}
		out = c
		requireTimes(t, img)
	}
	return out
}

// crdGVKs are the group, kind and versions of the CRDs in bundle/.
func crdGVKs(t *testing.T, root string) []release.GVKProperty {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "bundle", "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []release.GVKProperty
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil || crd.Kind != "CustomResourceDefinition" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			out = append(out, release.GVKProperty{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Version: v.Name})
		}
	}
	if len(out) == 0 {
		t.Fatal("no CRD in bundle/manifests")
	}
	return out
}

// The catalog names the bundle by digest, and the bundle it carries names
// the manager by digest: following the chain from the catalog pulls the
// very images that were pushed.
func TestCatalogImage_PinsTheBundleWhichPinsTheManager(t *testing.T) {
	b := images(t)
	c := catalogOf(t, b.catalog, b.platforms)

	if c.Package.Name != "sidecarset-operator" || c.Package.DefaultChannel != generate.DefaultChannel || c.Package.Icon == nil {
		t.Errorf("olm.package %s, default channel %q, icon %v; want sidecarset-operator, %s, an icon", c.Package.Name, c.Package.DefaultChannel, c.Package.Icon != nil, generate.DefaultChannel)
	}
	name := "sidecarset-operator.v" + version
	wantChannels := []release.Channel{{Schema: release.SchemaChannel, Package: "sidecarset-operator", Name: generate.DefaultChannel,
		Entries: []release.ChannelEntry{{Name: name}}}}
	if diff := cmp.Diff(wantChannels, c.Channels); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	if len(c.Bundles) != 1 {
		t.Fatalf("%d bundles, want 1", len(c.Bundles))
	}
	bundle := c.Bundles[0]
	wantBundle := registryHost + "/sidecarset-operator/sidecarset-operator-bundle@" + digest(t, b.bundle).String()
	if bundle.Name != name || bundle.Image != wantBundle {
		t.Errorf("olm.bundle %s at %s, want %s at %s", bundle.Name, bundle.Image, name, wantBundle)
	}

	pkgs, err := release.Properties[release.PackageProperty](bundle, release.PropertyPackage)
	if err != nil {
		t.Fatal(err)
	}
	if want := []release.PackageProperty{{PackageName: "sidecarset-operator", Version: version}}; !slices.Equal(pkgs, want) {
		t.Errorf("olm.package properties %v, want %v", pkgs, want)
	}
	gvks, err := release.Properties[release.GVKProperty](bundle, release.PropertyGVK)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(crdGVKs(t, b.root), gvks); diff != "" {
		t.Errorf("olm.gvk properties (-CRDs +catalog):\n%s", diff)
	}

	// Every manifest travels as olm.bundle.object; the CSV among them names
	// the manager by digest.
	objects, err := release.Properties[release.BundleObjectProperty](bundle, release.PropertyBundleObj)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Glob(filepath.Join(b.root, "bundle", "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != len(manifests) {
		t.Errorf("%d olm.bundle.object properties, want one per manifest (%d)", len(objects), len(manifests))
	}
	var managerRef string
	for _, o := range objects {
		if !strings.Contains(string(o.Data), `"kind":"ClusterServiceVersion"`) {
			continue
		}
		c, err := csv.Decode(o.Data)
		if err != nil {
			t.Fatal(err)
		}
		managerRef = c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image
	}
	if managerRef != b.managerPinned {
		t.Errorf("the catalog's CSV runs %q, want the pushed manager %s", managerRef, b.managerPinned)
	}
	var related []string
	for _, ri := range bundle.RelatedImages {
		related = append(related, ri.Image)
	}
	if !slices.Contains(related, wantBundle) || !slices.Contains(related, b.managerPinned) {
		t.Errorf("relatedImages %v lack the bundle or the manager", related)
	}

	// Follow the chain through the registry.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	bundleIdx, _, err := release.Pull(ctx, bundle.Image)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, bundleIdx) != digest(t, b.bundle) {
		t.Errorf("the catalog's bundle reference pulls %s, not the pushed bundle", digest(t, bundleIdx))
	}
	managerIdx, _, err := release.Pull(ctx, managerRef)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, managerIdx) != digest(t, b.managerLocal) {
		t.Errorf("the bundle's manager reference pulls %s, not the built manager %s", digest(t, managerIdx), digest(t, b.managerLocal))
	}
	m, err := b.catalog.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(metadata(release.CatalogMetadata()).Labels(), m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
}

// A catalog of this release and the next keeps the upgrade graph the CSVs
// state: the next bundle (generated as `make bundle VERSION=0.2.0` would)
// replaces this one, which the catalog pulls from the registry as `make
// catalog PREVIOUS_BUNDLES=...` does.
func TestCatalog_UpgradeGraphFollowsTheCSVs(t *testing.T) {
	b := images(t)
	generated, err := generate.Generate(filesys.MakeFsOnDisk(), b.root, generate.Options{Version: "0.2.0", CreatedAt: "2027-01-15T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	next := release.Tree{}
	for p, data := range generated {
		if rel, ok := strings.CutPrefix(p, generate.BundleDir); ok {
			next[rel] = release.File{Mode: 0o644, Data: data}
		}
	}
	meta := metadata(release.BundleMetadata())
	meta.Version = ""
	nextIdx, nextFiles, err := release.BuildBundle(b.platforms, next.FS(), b.managerPinned, meta)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	nextRef := strings.Replace(b.bundleRef, ":v"+version, ":v0.2.0", 1)
	nextPinned, err := release.Push(ctx, nextIdx, nextRef)
	if err != nil {
		t.Fatal(err)
	}
	prevIdx, prevPinned, err := release.Pull(ctx, b.bundleRef)
	if err != nil {
		t.Fatal(err)
	}
	prevFiles, err := release.IndexFiles(prevIdx)
	if err != nil {
		t.Fatal(err)
	}
	catalog, rendered, err := release.BuildCatalog(b.platforms, []release.CatalogBundle{
		{Image: nextPinned, Files: nextFiles}, {Image: prevPinned, Files: prevFiles},
	}, metadata(release.CatalogMetadata()))
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := []release.ChannelEntry{
		{Name: "sidecarset-operator.v0.1.0"},
		{Name: "sidecarset-operator.v0.2.0", Replaces: "sidecarset-operator.v0.1.0"},
	}
	if len(rendered.Channels) != 1 {
		t.Fatalf("%d channels, want 1", len(rendered.Channels))
	}
	if diff := cmp.Diff(wantEntries, rendered.Channels[0].Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if head, err := rendered.Channels[0].Head(); err != nil || head.Name != "sidecarset-operator.v0.2.0" {
		t.Errorf("channel head %s (%v), want sidecarset-operator.v0.2.0", head.Name, err)
	}
	var images []string
	for _, bundle := range rendered.Bundles {
		images = append(images, bundle.Image)
	}
	if want := []string{prevPinned, nextPinned}; !slices.Equal(images, want) {
		t.Errorf("bundle images %v, want %v (oldest first)", images, want)
	}

	// Pushed and pulled back, the catalog says the same.
	ref := strings.Replace(b.catalogRef, ":v"+version, ":v0.2.0", 1)
	if _, err := release.Push(ctx, catalog, ref); err != nil {
		t.Fatal(err)
	}
	pulled, _, err := release.Pull(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rendered, catalogOf(t, pulled, b.platforms)); diff != "" {
		t.Errorf("the pulled catalog differs (-rendered +pulled):\n%s", diff)
	}
}

// The bundle and catalog images are reproducible too: rebuilt from the
// same inputs, they have the pushed digests.
func TestBundleAndCatalogImages_AreReproducible(t *testing.T) {
	b := images(t)
	bundle, _, err := release.BuildBundle(b.platforms, os.DirFS(filepath.Join(b.root, "bundle")), b.managerPinned, metadata(release.BundleMetadata()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(t, bundle), digest(t, b.bundle); got != want {
		t.Errorf("the bundle rebuilt is %s, pushed %s", got, want)
	}
	files, err := release.IndexFiles(bundle)
	if err != nil {
		t.Fatal(err)
	}
	catalog, _, err := release.BuildCatalog(b.platforms, []release.CatalogBundle{{Image: b.bundlePinned, Files: files}}, metadata(release.CatalogMetadata()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(t, catalog), digest(t, b.catalog); got != want {
		t.Errorf("the catalog rebuilt is %s, pushed %s", got, want)
	}
}
