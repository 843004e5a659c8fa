// Package images checks the release images hack/image builds (make image,
// bundle-image, catalog) the way a user gets them: built once per run,
// pushed to a registry served in-process, pulled back, then taken apart.
// The manager is compiled for every platform (a cold cache takes minutes on
// two cores; a warm one seconds), once for all the tests here, plus once
// more to prove the digest reproducible.
package images

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
)

// The registry every test pushes to and pulls from; set by TestMain.
var registryHost string

func TestMain(m *testing.M) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	registryHost = strings.TrimPrefix(srv.URL, "http://")
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// The version and commit the images are labelled with, and their time.
const (
	version  = "0.1.0"
	revision = "0123456789abcdef0123456789abcdef01234567"
)

var created = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// built is what the shared build pushed, pulled back from the registry.
type built struct {
	root      string
	platforms []v1.Platform

	// managerLocal is the index as built (through an OCI layout on disk).
	managerLocal v1.ImageIndex
	managerBuild time.Duration

	// The images pulled back, and their references pinned by digest.
	manager, bundle, catalog                   v1.ImageIndex
	managerPinned, bundlePinned, catalogPinned string
	// Where they were pushed (tags).
	managerRef, bundleRef, catalogRef string
}

var (
	shared    built
	sharedErr error
	buildOnce sync.Once
)

func metadata(m release.Metadata) release.Metadata {
	m.Version, m.Revision, m.Created = version, revision, created
	return m
}

// images builds, pushes and pulls the three images once per test binary.
func images(t *testing.T) *built {
	t.Helper()
	buildOnce.Do(func() { sharedErr = buildAll(&shared) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return &shared
}

func buildAll(b *built) error {
	// The pulled images read their blobs lazily, with the context of the
	// pull: it must outlive this function.
	ctx := context.Background()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	b.root = root
	if b.platforms, err = release.ParsePlatforms(release.DefaultPlatforms); err != nil {
		return err
	}
	b.managerRef = registryHost + "/sidecarset-operator/sidecarset-operator:v" + version
	b.bundleRef = registryHost + "/sidecarset-operator/sidecarset-operator-bundle:v" + version
	b.catalogRef = registryHost + "/sidecarset-operator/sidecarset-operator-catalog:v" + version
	tmp, err := os.MkdirTemp("", "images-test-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	// The manager, through an OCI layout on disk as `make image` writes it.
	start := time.Now()
	idx, err := release.BuildManager(ctx, root, b.platforms, metadata(release.ManagerMetadata()))
	if err != nil {
		return err
	}
	b.managerBuild = time.Since(start)
	if err := release.WriteLayout(filepath.Join(tmp, "manager"), idx, b.managerRef); err != nil {
		return err
	}
	if b.managerLocal, err = release.ReadLayout(filepath.Join(tmp, "manager")); err != nil {
		return err
	}
	if _, err := release.Push(ctx, b.managerLocal, b.managerRef); err != nil {
		return err
	}
	if b.manager, b.managerPinned, err = release.Pull(ctx, b.managerRef); err != nil {
		return err
	}

	// The bundle, its CSV pinned to the pushed manager.
	bundle, _, err := release.BuildBundle(b.platforms, os.DirFS(filepath.Join(root, "bundle")), b.managerPinned, metadata(release.BundleMetadata()))
	if err != nil {
		return err
	}
	if _, err := release.Push(ctx, bundle, b.bundleRef); err != nil {
		return err
	}
	if b.bundle, b.bundlePinned, err = release.Pull(ctx, b.bundleRef); err != nil {
		return err
	}

	// The catalog of the pulled bundle.
	files, err := release.IndexFiles(b.bundle)
	if err != nil {
		return err
	}
	catalog, _, err := release.BuildCatalog(b.platforms, []release.CatalogBundle{{Image: b.bundlePinned, Files: files}}, metadata(release.CatalogMetadata()))
	if err != nil {
		return err
	}
	if _, err := release.Push(ctx, catalog, b.catalogRef); err != nil {
		return err
	}
	if b.catalog, b.catalogPinned, err = release.Pull(ctx, b.catalogRef); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "images: manager %s (built in %s), bundle %s, catalog %s\n",
		b.managerPinned, b.managerBuild.Round(time.Second), b.bundlePinned, b.catalogPinned)
	return nil
}

// platformImages returns the image of every platform of an index, failing
// unless the index has exactly the built platforms.
func platformImages(t *testing.T, idx v1.ImageIndex, platforms []v1.Platform) map[string]v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(platforms) {
		t.Fatalf("the index has %d manifests, want %d (%v)", len(m.Manifests), len(platforms), platforms)
	}
	out := map[string]v1.Image{}
	for _, p := range platforms {
		img, err := release.PlatformImage(idx, p)
		if err != nil {
			t.Fatal(err)
		}
		out[p.String()] = img
	}
	return out
}

func configFile(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

func files(t *testing.T, img v1.Image) release.Tree {
	t.Helper()
	tree, err := release.Files(img)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// requireTimes fails unless every entry of the image's layers has the
// build's time.
func requireTimes(t *testing.T, img v1.Image) {
	t.Helper()
	times, err := release.FileTimes(img)
	if err != nil {
		t.Fatal(err)
	}
	for p, mt := range times {
		if !mt.Equal(created) {
			t.Errorf("%s has time %s, want %s", p, mt, created)
		}
	}
	if cf := configFile(t, img); !cf.Created.Equal(created) {
		t.Errorf("the config's created is %s, want %s", cf.Created.Time, created)
	}
}
