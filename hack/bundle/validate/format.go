package validate

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

// MaxCompressedSize is the largest gzip-compressed bundle operator-registry
// accepts (1 MiB); above 85% of it is a warning.
const MaxCompressedSize = 1 << 20

func formatRules() []Rule {
	return []Rule{
		{Name: RuleManifestsDir, Doc: "manifests/ exists and holds at least one file.", Check: checkManifestsDir},
		{Name: RuleManifestsFlat, Doc: "manifests/ has no subdirectories and no hidden files.", Check: checkManifestsFlat},
		{Name: RuleAnnotationsFile, Doc: "metadata/annotations.yaml exists (parse errors are reported while loading).", Check: checkAnnotationsFile},
		{Name: RuleAnnotations, Doc: "The annotations name the registry+v1 media type, the manifests/ and metadata/ directories, the package and its channels; a test configuration they name exists.", Check: checkAnnotations},
		{Name: RuleDockerfile, Doc: "bundle.Dockerfile's LABELs equal the annotations and its COPY instructions put the directories where the annotations say.", Check: checkDockerfile},
		{Name: RuleSupportedKinds, Doc: "Every manifest is of a kind a bundle may carry.", Check: checkSupportedKinds},
		{Name: RuleObjectMetadata, Doc: "Every manifest has a valid name and no namespace (OLM installs into the OperatorGroup's).", Check: checkObjectMetadata},
		{Name: RuleSize, Doc: "The gzip-compressed bundle is under 1 MiB (a warning above 85%).", Check: checkSize},
	}
}

func checkManifestsDir(b *Bundle) []Finding {
	for _, f := range b.Files {
		if strings.HasPrefix(f, layout.ManifestsDir) && !strings.HasSuffix(f, "/") {
			return nil
		}
	}
	return []Finding{errorf("the bundle has no %s directory with files", layout.ManifestsDir)}
}

func checkManifestsFlat(b *Bundle) []Finding {
	var out []Finding
	for _, f := range b.Files {
		rest, ok := strings.CutPrefix(f, layout.ManifestsDir)
		switch {
		case !ok || rest == "":
		case strings.HasSuffix(rest, "/"):
			if strings.Count(rest, "/") == 1 {
				out = append(out, errorf("%s is a subdirectory of %s: OLM reads only the files directly in it", f, layout.ManifestsDir))
			}
		case strings.Contains(rest, "/"):
			// Inside a subdirectory, reported with it.
		case strings.HasPrefix(rest, "."):
			out = append(out, errorf("%s is a hidden file in %s", f, layout.ManifestsDir))
		}
	}
	return out
}

func checkAnnotationsFile(b *Bundle) []Finding {
	if !slices.Contains(b.Files, layout.AnnotationsFile) {
		return []Finding{errorf("%s is missing", layout.AnnotationsFile)}
	}
	return nil
}

func checkAnnotations(b *Bundle) []Finding {
	a := b.Annotations
	if a == nil {
		return nil
	}
	var out []Finding
	for _, k := range layout.RequiredAnnotations() {
		if a[k] == "" {
			out = append(out, errorf("annotation %s is missing", k))
		}
	}
	if v, ok := a[layout.AnnotationMediaType]; ok && v != layout.MediaTypeRegistryV1 {
		out = append(out, errorf("%s is %q, want %q", layout.AnnotationMediaType, v, layout.MediaTypeRegistryV1))
	}
	if v, ok := a[layout.AnnotationManifests]; ok && v != layout.ManifestsDir {
		out = append(out, errorf("%s is %q, want %q", layout.AnnotationManifests, v, layout.ManifestsDir))
	}
	if v, ok := a[layout.AnnotationMetadata]; ok && v != layout.MetadataDir {
		out = append(out, errorf("%s is %q, want %q", layout.AnnotationMetadata, v, layout.MetadataDir))
	}
	channels := splitList(a[layout.AnnotationChannels])
	if def := a[layout.AnnotationDefaultChannel]; def != "" && !slices.Contains(channels, def) {
		out = append(out, errorf("the default channel %q is not one of the channels %v", def, channels))
	}
	if cfg := a[layout.AnnotationTestConfig]; cfg != "" {
		if a[layout.AnnotationTestMediaType] != layout.MediaTypeScorecardV1 {
			out = append(out, errorf("%s is set but %s is not %q", layout.AnnotationTestConfig, layout.AnnotationTestMediaType, layout.MediaTypeScorecardV1))
		}
		dir := strings.TrimSuffix(cfg, "/") + "/"
		found := false
		for _, f := range b.Files {
			if strings.HasPrefix(f, dir) && !strings.HasSuffix(f, "/") {
				found = true
			}
		}
		if !found {
			out = append(out, errorf("the test configuration directory %s has no file", dir))
		}
	}
	return out
}

