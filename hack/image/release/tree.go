// Package release builds the operator's three release images without a
// container engine: the manager (a static Go binary on an empty base, one
// image per platform under one index), the OLM bundle (bundle/ laid out as
// bundle.Dockerfile lays it out, the manager pinned by digest) and the
// file-based catalog (the bundles' olm.package, olm.channel and olm.bundle
// blobs under /configs, each bundle pinned by digest). Images are
// reproducible: file times and creation dates are one given instant, tar
// headers carry no owner names, and the same inputs give the same digests.
//
// The pure parts (trees, layers, configs, CSV pinning, catalog rendering)
// take values; store.go and build.go do the I/O (OCI layouts, registries,
// go build).
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is a regular file of an image, or a symbolic link.
type File struct {
	// Mode is the permission bits.
	Mode fs.FileMode
	Data []byte
	// Link, if set, makes the file a symbolic link to Link (Mode and Data
	// unused).
	Link string
}

// Tree is an image's regular files by path, slash-separated and relative to
// the root ("manager", "manifests/x.yaml"). Directories are implied by the
// paths.
type Tree map[string]File

// Paths returns the file paths, sorted.
func (t Tree) Paths() []string {
	return slices.Sorted(maps.Keys(t))
}

// Merge returns a tree with the files of both; other wins on a conflict.
func (t Tree) Merge(other Tree) Tree {
	out := maps.Clone(t)
	if out == nil {
		out = Tree{}
	}
	maps.Copy(out, other)
	return out
}

// FS returns the tree as a read-only file system.
func (t Tree) FS() fs.FS {
	m := fstest.MapFS{}
	for p, f := range t {
		m[p] = &fstest.MapFile{Data: f.Data, Mode: f.Mode}
	}
	return m
}

// ReadTree reads every regular file under dir of fsys into a tree, with the
// paths relative to dir and prefix prepended (ReadTree(os.DirFS("bundle"),
// "manifests", "manifests/")).
func ReadTree(fsys fs.FS, dir, prefix string) (Tree, error) {
	t := Tree{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files and directories can go into an image", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if dir == "." {
			rel = p
		}
		t[prefix+rel] = File{Mode: info.Mode().Perm(), Data: data}
		return nil
	})
	return t, err
}

// directories returns every parent directory of the tree's files, sorted.
func (t Tree) directories() []string {
	seen := map[string]bool{}
	for p := range t {
		for dir := path.Dir(p); dir != "." && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Layer writes the tree as one gzip-compressed OCI layer: directories 0755,
// files with their mode and symbolic links, owned by root, every time set to
// mtime, entries sorted by path. The same tree and time give the same bytes.
func Layer(t Tree, mtime time.Time) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	type entry struct {
		name string
		dir  bool
	}
	var entries []entry
	for _, d := range t.directories() {
		entries = append(entries, entry{d + "/", true})
	}
	for _, p := range t.Paths() {
		entries = append(entries, entry{p, false})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	mtime = mtime.UTC().Truncate(time.Second)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, ModTime: mtime, Typeflag: tar.TypeDir, Mode: 0o755}
		f := t[e.name]
		switch {
		case e.dir:
		case f.Link != "":
			h.Typeflag, h.Mode, h.Linkname = tar.TypeSymlink, 0o777, f.Link
		default:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, int64(f.Mode.Perm()), int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		if !e.dir && f.Link == "" {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// The gzip header carries no name and no time.
	var compressed bytes.Buffer
	zw, err := gzip.NewWriterLevel(&compressed, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := compressed.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Files reads the regular files of an image, its layers applied in order
// (whiteouts honoured).
func Files(img v1.Image) (Tree, error) {
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	t := Tree{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		t[strings.TrimPrefix(path.Clean("/"+h.Name), "/")] = File{Mode: fs.FileMode(h.Mode).Perm(), Data: data}
	}
}

// FileTimes returns the modification time of every entry of every layer of
// an image, by path (the last layer's wins).
func FileTimes(img v1.Image) (map[string]time.Time, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = rc.Close()
				return nil, err
			}
			out[h.Name] = h.ModTime
		}
		if err := rc.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
