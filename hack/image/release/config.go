package release

import (
	"fmt"
	"maps"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI annotation keys the images carry as labels (and the indexes as
// annotations, where registries such as GHCR read them for multi-platform
// images).
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelLicenses    = "org.opencontainers.image.licenses"
)

// DefaultPlatforms are the platforms every image is built for.
const DefaultPlatforms = "linux/amd64,linux/arm64"

// The labels every image shares.
const (
	Source   = "https://github.com/sidecarset-operator/sidecarset-operator"
	Licenses = "Apache-2.0"
)

// ManagerMetadata describes the manager image: its title and description,
// with the shared source and licenses (the Dockerfile labels it the same
// way).
func ManagerMetadata() Metadata {
	return Metadata{Title: "sidecarset-operator", Source: Source, Licenses: Licenses,
		Description: "The SidecarSet operator's manager: the pod injection webhook, the SidecarSet webhooks and the in-place upgrade controller."}
}

// BundleMetadata describes the bundle image.
func BundleMetadata() Metadata {
	return Metadata{Title: "sidecarset-operator-bundle", Source: Source, Licenses: Licenses,
		Description: "The OLM bundle of the SidecarSet operator."}
}

// CatalogMetadata describes the catalog image.
func CatalogMetadata() Metadata {
	return Metadata{Title: "sidecarset-operator-catalog", Source: Source, Licenses: Licenses,
		Description: "The file-based OLM catalog of the SidecarSet operator."}
}

// Metadata describes an image: its OCI labels and its creation time.
type Metadata struct {
	Title, Description, Version, Revision, Source, Licenses string
	// Created is every time in the image: the config's, the history's and
	// the layers' files' (SOURCE_DATE_EPOCH).
	Created time.Time
}

// Labels are the metadata as org.opencontainers.image.* labels, empty
// values left out. The creation time is the config's, not a label: the
// Dockerfile build could not set it to the same value.
func (m Metadata) Labels() map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{
		LabelTitle: m.Title, LabelDescription: m.Description, LabelVersion: m.Version,
		LabelRevision: m.Revision, LabelSource: m.Source, LabelLicenses: m.Licenses,
	} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// ParsePlatforms reads a comma-separated list of os/arch[/variant].
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, err
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q", s)
	}
	return out, nil
}

// platformImage is one OCI image: an empty base, the config, then the
// layers, each with a history entry at the creation time.
func platformImage(p v1.Platform, cfg v1.Config, created time.Time, createdBy string, layers ...v1.Layer) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: created.UTC()},
		Config:       cfg,
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: created.UTC()}, CreatedBy: createdBy}})
	}
	return mutate.Append(img, adds...)
}

// multiPlatform builds one image per platform and returns their OCI index,
// annotated with the labels.
func multiPlatform(platforms []v1.Platform, labels map[string]string, build func(v1.Platform) (v1.Image, error)) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := build(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: plainImage{img}, Descriptor: v1.Descriptor{Platform: &p}})
	}
	if len(labels) > 0 {
		annotated, ok := mutate.Annotations(idx, maps.Clone(labels)).(v1.ImageIndex)
		if !ok {
			return nil, fmt.Errorf("annotating the index")
		}
		idx = annotated
	}
	return idx, nil
}

// plainImage is an ordinary image, not an artifact: its index entry has no
// artifactType (go-containerregistry would copy the config's media type
// there).
type plainImage struct{ v1.Image }

// ArtifactType reports none.
func (plainImage) ArtifactType() (string, error) { return "", nil }

// PlatformImage returns the image of one platform from an index.
func PlatformImage(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Equals(p) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the index has no image for %s", p)
}
