package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// untar reads a tar.gz's files by name.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[hdr.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// The krew manifest of fake archives parses as krew's Plugin and names
// each archive by its real SHA-256, for every platform.
func TestKrewManifest_NamesTheArchivesChecksums(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var archives []Archive
	for _, p := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		tgz, err := tarGz([]archiveFile{{pluginBinary, 0o755, []byte("binary for " + p[0] + "/" + p[1])}, {"LICENSE", 0o644, []byte("license")}}, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		a := Archive{OS: p[0], Arch: p[1], Name: archiveName("v1.2.3", p[0], p[1])}
		if a.Sha256, err = writeFile(dir, a.Name, tgz); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, a)
	}
	m, err := krewManifest("v1.2.3", homepage, downloads+"/v1.2.3", archives)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}

	var got KrewPlugin
	if err := yaml.UnmarshalStrict(data, &got); err != nil {
		t.Fatalf("the manifest does not parse: %v\n%s", err, data)
	}
	if got.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || got.Kind != "Plugin" || got.Name != "sidecarset" || got.Spec.Version != "v1.2.3" {
		t.Errorf("header %s %s %s %s", got.APIVersion, got.Kind, got.Name, got.Spec.Version)
	}
	if got.Spec.ShortDescription == "" || got.Spec.Homepage == "" {
		t.Errorf("shortDescription %q, homepage %q", got.Spec.ShortDescription, got.Spec.Homepage)
	}
	if len(got.Spec.Platforms) != 4 {
		t.Fatalf("%d platforms, want 4", len(got.Spec.Platforms))
	}
	seen := map[string]bool{}
	for _, p := range got.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen[os+"/"+arch] = true
		name := archiveName("v1.2.3", os, arch)
		if p.URI != "https://github.com/sidecarset-operator/sidecarset-operator/releases/download/v1.2.3/"+name {
			t.Errorf("%s/%s: uri %s", os, arch, p.URI)
		}
		file := readFile(t, filepath.Join(dir, name))
		sum := sha256.Sum256(file)
		if p.Sha256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s, the file's is %x", name, p.Sha256, sum)
		}
		files := untar(t, file)
		if p.Bin != pluginBinary || files[p.Bin] == nil {
			t.Errorf("%s: bin %q, archive files %v", name, p.Bin, keys(files))
		}
		for _, f := range p.Files {
			if files[f.From] == nil || f.To != "." {
				t.Errorf("%s: file %+v, archive files %v", name, f, keys(files))
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("platforms %v, want 4 distinct", seen)
	}

	if _, err := krewManifest("v1.2.3", homepage, downloads, []Archive{{OS: "linux", Arch: "amd64", Name: "x", Sha256: "not-hex"}}); err == nil {
		t.Error("an archive without a SHA-256 made a manifest")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The same files give the same archive bytes (the release's checksums
// depend on the sources only).
func TestTarGz_IsReproducible(t *testing.T) {
	t.Parallel()
	files := []archiveFile{{pluginBinary, 0o755, []byte("bin")}, {"LICENSE", 0o644, []byte("license")}}
	a, err := tarGz(files, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tarGz(files, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two archives of the same files differ")
	}
	if got := untar(t, a); string(got[pluginBinary]) != "bin" || string(got["LICENSE"]) != "license" {
		t.Errorf("archive holds %v", keys(got))
	}
}

const changelog = `# Changelog

Intro.

## [Unreleased]

### Added
- Something new.

## [0.2.0] - 2027-03-01

### Fixed
- A fix.
  Continued.

## [0.1.0] - 2027-01-31

### Added
- The first release.

[0.2.0]: https://example.com/compare/v0.1.0...v0.2.0
`

func TestReleaseNotes_FindsTheVersionsSection(t *testing.T) {
	t.Parallel()
	for section, want := range map[string]string{
		"0.2.0":    "### Fixed\n- A fix.\n  Continued.",
		"0.1.0":    "### Added\n- The first release.\n\n[0.2.0]: https://example.com/compare/v0.1.0...v0.2.0",
		unreleased: "### Added\n- Something new.",
	} {
		got, err := releaseNotes(changelog, section)
		if err != nil {
			t.Fatalf("%s: %v", section, err)
		}
		if got != want {
			t.Errorf("%s: notes\n%q\nwant\n%q", section, got, want)
		}
	}
	if _, err := releaseNotes(changelog, "0.3.0"); err == nil || !strings.Contains(err.Error(), `no section "## [0.3.0]"`) {
		t.Errorf("a missing section: error %v", err)
	}
	if _, err := releaseNotes("## [0.1.0]\n\n## [0.0.1]\n- x\n", "0.1.0"); err == nil {
		t.Error("an empty section made notes")
	}
}

// The repository's CHANGELOG.md keeps the shape the release reads: an
// Unreleased section with changes in it.
func TestReleaseNotes_ReadTheRepositorysChangelog(t *testing.T) {
	t.Parallel()
	data := readFile(t, filepath.Join("..", "..", "CHANGELOG.md"))
	notes, err := releaseNotes(string(data), unreleased)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes, "\n- ") && !strings.HasPrefix(notes, "- ") && !strings.Contains(notes, "### ") {
		t.Errorf("the Unreleased section has no entries:\n%s", notes)
	}
}

func TestWriteChecksums_InSha256sumsFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, data := range map[string]string{"b.tar.gz": "bee", "a.yaml": "ay"} {
		if _, err := writeFile(dir, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeChecksums(dir); err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	want := sum("ay") + "  a.yaml\n" + sum("bee") + "  b.tar.gz\n"
	if got := string(readFile(t, filepath.Join(dir, checksumsFile))); got != want {
		t.Errorf("checksums.txt\n%s\nwant\n%s", got, want)
	}
}

// The Makefile's VERSION, the one source of the version, is the newest
// release of the OLM bundle's upgrade graph (config/manifests/releases.yaml,
// which make bundle reads).
func TestVersion_OneSource(t *testing.T) {
	t.Parallel()
	makefile := string(readFile(t, filepath.Join("..", "..", "Makefile")))
	var makeVersion string
	for line := range strings.SplitSeq(makefile, "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION ?= "); ok {
			makeVersion = strings.TrimSpace(v)
		}
	}
	if makeVersion == "" {
		t.Fatal("the Makefile sets no VERSION ?=")
	}
	var releases struct {
		Releases []struct {
			Version string `json:"version"`
		} `json:"releases"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join("..", "..", "config", "manifests", "releases.yaml")), &releases); err != nil {
		t.Fatal(err)
	}
	if n := len(releases.Releases); n == 0 || releases.Releases[n-1].Version != makeVersion {
		t.Errorf("the Makefile's VERSION is %s; config/manifests/releases.yaml's newest release is %+v", makeVersion, releases.Releases)
	}
}
