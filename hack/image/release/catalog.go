package release

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
)

// The file-based catalog's schemas and property types (operator-registry's
// declarative config format, restated from its documentation).
const (
	SchemaPackage = "olm.package"
	SchemaChannel = "olm.channel"
	SchemaBundle  = "olm.bundle"

	PropertyPackage     = "olm.package"
	PropertyGVK         = "olm.gvk"
	PropertyGVKRequired = "olm.gvk.required"
	PropertyBundleObj   = "olm.bundle.object"

	// CatalogConfigsLabel tells OLM where in the catalog image the
	// declarative config is.
	CatalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"
	// CatalogConfigsDir is that directory.
	CatalogConfigsDir = "/configs"
	// skipRangeAnnotation is the CSV annotation OLM reads a bundle's
	// skipRange from.
	skipRangeAnnotation = "olm.skipRange"
)

// Catalog is the declarative config of one package.
type Catalog struct {
	Package  Package
	Channels []Channel
	Bundles  []Bundle
}

// Package is the olm.package blob.
type Package struct {
	Schema         string    `json:"schema"`
	Name           string    `json:"name"`
	DefaultChannel string    `json:"defaultChannel"`
	Icon           *csv.Icon `json:"icon,omitempty"`
	Description    string    `json:"description,omitempty"`
}

// Channel is an olm.channel blob: its entries are the upgrade graph.
type Channel struct {
	Schema  string         `json:"schema"`
	Package string         `json:"package"`
	Name    string         `json:"name"`
	Entries []ChannelEntry `json:"entries"`
}

// ChannelEntry is one bundle of a channel and the bundles it upgrades from.
type ChannelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// Bundle is an olm.bundle blob.
type Bundle struct {
	Schema        string         `json:"schema"`
	Package       string         `json:"package"`
	Name          string         `json:"name"`
	Image         string         `json:"image"`
	Properties    []Property     `json:"properties"`
	RelatedImages []RelatedImage `json:"relatedImages,omitempty"`
}

// Property is one typed property of a bundle.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// RelatedImage is an image a bundle needs, for mirroring.
type RelatedImage struct {
	Name  string `json:"name,omitempty"`
	Image string `json:"image"`
}

// PackageProperty is the value of olm.package.
type PackageProperty struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
}

// GVKProperty is the value of olm.gvk and olm.gvk.required.
type GVKProperty struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// BundleObjectProperty is the value of olm.bundle.object: one manifest of
// the bundle as JSON (base64 in the catalog).
type BundleObjectProperty struct {
	Data []byte `json:"data"`
}

