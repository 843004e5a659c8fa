package release

import (
	"context"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refNameAnnotation names an image of an OCI layout (its intended tag).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes idx as the only image of a fresh OCI image layout at
// dir (whatever was there is removed), named ref.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameAnnotation: ref}))
	}
	return p.AppendIndex(idx, opts...)
}

// ReadLayout returns the only index of the OCI image layout at dir.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s (build it first): %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("the image layout %s holds %d entries; want one image index", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

func remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// Push writes idx to the registry as ref (a tag, usually) with the
// credentials of the docker config (~/.docker/config.json, credential
// helpers), and returns the reference pinned by digest.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(r, idx, remoteOptions(ctx)...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return PinnedReference(ref, d)
}

// Pull reads the index ref names from its registry, and returns it with
// the reference pinned by digest.
func Pull(ctx context.Context, ref string) (v1.ImageIndex, string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, "", err
	}
	idx, err := remote.Index(r, remoteOptions(ctx)...)
	if err != nil {
		return nil, "", fmt.Errorf("pulling %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, "", err
	}
	pinned, err := PinnedReference(ref, d)
	return idx, pinned, err
}

// IndexFiles returns the files of the first image of an index (the bundle
// and catalog images have the same files on every platform).
func IndexFiles(idx v1.ImageIndex) (Tree, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) == 0 {
		return nil, fmt.Errorf("the index is empty")
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	return Files(img)
}
