// Package version is the operator's release version, set once at build
// time and read by the manager (its log, its build-info metric and the
// annotation it writes on its webhook configuration) and by the kubectl
// plugin (kubectl sidecarset version). The Makefile's VERSION is the one
// source: its builds pass it, and the commit, with
//
//	-ldflags "-X github.com/sidecarset-operator/sidecarset-operator/version.version=0.1.0
//	          -X github.com/sidecarset-operator/sidecarset-operator/version.revision=<commit>"
//
// (LDFlags). A binary built without them reports DevelVersion.
package version

import (
	"fmt"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Package is this package's import path, for -ldflags -X.
const Package = "github.com/sidecarset-operator/sidecarset-operator/version"

// DevelVersion is the version of a binary built without the release
// ldflags (go build, go run, go test).
const DevelVersion = "v0.0.0-devel"

// The annotations the manager writes on the MutatingWebhookConfiguration
// holding its pod webhooks, whenever it writes their scope: the version
// and the commit of the manager that last wrote it. The plugin reads them.
const (
	Annotation         = "sidecarset-operator.dev/version"
	RevisionAnnotation = "sidecarset-operator.dev/revision"
)

// Set by the linker (-X); see the package comment.
var (
	version  string
	revision string
)

// Info is a build's version and commit.
type Info struct {
	// Version is a semantic version, vMAJOR.MINOR.PATCH (with a
	// pre-release suffix for a development build).
	Version string `json:"version"`
	// Revision is the commit the binary was built from; empty when unknown.
	Revision string `json:"revision,omitempty"`
}

// Get returns this binary's version and commit.
func Get() Info {
	return Info{Version: Canonical(version), Revision: revision}
}

// String is "v0.1.0 (commit)", or the version alone.
func (i Info) String() string {
	if i.Revision == "" {
		return i.Version
	}
	return fmt.Sprintf("%s (%s)", i.Version, i.Revision)
}

// Devel reports whether the version is a development build's (no release
// version, or not a semantic version).
func (i Info) Devel() bool {
	if i.Version == DevelVersion {
		return true
	}
	_, err := parse(i.Version)
	return err != nil
}

// parse reads a canonical version (a leading v, then MAJOR.MINOR.PATCH).
func parse(v string) (*utilversion.Version, error) {
	if !strings.HasPrefix(v, "v") {
		return nil, fmt.Errorf("version %q does not start with v", v)
	}
	return utilversion.ParseSemantic(v)
}

// Canonical turns a release version as the Makefile writes it (0.1.0) or
// as tags name it (v0.1.0) into vMAJOR.MINOR.PATCH; empty is DevelVersion.
// A value that is no semantic version is returned unchanged (Devel says
// so).
func Canonical(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return DevelVersion
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if _, err := parse(v); err != nil {
		return strings.TrimPrefix(v, "v")
	}
	return v
}

// LDFlags are the linker flags that stamp a build with a version and a
// commit (without the v; the Makefile's VERSION form is accepted as is).
func LDFlags(version, revision string) []string {
	return []string{"-X " + Package + ".version=" + version, "-X " + Package + ".revision=" + revision}
}

// Annotations are the webhook configuration's annotations recording i.
func (i Info) Annotations() map[string]string {
	return map[string]string{Annotation: i.Version, RevisionAnnotation: i.Revision}
}

// FromAnnotations reads the version a manager recorded in its webhook
// configuration's annotations; false when none is recorded.
func FromAnnotations(annotations map[string]string) (Info, bool) {
	v, ok := annotations[Annotation]
	if !ok || v == "" {
		return Info{}, false
	}
	return Info{Version: v, Revision: annotations[RevisionAnnotation]}, true
}
