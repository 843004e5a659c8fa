package release

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
)

// BundleDirs are the bundle's directories, each copied to the same path at
// the image's root (bundle.Dockerfile: COPY bundle/manifests /manifests/,
// and so on). The scorecard tests are optional.
func BundleDirs() []string {
	return []string{layout.ManifestsDir, layout.MetadataDir, layout.ScorecardDir}
}

// ReadBundle reads a bundle directory (fsys rooted at bundle/) into the
// bundle image's tree.
func ReadBundle(fsys fs.FS) (Tree, error) {
	t := Tree{}
	for _, dir := range BundleDirs() {
		sub, err := ReadTree(fsys, strings.TrimSuffix(dir, "/"), dir)
		if errors.Is(err, fs.ErrNotExist) && dir == layout.ScorecardDir {
			continue
		}
		if err != nil {
			return nil, err
		}
		t = t.Merge(sub)
	}
	return t, nil
}

// Annotations reads a bundle's metadata/annotations.yaml.
func Annotations(t Tree) (map[string]string, error) {
	f, ok := t[layout.AnnotationsFile]
	if !ok {
		return nil, fmt.Errorf("the bundle has no %s", layout.AnnotationsFile)
	}
	var a struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(f.Data, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", layout.AnnotationsFile, err)
	}
	if len(a.Annotations) == 0 {
		return nil, fmt.Errorf("%s has no annotations", layout.AnnotationsFile)
	}
	return a.Annotations, nil
}

// PinnedReference is image's repository with the digest instead of a tag,
// in the short form the bundle generator writes (docker.io names without
// their registry).
func PinnedReference(image string, digest v1.Hash) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	pinned, err := reference.WithDigest(reference.TrimNamed(named), digestOf(digest))
	if err != nil {
		return "", err
	}
	return reference.FamiliarString(pinned), nil
}

// CSVFile returns the path of the bundle's only ClusterServiceVersion.
func CSVFile(t Tree) (string, error) {
	b, err := validate.Load(t.FS(), nil)
	if err != nil {
		return "", err
	}
	if len(b.CSVFiles) != 1 {
		return "", fmt.Errorf("the bundle has %d ClusterServiceVersion files, want 1", len(b.CSVFiles))
	}
	return b.CSVFiles[0], nil
}

// PinManager returns the tree with its CSV's manager image replaced by
// pinned (see PinCSV).
func PinManager(t Tree, pinned string) (Tree, error) {
	file, err := CSVFile(t)
	if err != nil {
		return nil, err
	}
	data, err := PinCSV(t[file].Data, pinned)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return t.Merge(Tree{file: {Mode: t[file].Mode, Data: data}}), nil
}

// PinCSV replaces the manager image of a ClusterServiceVersion (its
// containerImage annotation) by pinned, a reference by digest, wherever the
// CSV names it: the annotation, the deployments' containers and init
// containers, and relatedImages. The CSV is re-encoded as the bundle
// generator encodes it (sorted keys, its leading comment kept), so nothing
// else changes.
func PinCSV(data []byte, pinned string) ([]byte, error) {
	c, err := csv.Decode(data)
	if err != nil {
		return nil, err
	}
	manager := c.Metadata.Annotations[csv.AnnotationContainerImage]
	if manager == "" {
		return nil, fmt.Errorf("the ClusterServiceVersion has no %s annotation naming the manager image", csv.AnnotationContainerImage)
	}
	replaced := 0
	pin := func(containers []corev1.Container) {
		for i := range containers {
			if containers[i].Image == manager {
				containers[i].Image = pinned
				replaced++
			}
		}
	}
	for i := range c.Spec.Install.Spec.Deployments {
		spec := &c.Spec.Install.Spec.Deployments[i].Spec.Template.Spec
		pin(spec.InitContainers)
		pin(spec.Containers)
	}
	if replaced == 0 {
		return nil, fmt.Errorf("no deployment of the ClusterServiceVersion runs its containerImage %s", manager)
	}
	for i := range c.Spec.RelatedImages {
		if c.Spec.RelatedImages[i].Image == manager {
			c.Spec.RelatedImages[i].Image = pinned
		}
	}
	c.Metadata.Annotations[csv.AnnotationContainerImage] = pinned
	out, err := csv.Encode(c)
	if err != nil {
		return nil, err
	}
	return append(leadingComments(data), out...), nil
}

// leadingComments returns the comment lines a YAML file starts with.
func leadingComments(data []byte) []byte {
	end := 0
	for end < len(data) && data[end] == '#' {
		nl := bytes.IndexByte(data[end:], '\n')
		if nl < 0 {
			return data
		}
		end += nl + 1
	}
	return data[:end]
}

// BundleImage is the bundle's index: for each platform, the tree in one
// layer, labelled with the bundle's annotations (as bundle.Dockerfile
// labels it); the index carries the metadata as annotations.
func BundleImage(platforms []v1.Platform, t Tree, meta Metadata) (v1.ImageIndex, error) {
	annotations, err := Annotations(t)
	if err != nil {
		return nil, err
	}
	layer, err := Layer(t, meta.Created)
	if err != nil {
		return nil, err
	}
	return multiPlatform(platforms, meta.Labels(), func(p v1.Platform) (v1.Image, error) {
		return platformImage(p, v1.Config{Labels: annotations}, meta.Created, "hack/image bundle", layer)
	})
}

// BuildBundle builds the bundle image of a bundle directory with the
// manager image pinned (a reference by digest, PinnedReference), after
// checking the pinned bundle with the offline rules of hack/bundle/validate.
// The version label, when not set, is the CSV's version. It returns the
// index and the files it holds.
func BuildBundle(platforms []v1.Platform, bundle fs.FS, pinnedManager string, meta Metadata) (v1.ImageIndex, Tree, error) {
	t, err := ReadBundle(bundle)
	if err != nil {
		return nil, nil, err
	}
	if t, err = PinManager(t, pinnedManager); err != nil {
		return nil, nil, err
	}
	b, err := validate.Load(t.FS(), nil)
	if err != nil {
		return nil, nil, err
	}
	if errs := validate.Errors(validate.Validate(b)); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, f := range errs {
			msgs = append(msgs, f.String())
		}
		return nil, nil, fmt.Errorf("the pinned bundle fails validation:\n%s", strings.Join(msgs, "\n"))
	}
	if meta.Version == "" {
		meta.Version = b.CSV.Spec.Version
	}
	idx, err := BundleImage(platforms, t, meta)
	return idx, t, err
}

func digestOf(h v1.Hash) digest.Digest {
	return digest.Digest(h.String())
}
