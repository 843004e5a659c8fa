// Command image builds and pushes the release images without a container
// engine (see hack/image/release): OCI image layouts on disk, pushed to any
// registry with the docker config's credentials. Run it through the
// Makefile (make image, bundle-image, catalog and their -push targets).
//
//	image manager --out=DIR [--root=.] [common flags]
//	image bundle  --out=DIR --manager-layout=DIR --manager-image=REF [--bundle=bundle] [common flags]
//	image catalog --out=DIR --bundle-layout=DIR --bundle-image=REF [--previous-bundle=REF ...] [common flags]
//	image push    --layout=DIR --image=REF
//
// The common flags: --image (the reference recorded in the layout),
// --platforms, --source-date-epoch and the labels (--version, --revision,
// --title, --description, --source, --licenses).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
)

const usage = `usage: image manager|bundle|catalog|push [flags]
  manager  compile the manager for every platform and write its image index
  bundle   write the bundle image of bundle/, the manager pinned by digest
  catalog  write the file-based catalog image of the bundle (and earlier ones)
  push     push an image layout to a registry
Run "image COMMAND -h" for a command's flags.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func(context.Context, []string) error{
		"manager": managerCmd, "bundle": bundleCmd, "catalog": catalogCmd, "push": pushCmd,
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := cmd(context.Background(), os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "image %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// common are the flags every build command has.
type common struct {
	out, image, platforms, epoch string
	meta                         release.Metadata
}

func (c *common) register(fs *flag.FlagSet, defaults release.Metadata) {
	fs.StringVar(&c.out, "out", "", "The OCI image layout directory to write (replaced).")
	fs.StringVar(&c.image, "image", "", "The image's intended reference, recorded in the layout.")
	fs.StringVar(&c.platforms, "platforms", release.DefaultPlatforms, "Comma-separated os/arch platforms.")
	fs.StringVar(&c.epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Every time in the image, in seconds since 1970 (empty: 0).")
	fs.StringVar(&c.meta.Title, "title", defaults.Title, "The org.opencontainers.image.title label.")
	fs.StringVar(&c.meta.Description, "description", defaults.Description, "The org.opencontainers.image.description label.")
	fs.StringVar(&c.meta.Version, "version", "", "The org.opencontainers.image.version label.")
	fs.StringVar(&c.meta.Revision, "revision", "", "The org.opencontainers.image.revision label (the commit).")
	fs.StringVar(&c.meta.Source, "source", defaults.Source, "The org.opencontainers.image.source label.")
	fs.StringVar(&c.meta.Licenses, "licenses", defaults.Licenses, "The org.opencontainers.image.licenses label.")
}

// parse reads the flags and resolves the platforms and the creation time.
func (c *common) parse(fs *flag.FlagSet, args []string) ([]v1.Platform, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.out == "" {
		return nil, fmt.Errorf("--out is required")
	}
	secs := int64(0)
	if c.epoch != "" {
		var err error
		if secs, err = strconv.ParseInt(c.epoch, 10, 64); err != nil {
			return nil, fmt.Errorf("--source-date-epoch %q: %w", c.epoch, err)
		}
	}
	c.meta.Created = time.Unix(secs, 0).UTC()
	return release.ParsePlatforms(c.platforms)
}

// write stores the index at --out and reports its digest.
func (c *common) write(idx v1.ImageIndex) error {
	if err := release.WriteLayout(c.out, idx, c.image); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", c.out, d)
	return nil
}

func managerCmd(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	c.register(fs, release.ManagerMetadata())
	root := fs.String("root", ".", "The repository root (the manager's main package is its cmd/manager).")
	platforms, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	idx, err := release.BuildManager(ctx, *root, platforms, c.meta)
	if err != nil {
		return err
	}
	return c.write(idx)
}

// input is an image built earlier, the input of the next: its OCI layout
// and where it is pushed (--<what>-layout, --<what>-image).
type input struct {
	what       string
	dir, image *string
}

func registerInput(fs *flag.FlagSet, what, pinnedBy string) input {
	return input{what: what,
		dir:   fs.String(what+"-layout", "", "The "+what+"'s image layout (image "+what+" --out)."),
		image: fs.String(what+"-image", "", "Where the "+what+" is pushed; "+pinnedBy+" names its repository at the layout's digest."),
	}
}

// read returns the image with the reference where it is pushed, pinned to
// its digest.
func (in input) read() (v1.ImageIndex, string, error) {
	if *in.dir == "" || *in.image == "" {
		return nil, "", fmt.Errorf("--%s-layout and --%s-image are required", in.what, in.what)
	}
	idx, err := release.ReadLayout(*in.dir)
	if err != nil {
		return nil, "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, "", err
	}
	pinned, err := release.PinnedReference(*in.image, d)
	return idx, pinned, err
}

func bundleCmd(_ context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	c.register(fs, release.BundleMetadata())
	bundle := fs.String("bundle", "bundle", "The bundle directory.")
	managerInput := registerInput(fs, "manager", "the CSV")
	platforms, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	_, manager, err := managerInput.read()
	if err != nil {
		return err
	}
	idx, _, err := release.BuildBundle(platforms, os.DirFS(*bundle), manager, c.meta)
	if err != nil {
		return err
	}
	return c.write(idx)
}

// repeated is a flag given any number of times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func catalogCmd(ctx context.Context, args []string) error {
	var c common
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	c.register(fs, release.CatalogMetadata())
	bundleInput := registerInput(fs, "bundle", "the catalog")
	var previous repeated
	fs.Var(&previous, "previous-bundle", "An earlier release's bundle image to include (pulled; repeatable).")
	platforms, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	idx, pinned, err := bundleInput.read()
	if err != nil {
		return err
	}
	files, err := release.IndexFiles(idx)
	if err != nil {
		return err
	}
	bundles := []release.CatalogBundle{{Image: pinned, Files: files}}
	for _, ref := range previous {
		prev, pinned, err := release.Pull(ctx, ref)
		if err != nil {
			return err
		}
		files, err := release.IndexFiles(prev)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		bundles = append(bundles, release.CatalogBundle{Image: pinned, Files: files})
	}
	catalog, _, err := release.BuildCatalog(platforms, bundles, c.meta)
	if err != nil {
		return err
	}
	return c.write(catalog)
}

func pushCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	dir := fs.String("layout", "", "The image layout to push.")
	image := fs.String("image", "", "The reference to push to (registry/repository:tag).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *image == "" {
		return fmt.Errorf("--layout and --image are required")
	}
	idx, err := release.ReadLayout(*dir)
	if err != nil {
		return err
	}
	pinned, err := release.Push(ctx, idx, *image)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s as %s\n", *dir, pinned)
	return nil
}