// Properties returns the values of the properties of one type, decoded
// into T.
func Properties[T any](b Bundle, typ string) ([]T, error) {
	var out []T
	for _, p := range b.Properties {
		if p.Type != typ {
			continue
		}
		var v T
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return nil, fmt.Errorf("bundle %s: property %s: %w", b.Name, typ, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func property(typ string, value any) (Property, error) {
	data, err := json.Marshal(value)
	return Property{Type: typ, Value: data}, err
}

// CatalogBundle is a bundle going into a catalog: the image reference the
// catalog gives (pinned by digest) and the files of that image.
type CatalogBundle struct {
	Image string
	Files Tree
}

// renderedBundle is a bundle with what the catalog needs of it.
type renderedBundle struct {
	blob           Bundle
	entry          ChannelEntry
	version        semver.Version
	channels       []string
	defaultChannel string
	csv            *csv.ClusterServiceVersion
}

// RenderCatalog writes the declarative config of the bundles, which must be
// of one package: an olm.bundle per bundle (its olm.package, olm.gvk for the
// CRDs it carries, olm.gvk.required for the CRDs it requires, and every
// manifest as olm.bundle.object), an olm.channel per channel the bundles'
// annotations name, with the upgrade graph of their CSVs (replaces, skips,
// olm.skipRange), and the olm.package with the newest bundle's default
// channel, icon and description. The catalog is checked (Validate).
func RenderCatalog(bundles []CatalogBundle) (*Catalog, error) {
	if len(bundles) == 0 {
		return nil, errors.New("a catalog needs at least one bundle")
	}
	rendered := make([]renderedBundle, 0, len(bundles))
	for _, cb := range bundles {
		r, err := renderBundle(cb)
		if err != nil {
			return nil, err
		}
		rendered = append(rendered, r)
	}
	slices.SortFunc(rendered, func(a, b renderedBundle) int { return a.version.Compare(b.version) })
	newest := rendered[len(rendered)-1]
	c := &Catalog{Package: Package{Schema: SchemaPackage, Name: newest.blob.Package, DefaultChannel: newest.defaultChannel,
		Description: newest.csv.Metadata.Annotations[csv.AnnotationDescription]}}
	if len(newest.csv.Spec.Icon) > 0 {
		c.Package.Icon = &newest.csv.Spec.Icon[0]
	}
	channels := map[string]*Channel{}
	var order []string
	for _, r := range rendered {
		if r.blob.Package != c.Package.Name {
			return nil, fmt.Errorf("bundle %s is of package %s, not %s: a catalog here holds one package", r.blob.Name, r.blob.Package, c.Package.Name)
		}
		c.Bundles = append(c.Bundles, r.blob)
		for _, name := range r.channels {
			ch, ok := channels[name]
			if !ok {
				ch = &Channel{Schema: SchemaChannel, Package: c.Package.Name, Name: name}
				channels[name] = ch
				order = append(order, name)
			}
			ch.Entries = append(ch.Entries, r.entry)
		}
	}
	slices.Sort(order)
	for _, name := range order {
		c.Channels = append(c.Channels, *channels[name])
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func renderBundle(cb CatalogBundle) (renderedBundle, error) {
	var r renderedBundle
	b, err := validate.Load(cb.Files.FS(), nil)
	if err != nil {
		return r, err
	}
	if b.CSV == nil {
		return r, fmt.Errorf("bundle %s has no ClusterServiceVersion", cb.Image)
	}
	pkg := b.Annotations[layout.AnnotationPackage]
	if pkg == "" {
		return r, fmt.Errorf("bundle %s: %s names no package", cb.Image, layout.AnnotationsFile)
	}
	if r.version, err = semver.Parse(b.CSV.Spec.Version); err != nil {
		return r, fmt.Errorf("bundle %s: version %q: %w", cb.Image, b.CSV.Spec.Version, err)
	}
	r.csv = b.CSV
	for ch := range strings.SplitSeq(b.Annotations[layout.AnnotationChannels], ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			r.channels = append(r.channels, ch)
		}
	}
	if len(r.channels) == 0 {
		return r, fmt.Errorf("bundle %s: %s names no channel", cb.Image, layout.AnnotationsFile)
	}
	r.defaultChannel = b.Annotations[layout.AnnotationDefaultChannel]
	if r.defaultChannel == "" {
		r.defaultChannel = r.channels[0]
	}
	name := b.CSV.Metadata.Name
	r.entry = ChannelEntry{Name: name, Replaces: b.CSV.Spec.Replaces, Skips: b.CSV.Spec.Skips,
		SkipRange: b.CSV.Metadata.Annotations[skipRangeAnnotation]}

	r.blob = Bundle{Schema: SchemaBundle, Package: pkg, Name: name, Image: cb.Image}
	add := func(typ string, value any) error {
		p, err := property(typ, value)
		r.blob.Properties = append(r.blob.Properties, p)
		return err
	}
	if err := add(PropertyPackage, PackageProperty{PackageName: pkg, Version: r.version.String()}); err != nil {
		return r, err
	}
	for _, gvk := range providedGVKs(b) {
		if err := add(PropertyGVK, gvk); err != nil {
			return r, err
		}
	}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Required {
		_, group, _ := strings.Cut(d.Name, ".")
		if err := add(PropertyGVKRequired, GVKProperty{Group: group, Kind: d.Kind, Version: d.Version}); err != nil {
			return r, err
		}
	}
	objects, err := manifestObjects(cb.Files)
	if err != nil {
		return r, fmt.Errorf("bundle %s: %w", cb.Image, err)
	}
	for _, o := range objects {
		if err := add(PropertyBundleObj, BundleObjectProperty{Data: o}); err != nil {
			return r, err
		}
	}
	r.blob.RelatedImages = []RelatedImage{{Image: cb.Image}}
	for _, ri := range b.CSV.Spec.RelatedImages {
		if !slices.ContainsFunc(r.blob.RelatedImages, func(x RelatedImage) bool { return x.Image == ri.Image }) {
			r.blob.RelatedImages = append(r.blob.RelatedImages, RelatedImage{Name: ri.Name, Image: ri.Image})
		}
	}
	return r, nil
}

// providedGVKs are the group, kind and version of every version of every
// CRD in the bundle, as OLM lists the APIs a bundle provides.
func providedGVKs(b *validate.Bundle) []GVKProperty {
	var out []GVKProperty
	for _, o := range b.CRDs() {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				name, _ := m["name"].(string)
				out = append(out, GVKProperty{Group: group, Kind: kind, Version: name})
			}
		}
	}
	return out
}

// manifestObjects returns every object of the bundle's manifests/ as JSON,
// the files in path order and the objects in file order.
func manifestObjects(t Tree) ([][]byte, error) {
	var out [][]byte
	for _, p := range t.Paths() {
		if dir, _ := path.Split(p); dir != layout.ManifestsDir {
			continue
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(t[p].Data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			data, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if string(data) != "null" {
				out = append(out, data)
			}
		}
	}
	return out, nil
}

// Validate checks what opm validate checks of a package: one olm.package
// property per bundle, unique versions, a default channel that exists,
// every channel entry backed by a bundle, and per channel an upgrade graph
// with one head, no cycle in its replaces chain, and no stranded entry (one
// neither on the head's replaces chain nor skipped). Only the chain's tail
// may replace a bundle the catalog does not have.
func (c *Catalog) Validate() error {
	var errs []error
	bundles := map[string]bool{}
	versions := map[string]string{}
	for _, b := range c.Bundles {
		pkgs, err := Properties[PackageProperty](b, PropertyPackage)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(pkgs) != 1 {
			errs = append(errs, fmt.Errorf("bundle %s has %d %s properties, want 1", b.Name, len(pkgs), PropertyPackage))
			continue
		}
		if other, dup := versions[pkgs[0].Version]; dup {
			errs = append(errs, fmt.Errorf("bundles %s and %s have the same version %s", other, b.Name, pkgs[0].Version))
		}
		versions[pkgs[0].Version] = b.Name
		bundles[b.Name] = true
	}
	if !slices.ContainsFunc(c.Channels, func(ch Channel) bool { return ch.Name == c.Package.DefaultChannel }) {
		errs = append(errs, fmt.Errorf("package %s: the default channel %q has no olm.channel", c.Package.Name, c.Package.DefaultChannel))
	}
	for _, ch := range c.Channels {
		for _, e := range ch.Entries {
			if !bundles[e.Name] {
				errs = append(errs, fmt.Errorf("channel %s: entry %s has no olm.bundle", ch.Name, e.Name))
			}
		}
		if err := ch.validateGraph(); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", ch.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Head returns the channel's head: the one entry no other entry replaces or
// skips.
func (ch Channel) Head() (ChannelEntry, error) {
	incoming := map[string]bool{}
	for _, e := range ch.Entries {
		incoming[e.Replaces] = true
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	var heads []ChannelEntry
	for _, e := range ch.Entries {
		if !incoming[e.Name] {
			heads = append(heads, e)
		}
	}
	if len(heads) != 1 {
		names := make([]string, 0, len(heads))
		for _, h := range heads {
			names = append(names, h.Name)
		}
		return ChannelEntry{}, fmt.Errorf("want one head, found %d: %s", len(heads), strings.Join(names, ", "))
	}
	return heads[0], nil
}

func (ch Channel) validateGraph() error {
	if len(ch.Entries) == 0 {
		return errors.New("no entries")
	}
	byName := map[string]ChannelEntry{}
	skipped := map[string]bool{}
	for _, e := range ch.Entries {
		if _, dup := byName[e.Name]; dup {
			return fmt.Errorf("entry %s is listed twice", e.Name)
		}
		byName[e.Name] = e
		for _, s := range e.Skips {
			skipped[s] = true
		}
	}
	head, err := ch.Head()
	if err != nil {
		return err
	}
	chain := map[string]bool{head.Name: true}
	walk := []string{head.Name}
	for cur, ok := head, true; ok && cur.Replaces != "" && !skipped[cur.Replaces]; cur, ok = byName[cur.Replaces] {
		walk = append(walk, cur.Replaces)
		if chain[cur.Replaces] {
			return fmt.Errorf("the replaces chain has a cycle: %s", strings.Join(walk, " -> "))
		}
		chain[cur.Replaces] = true
	}
	var stranded []string
	for _, e := range ch.Entries {
		if !chain[e.Name] && !skipped[e.Name] {
			stranded = append(stranded, e.Name)
		}
	}
	if len(stranded) > 0 {
		slices.Sort(stranded)
		return fmt.Errorf("stranded entries (not on the head's replaces chain, not skipped): %s", strings.Join(stranded, ", "))
	}
	return nil
}

// Marshal writes the catalog as a stream of indented JSON blobs: the
// package, its channels, then its bundles.
func (c *Catalog) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	blobs := []any{c.Package}
	for _, ch := range c.Channels {
		blobs = append(blobs, ch)
	}
	for _, b := range c.Bundles {
		blobs = append(blobs, b)
	}
	for _, b := range blobs {
		if err := enc.Encode(b); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// ParseCatalog reads a stream of JSON blobs of one package (property values
// compacted, as RenderCatalog makes them).
func ParseCatalog(data []byte) (*Catalog, error) {
	c := &Catalog{}
	dec := json.NewDecoder(bytes.NewReader(data))
	packages := 0
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		var err error
		switch head.Schema {
		case SchemaPackage:
			packages++
			err = strictJSON(raw, &c.Package)
		case SchemaChannel:
			var ch Channel
			err = strictJSON(raw, &ch)
			c.Channels = append(c.Channels, ch)
		case SchemaBundle:
			var b Bundle
			err = strictJSON(raw, &b)
			for i := range b.Properties {
				var compact bytes.Buffer
				if err == nil {
					err = json.Compact(&compact, b.Properties[i].Value)
					b.Properties[i].Value = compact.Bytes()
				}
			}
			c.Bundles = append(c.Bundles, b)
		default:
			err = fmt.Errorf("unknown schema %q", head.Schema)
		}
		if err != nil {
			return nil, err
		}
	}
	if packages != 1 {
		return nil, fmt.Errorf("the catalog has %d olm.package blobs, want 1", packages)
	}
	return c, nil
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// CatalogFile is where a package's declarative config is in the catalog
// image, relative to the root.
func CatalogFile(pkg string) string {
	return strings.TrimPrefix(CatalogConfigsDir, "/") + "/" + pkg + "/catalog.json"
}

// CatalogImage is the catalog's index: for each platform, the declarative
// config under /configs/<package>/catalog.json in one layer, labelled with
// the configs directory and the metadata.
func CatalogImage(platforms []v1.Platform, c *Catalog, meta Metadata) (v1.ImageIndex, error) {
	data, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	layer, err := Layer(Tree{CatalogFile(c.Package.Name): {Mode: 0o644, Data: data}}, meta.Created)
	if err != nil {
		return nil, err
	}
	labels := meta.Labels()
	labels[CatalogConfigsLabel] = CatalogConfigsDir
	return multiPlatform(platforms, meta.Labels(), func(p v1.Platform) (v1.Image, error) {
		return platformImage(p, v1.Config{Labels: labels}, meta.Created, "hack/image catalog", layer)
	})
}

// BuildCatalog renders the catalog of the bundles and builds its index; the
// version label, when not set, is the newest bundle's version.
func BuildCatalog(platforms []v1.Platform, bundles []CatalogBundle, meta Metadata) (v1.ImageIndex, *Catalog, error) {
	c, err := RenderCatalog(bundles)
	if err != nil {
		return nil, nil, err
	}
	if meta.Version == "" {
		pkgs, err := Properties[PackageProperty](c.Bundles[len(c.Bundles)-1], PropertyPackage)
		if err != nil {
			return nil, nil, err
		}
		meta.Version = pkgs[0].Version
	}
	idx, err := CatalogImage(platforms, c, meta)
	return idx, c, err
}
