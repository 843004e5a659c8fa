// Command bundlegen writes the OLM bundle (bundle/ and bundle.Dockerfile)
// from config/manifests. Run it through `make bundle`; see hack/bundle/generate.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
)

func main() {
	var o generate.Options
	var channels string
	root := flag.String("root", ".", "The repository root.")
	flag.StringVar(&o.Version, "version", "", "The bundle version, x.y.z (default: the latest release in config/manifests/releases.yaml).")
	flag.StringVar(&o.CreatedAt, "created-at", "", "The CSV's createdAt, yyyy-mm-ddThh:mm:ssZ (default: the release's date in config/manifests/releases.yaml).")
	flag.StringVar(&o.Image, "image", "", "The manager image (default: the image of config/manager tagged v<version>).")
	flag.StringVar(&channels, "channels", "", "Comma-separated channels (default: "+generate.DefaultChannel+").")
	flag.StringVar(&o.DefaultChannel, "default-channel", "", "The default channel (default: the first channel).")
	flag.Parse()
	if channels != "" {
		o.Channels = strings.Split(channels, ",")
	}
	if err := run(*root, o); err != nil {
		fmt.Fprintln(os.Stderr, "bundlegen:", err)
		os.Exit(1)
	}
}

func run(root string, o generate.Options) error {
	files, err := generate.Generate(filesys.MakeFsOnDisk(), root, o)
	if err != nil {
		return err
	}
	// The bundle directory is entirely generated: start from scratch so that
	// no stale manifest survives.
	if err := os.RemoveAll(filepath.Join(root, generate.BundleDir)); err != nil {
		return err
	}
	for _, p := range files.Paths() {
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[p], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", p)
	}
	return nil
}
