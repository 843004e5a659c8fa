// Package layout holds the conventions of an OLM registry+v1 bundle that both
// the generator and the validator follow: directory names, the annotation
// keys of metadata/annotations.yaml (mirrored as bundle.Dockerfile labels),
// the kinds a bundle may carry, and how manifest files are named.
package layout

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Directories and files of a bundle, relative to the bundle root.
const (
	ManifestsDir    = "manifests/"
	MetadataDir     = "metadata/"
	AnnotationsFile = "metadata/annotations.yaml"
	ScorecardDir    = "tests/scorecard/"
	ScorecardFile   = "tests/scorecard/config.yaml"
)

// Annotation keys of metadata/annotations.yaml.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
	AnnotationTestMediaType  = "operators.operatorframework.io.test.mediatype.v1"
	AnnotationTestConfig     = "operators.operatorframework.io.test.config.v1"
)

// Values of the media type annotations.
const (
	MediaTypeRegistryV1  = "registry+v1"
	MediaTypeScorecardV1 = "scorecard+v1"
)

// RequiredAnnotations are the keys every bundle's annotations.yaml must have.
func RequiredAnnotations() []string {
	return []string{AnnotationMediaType, AnnotationManifests, AnnotationMetadata, AnnotationPackage, AnnotationChannels}
}

// Supported reports whether a bundle may carry an object of this kind: the
// ClusterServiceVersion, CustomResourceDefinitions and the kinds
// operator-registry accepts besides them. Deployments and webhook
// configurations are not among them: they travel inside the CSV.
func Supported(kind string) bool {
	switch kind {
	case "ClusterServiceVersion", "CustomResourceDefinition",
		"Secret", "ConfigMap", "ServiceAccount", "Service",
		"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"PrometheusRule", "ServiceMonitor", "PodMonitor",
		"PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "NetworkPolicy",
		"ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "ConsolePlugin":
		return true
	}
	return false
}

// ManifestFileName is the file name of an object under manifests/, as
// operator-sdk names them: <package>.clusterserviceversion.yaml for the CSV,
// <group>_<plural>.yaml for a CRD (its name reversed into group and plural),
// <name>_<group>_<version>_<kind>.yaml for anything else, the core group
// omitted and the kind in lower case.
func ManifestFileName(pkg string, gvk schema.GroupVersionKind, name string) string {
	switch gvk.Kind {
	case "ClusterServiceVersion":
		return pkg + ".clusterserviceversion.yaml"
	case "CustomResourceDefinition":
		plural, group, _ := strings.Cut(name, ".")
		return group + "_" + plural + ".yaml"
	}
	parts := []string{name}
	if gvk.Group != "" {
		parts = append(parts, gvk.Group)
	}
	parts = append(parts, gvk.Version, strings.ToLower(gvk.Kind))
	return strings.Join(parts, "_") + ".yaml"
}

// DockerfileLabels renders annotations as bundle.Dockerfile LABEL lines,
// sorted by key.
func DockerfileLabels(annotations map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, annotations[k])
	}
	return b.String()
}
