package generate

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// repoRoot is the repository root, three levels up from this package.
const repoRoot = "../../.."

// TestGenerate_CommittedBundleIsCurrent fails when bundle/ or
// bundle.Dockerfile differ from what `make bundle` generates: run make
// bundle and commit the result.
func TestGenerate_CommittedBundleIsCurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := Generate(filesys.MakeFsOnDisk(), repoRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files.Paths() {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, files[p], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := readTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readTree(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the committed bundle is stale: run `make bundle` and commit bundle/ and bundle.Dockerfile (-generated +committed):\n%s", diff)
	}
}

// readTree reads bundle.Dockerfile and every file under bundle/ of root.
func readTree(root string) (map[string]string, error) {
	out := map[string]string{}
	data, err := os.ReadFile(filepath.Join(root, Dockerfile))
	if err != nil {
		return nil, err
	}
	out[Dockerfile] = string(data)
	err = filepath.WalkDir(filepath.Join(root, BundleDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	return out, err
}

func TestGenerate_Deterministic(t *testing.T) {
	t.Parallel()
	first, err := Generate(filesys.MakeFsOnDisk(), repoRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Generate(filesys.MakeFsOnDisk(), repoRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.Paths(), second.Paths()); diff != "" {
		t.Fatalf("paths of two runs (-first +second):\n%s", diff)
	}
	for _, p := range first.Paths() {
		if !bytes.Equal(first[p], second[p]) {
			t.Errorf("%s differs between two runs", p)
		}
	}
}
