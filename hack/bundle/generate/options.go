package generate

import (
	"fmt"
	"time"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

// Defaults of the bundle metadata.
const (
	// DefaultPackage is the OLM package name.
	DefaultPackage = "sidecarset-operator"
	// DefaultChannel is the channel the bundle is published in: "candidate",
	// the OLM naming convention for versions without stability guarantees
	// (the operator is alpha).
	DefaultChannel = "candidate"
	// CreatedAtLayout is the format of the CSV's createdAt annotation.
	CreatedAtLayout = "2006-01-02T15:04:05Z"
)

// Options choose what is generated. Zero values take the defaults.
type Options struct {
	// Package is the OLM package name (DefaultPackage).
	Package string
	// Version is the bundle version, semver without a leading v (default: the
	// latest release).
	Version string
	// CreatedAt overrides the CSV's createdAt (default: the release's date).
	CreatedAt string
	// Image overrides the manager image (default: the image of config/manager
	// with the tag v<Version>).
	Image string
	// Channels are the channels the bundle is published in ([DefaultChannel]).
	Channels []string
	// DefaultChannel is the package's default channel (the first channel).
	DefaultChannel string
}

// Release is one released version and its date.
type Release struct {
	Version   string `json:"version"`
	CreatedAt string `json:"createdAt"`
}

// releasesFile is config/manifests/releases.yaml.
type releasesFile struct {
	Releases []Release `json:"releases"`
}

// ParseReleases reads releases.yaml and checks that its versions are semver
// in increasing order with well-formed dates.
func ParseReleases(data []byte) ([]Release, error) {
	var f releasesFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parsing the releases: %w", err)
	}
	var prev *semver.Version
	for _, r := range f.Releases {
		v, err := semver.Parse(r.Version)
		if err != nil {
			return nil, fmt.Errorf("release %q: %w", r.Version, err)
		}
		if prev != nil && !v.GT(*prev) {
			return nil, fmt.Errorf("release %s is listed after %s: list releases oldest first", v, prev)
		}
		if _, err := time.Parse(CreatedAtLayout, r.CreatedAt); err != nil {
			return nil, fmt.Errorf("release %s: createdAt %q is not yyyy-mm-ddThh:mm:ssZ", r.Version, r.CreatedAt)
		}
		prev = &v
	}
	return f.Releases, nil
}

// resolved are the options with every default applied.
type resolved struct {
	pkg            string
	version        semver.Version
	createdAt      string
	replaces       string
	image          string
	channels       []string
	defaultChannel string
}

// resolve applies the defaults: the version is the latest release unless
// given, createdAt comes from that release unless given, and replaces names
// the newest release older than the version.
func resolve(o Options, releases []Release) (resolved, error) {
	r := resolved{pkg: o.Package, image: o.Image, channels: o.Channels, defaultChannel: o.DefaultChannel, createdAt: o.CreatedAt}
	if r.pkg == "" {
		r.pkg = DefaultPackage
	}
	if len(r.channels) == 0 {
		r.channels = []string{DefaultChannel}
	}
	if r.defaultChannel == "" {
		r.defaultChannel = r.channels[0]
	}
	version := o.Version
	if version == "" {
		if len(releases) == 0 {
			return r, fmt.Errorf("no version given and no release listed")
		}
		version = releases[len(releases)-1].Version
	}
	v, err := semver.Parse(version)
	if err != nil {
		return r, fmt.Errorf("version %q is not semver (x.y.z): %w", version, err)
	}
	r.version = v
	for _, rel := range releases {
		rv := semver.MustParse(rel.Version)
		switch {
		case rv.EQ(v) && r.createdAt == "":
			r.createdAt = rel.CreatedAt
		case rv.LT(v):
			r.replaces = r.pkg + ".v" + rv.String()
		}
	}
	if r.createdAt == "" {
		return r, fmt.Errorf("version %s is not in config/manifests/releases.yaml: add it with its release date, or set CREATED_AT (yyyy-mm-ddThh:mm:ssZ)", v)
	}
	if _, err := time.Parse(CreatedAtLayout, r.createdAt); err != nil {
		return r, fmt.Errorf("createdAt %q is not yyyy-mm-ddThh:mm:ssZ", r.createdAt)
	}
	return r, nil
}