func checkDockerfile(b *Bundle) []Finding {
	if b.Dockerfile == nil || b.Annotations == nil {
		return nil
	}
	var out []Finding
	for _, k := range sortedKeys(b.Annotations) {
		if got, ok := b.Dockerfile.Labels[k]; !ok {
			out = append(out, errorf("bundle.Dockerfile has no LABEL %s", k))
		} else if got != b.Annotations[k] {
			out = append(out, errorf("bundle.Dockerfile LABEL %s=%s differs from the annotation %q", k, got, b.Annotations[k]))
		}
	}
	for _, k := range sortedKeys(b.Dockerfile.Labels) {
		if _, ok := b.Annotations[k]; !ok && strings.HasPrefix(k, "operators.operatorframework.io.") {
			out = append(out, errorf("bundle.Dockerfile LABEL %s is not in %s", k, layout.AnnotationsFile))
		}
	}
	want := map[string]string{
		"/" + b.Annotations[layout.AnnotationManifests]: layout.ManifestsDir,
		"/" + b.Annotations[layout.AnnotationMetadata]:  layout.MetadataDir,
	}
	if cfg := b.Annotations[layout.AnnotationTestConfig]; cfg != "" {
		want["/"+cfg] = cfg
	}
	for _, dst := range sortedKeys(want) {
		found := false
		for _, c := range b.Dockerfile.Copies {
			if strings.TrimSuffix(c[1], "/") == strings.TrimSuffix(dst, "/") &&
				strings.HasSuffix(strings.TrimSuffix(c[0], "/"), "/"+strings.TrimSuffix(want[dst], "/")) {
				found = true
			}
		}
		if !found {
			out = append(out, errorf("bundle.Dockerfile does not COPY the bundle's %s to %s", want[dst], dst))
		}
	}
	return out
}

func checkSupportedKinds(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.Objects {
		if !layout.Supported(o.GetKind()) {
			out = append(out, errorf("%s: kind %s cannot be part of a bundle", o.File, o.GetKind()))
		}
	}
	return out
}

func checkObjectMetadata(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.Objects {
		nameFn := validation.NameIsDNSSubdomain
		switch o.GetKind() {
		case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
			nameFn = func(name string, _ bool) []string { return content.IsPathSegmentName(name) }
		case "Service":
			nameFn = validation.NameIsDNS1035Label
		}
		if o.GetName() == "" {
			out = append(out, errorf("%s: %s has no name", o.File, o.GetKind()))
			continue
		}
		for _, msg := range nameFn(o.GetName(), false) {
			out = append(out, errorf("%s: name %q: %s", o.File, o.GetName(), msg))
		}
		if o.GetNamespace() != "" {
			out = append(out, warnf("%s: namespace %q is ignored: OLM creates the object in the install namespace", o.File, o.GetNamespace()))
		}
		for _, msg := range metavalidation.IsQualifiedName(o.GetKind()) {
			out = append(out, errorf("%s: kind %q: %s", o.File, o.GetKind(), msg))
		}
	}
	return out
}

func checkSize(b *Bundle) []Finding {
	switch {
	case b.CompressedSize > MaxCompressedSize:
		return []Finding{errorf("the compressed bundle is %d bytes, over the %d-byte limit", b.CompressedSize, MaxCompressedSize)}
	case b.CompressedSize > MaxCompressedSize*85/100:
		return []Finding{warnf("the compressed bundle is %d bytes, over 85%% of the %d-byte limit", b.CompressedSize, MaxCompressedSize)}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
