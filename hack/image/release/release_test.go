package release

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

func TestLayer_IsTheSameBytesForTheSameTreeAndTime(t *testing.T) {
	t.Parallel()
	tree := Tree{"b/c/file": {Mode: 0o644, Data: []byte("c")}, "a": {Mode: 0o755, Data: []byte("a")}}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first, err := Layer(tree, when)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Layer(Tree{"a": tree["a"], "b/c/file": tree["b/c/file"]}, when.In(time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 != d2 {
		t.Errorf("the same tree and instant give %s and %s", d1, d2)
	}
	later, err := Layer(tree, when.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := later.Digest(); d3 == d1 {
		t.Errorf("another time gives the same layer %s", d3)
	}
}

func TestLayer_WritesSymbolicLinks(t *testing.T) {
	t.Parallel()
	layer, err := Layer(Tree{"bin/busybox": {Mode: 0o755, Data: []byte("x")}, "bin/sh": {Link: "busybox"}}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = fmt.Sprintf("%c %o %d %s", h.Typeflag, h.Mode, h.Size, h.Linkname)
	}
	want := map[string]string{
		"bin/":        fmt.Sprintf("%c 755 0 ", tar.TypeDir),
		"bin/busybox": fmt.Sprintf("%c 755 1 ", tar.TypeReg),
		"bin/sh":      fmt.Sprintf("%c 777 0 busybox", tar.TypeSymlink),
	}
	if !maps.Equal(got, want) {
		t.Errorf("the layer holds %v, want %v", got, want)
	}
}

// The bundle's CSV as committed: pinning it to its own reference changes
// nothing, so PinCSV re-encodes exactly as the generator does.
func TestPinCSV_ChangesOnlyTheManagerImage(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "..", "bundle", "manifests", "sidecarset-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := csv.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tagged := c.Metadata.Annotations[csv.AnnotationContainerImage]
	same, err := PinCSV(data, tagged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(same, data) {
		t.Fatalf("pinning %s to itself rewrote the CSV", tagged)
	}
	pinned := "example.com/op@sha256:" + strings.Repeat("a", 64)
	out, err := PinCSV(data, pinned)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(string(data), tagged, pinned); string(out) != want {
		t.Errorf("pinned CSV differs from the original with %s replaced by %s", tagged, pinned)
	}
	if _, err := PinCSV(bytes.ReplaceAll(data, []byte("containerImage: "), []byte("containerImagex: ")), pinned); err == nil {
		t.Error("a CSV without containerImage was pinned")
	}
}

func TestPinnedReference_KeepsTheRepositoryDropsTheTag(t *testing.T) {
	t.Parallel()
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("b", 64)}
	for in, want := range map[string]string{
		"ghcr.io/org/op:v1": "ghcr.io/org/op@" + d.String(),
		"org/op:v1":         "org/op@" + d.String(),
		"localhost:5000/op": "localhost:5000/op@" + d.String(),
		"reg:5000/a/b:t@sha256:" + strings.Repeat("c", 64): "reg:5000/a/b@" + d.String(),
	} {
		got, err := PinnedReference(in, d)
		if err != nil || got != want {
			t.Errorf("PinnedReference(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func entry(name, replaces string, skips ...string) ChannelEntry {
	return ChannelEntry{Name: name, Replaces: replaces, Skips: skips}
}

func catalogOf(entries ...ChannelEntry) *Catalog {
	c := &Catalog{Package: Package{Schema: SchemaPackage, Name: "p", DefaultChannel: "stable"},
		Channels: []Channel{{Schema: SchemaChannel, Package: "p", Name: "stable", Entries: entries}}}
	for i, e := range entries {
		p, _ := property(PropertyPackage, PackageProperty{PackageName: "p", Version: "0.0." + string(rune('0'+i))})
		c.Bundles = append(c.Bundles, Bundle{Schema: SchemaBundle, Package: "p", Name: e.Name, Image: "r/b@sha256:x", Properties: []Property{p}})
	}
	return c
}

func TestCatalogValidate_UpgradeGraphRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		catalog *Catalog
		want    string
	}{
		{"one bundle", catalogOf(entry("a", "")), ""},
		{"a replaces chain", catalogOf(entry("a", ""), entry("b", "a"), entry("c", "b")), ""},
		{"the tail may replace a bundle not in the catalog", catalogOf(entry("b", "a"), entry("c", "b")), ""},
		{"skipped bundles are not stranded", catalogOf(entry("a", ""), entry("b", ""), entry("c", "a", "b")), ""},
		{"two heads", catalogOf(entry("a", ""), entry("b", "")), "want one head, found 2"},
		{"a stranded bundle", catalogOf(entry("a", ""), entry("z", ""), entry("y", "z"), entry("c", "a", "y")), "not skipped): z"},
		{"a cycle", catalogOf(entry("h", "a"), entry("a", "b"), entry("b", "a")), "cycle"},
		{"an entry without a bundle", func() *Catalog {
			c := catalogOf(entry("a", ""))
			c.Bundles = nil
			return c
		}(), "entry a has no olm.bundle"},
		{"a default channel that does not exist", func() *Catalog {
			c := catalogOf(entry("a", ""))
			c.Package.DefaultChannel = "fast"
			return c
		}(), `default channel "fast"`},
		{"two bundles of one version", func() *Catalog {
			c := catalogOf(entry("a", ""), entry("b", "a"))
			c.Bundles[1].Properties = c.Bundles[0].Properties
			return c
		}(), "the same version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.catalog.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCatalog_MarshalParsesBack(t *testing.T) {
	t.Parallel()
	c := catalogOf(entry("a", ""), entry("b", "a"))
	c.Package.Icon = &csv.Icon{Data: "PHN2Zy8+", MediaType: "image/svg+xml"}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Errorf("marshal, parse, marshal changed the catalog:\n%s\n---\n%s", data, again)
	}
	if _, err := ParseCatalog([]byte(`{"schema":"olm.package","name":"p","defaultChannel":"s","bogus":1}`)); err == nil {
		t.Error("an unknown field parsed")
	}
}
