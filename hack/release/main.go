// Command release writes a release's files into dist/ (make release): the
// kubectl plugin for each platform as a tar.gz with the LICENSE, the krew
// plugin manifest naming their checksums, the release notes (CHANGELOG.md's
// section for the version), the image references pinned by the digests of
// the OCI image layouts make image, bundle-image and catalog wrote, and
// checksums.txt (sha256sum's format) over every file. dist/install.yaml
// (make build-installer) is checksummed too when present.
//
//	release --version=0.1.0 --revision=COMMIT --image=manager=bin/images/manager=ghcr.io/...:v0.1.0 ... [--snapshot]
//
// The krew manifest's Go type is an object (TypeMeta and ObjectMeta):
// make manifests, which reads every package, must not write a CRD for it.
//
// +kubebuilder:skip
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
	"github.com/sidecarset-operator/sidecarset-operator/version"
)

// The repository, where the archives are downloaded from.
const (
	homepage  = "https://github.com/sidecarset-operator/sidecarset-operator"
	downloads = homepage + "/releases/download"
)

// The files release writes besides the archives.
const (
	krewFile      = krewName + ".yaml"
	notesFile     = "release-notes.md"
	imagesFile    = "images.txt"
	checksumsFile = "checksums.txt"
	installFile   = "install.yaml"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// imageFlag is --image=NAME=LAYOUT=REFERENCE, repeatable.
type imageFlag []image

type image struct{ name, layout, ref string }

func (f *imageFlag) String() string { return fmt.Sprint(*f) }

func (f *imageFlag) Set(v string) error {
	parts := strings.SplitN(v, "=", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("want NAME=LAYOUT=REFERENCE, got %q", v)
	}
	*f = append(*f, image{parts[0], parts[1], parts[2]})
	return nil
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	ver := fs.String("version", "", "The release's version, MAJOR.MINOR.PATCH (the Makefile's VERSION).")
	revision := fs.String("revision", "", "The commit the release is built from.")
	root := fs.String("root", ".", "The repository root.")
	dist := fs.String("dist", "dist", "Where the release's files are written.")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "The plugin's os/arch platforms.")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "The archives' file times, in seconds since 1970 (empty: 0).")
	snapshot := fs.Bool("snapshot", false, "Take the release notes from CHANGELOG.md's Unreleased section (a build to try, not to publish).")
	var images imageFlag
	fs.Var(&images, "image", "NAME=LAYOUT=REFERENCE: an image built into the OCI image layout LAYOUT, pushed to REFERENCE (repeatable).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	info := version.Info{Version: version.Canonical(*ver), Revision: *revision}
	if *ver == "" || info.Devel() {
		return fmt.Errorf("--version %q: want MAJOR.MINOR.PATCH", *ver)
	}
	secs, err := strconv.ParseInt(cmp.Or(*epoch, "0"), 10, 64)
	if err != nil {
		return fmt.Errorf("--source-date-epoch %q: %w", *epoch, err)
	}
	if err := os.MkdirAll(*dist, 0o755); err != nil {
		return err
	}

	changelog, err := os.ReadFile(filepath.Join(*root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	section := strings.TrimPrefix(info.Version, "v")
	if *snapshot {
		section = unreleased
	}
	notes, err := releaseNotes(string(changelog), section)
	if err != nil {
		return err
	}
	license, err := os.ReadFile(filepath.Join(*root, "LICENSE"))
	if err != nil {
		return err
	}

	start := time.Now()
	archives, err := buildArchives(ctx, *root, *dist, info, strings.Split(*platforms, ","), license, time.Unix(secs, 0).UTC())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "built the plugin for %s in %s\n", *platforms, time.Since(start).Round(100*time.Millisecond))

	krew, err := krewManifest(info.Version, homepage, downloads+"/"+info.Version, archives)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(krew)
	if err != nil {
		return err
	}
	if _, err := writeFile(*dist, krewFile, data); err != nil {
		return err
	}

	refs, err := pinnedImages(images)
	if err != nil {
		return err
	}
	if _, err := writeFile(*dist, imagesFile, []byte(strings.Join(refs, "\n")+"\n")); err != nil {
		return err
	}
	if _, err := writeFile(*dist, notesFile, []byte(notesDocument(info, *snapshot, notes, refs))); err != nil {
		return err
	}
	return writeChecksums(*dist)
}

// buildArchives builds the plugin for each platform and writes its archive.
func buildArchives(ctx context.Context, root, dist string, info version.Info, platforms []string, license []byte, modTime time.Time) ([]Archive, error) {
	tmp, err := os.MkdirTemp("", "release-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var archives []Archive
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return nil, fmt.Errorf("--platforms: %q is not os/arch", p)
		}
		bin := filepath.Join(tmp, goos+"-"+goarch)
		if err := release.BuildBinary(ctx, root, pluginPackage, v1.Platform{OS: goos, Architecture: goarch}, strings.TrimPrefix(info.Version, "v"), info.Revision, bin); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		tgz, err := tarGz([]archiveFile{{name: pluginBinary, mode: 0o755, data: data}, {name: "LICENSE", mode: 0o644, data: license}}, modTime)
		if err != nil {
			return nil, err
		}
		a := Archive{OS: goos, Arch: goarch, Name: archiveName(info.Version, goos, goarch)}
		if a.Sha256, err = writeFile(dist, a.Name, tgz); err != nil {
			return nil, err
		}
		archives = append(archives, a)
	}
	return archives, nil
}

// pinnedImages are the images' references pinned to their layouts'
// digests: REPOSITORY:TAG@sha256:..., as make release-push pushes them.
func pinnedImages(images []image) ([]string, error) {
	var refs []string
	for _, img := range images {
		idx, err := release.ReadLayout(img.layout)
		if err != nil {
			return nil, fmt.Errorf("the %s image: %w", img.name, err)
		}
		d, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		refs = append(refs, fmt.Sprintf("%s@%s", img.ref, d))
	}
	return refs, nil
}

// notesDocument is the release notes: the changelog's section, then the
// images to pull and how to install the plugin.
func notesDocument(info version.Info, snapshot bool, notes string, images []string) string {
	var b strings.Builder
	title := info.Version
	if snapshot {
		title += " (snapshot of the Unreleased changes: not a release)"
	}
	fmt.Fprintf(&b, "# sidecarset-operator %s\n\n", title)
	if info.Revision != "" {
		fmt.Fprintf(&b, "Built from commit %s.\n\n", info.Revision)
	}
	b.WriteString(notes + "\n")
	if len(images) > 0 {
		b.WriteString("\n## Images\n\nPull them by digest:\n\n```\n" + strings.Join(images, "\n") + "\n```\n")
	}
	fmt.Fprintf(&b, "\n## Install\n\n"+
		"- The operator: `kubectl apply --server-side -f %s` (after checking it against `%s`).\n"+
		"- The kubectl plugin: `kubectl krew install --manifest=%s` (krew downloads the archive for your platform and checks its "+
		"SHA-256), or unpack `%s` onto your PATH.\n",
		installFile, checksumsFile, krewFile, archiveName(info.Version, "<os>", "<arch>"))
	return b.String()
}

// writeChecksums writes checksums.txt over every other file of dist, in
// sha256sum's format (`sha256sum -c checksums.txt` checks them).
func writeChecksums(dist string) error {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == checksumsFile {
			continue
		}
		sum, err := fileSha256(filepath.Join(dist, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+e.Name())
	}
	if len(lines) == 0 {
		return errors.New("nothing to checksum")
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	_, err = writeFile(dist, checksumsFile, []byte(strings.Join(lines, "\n")+"\n"))
	return err
}
