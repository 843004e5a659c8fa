package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidecarset-operator/sidecarset-operator/test/node/images"
)

// imagesCreated is every node image's creation time: the images depend on
// their inputs only.
var imagesCreated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pushCatalogue builds every image of the catalogue and pushes it to the
// registry under its full name.
func pushCatalogue(ctx context.Context, registry, busybox string, nodebox []byte) (int, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return 0, err
	}
	list, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return 0, fmt.Errorf("%s --list: %w", busybox, err)
	}
	in := images.Inputs{
		Busybox: bb, Applets: strings.Fields(string(list)), Nodebox: nodebox,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, Created: imagesCreated,
	}
	b, err := images.NewBuilder(in)
	if err != nil {
		return 0, err
	}
	refs := map[name.Reference]remote.Taggable{}
	for _, img := range images.Catalogue {
		built, err := b.Build(img)
		if err != nil {
			return 0, err
		}
		ref, err := PushReference(registry, img.Ref)
		if err != nil {
			return 0, err
		}
		refs[ref] = built
	}
	if err := remote.MultiWrite(refs, remote.WithContext(ctx)); err != nil {
		return 0, fmt.Errorf("pushing the node's images to %s: %w", registry, err)
	}
	return len(refs), nil
}

// PushReference is where an image goes in the node's registry so that the
// node pulls it by ref: under its full name as containerd writes it
// (docker.io/library/nginx:1.25 for nginx:1.25).
func PushReference(registry, ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	host := r.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io" // containerd's name for Docker Hub
	}
	full := registry + "/" + host + "/" + r.Context().RepositoryStr()
	if d, ok := r.(name.Digest); ok {
		return name.NewDigest(full+"@"+d.DigestStr(), name.Insecure)
	}
	return name.NewTag(full+":"+r.Identifier(), name.Insecure)
}
