package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
)

// Where the supported Kubernetes versions are stated, relative to this
// package.
const (
	versionsPage = "supported-versions.md"
	repoDir      = "../../.."
	newestTools  = "test/tools/k8s"
)

// The files that state the oldest supported Kubernetes.
var (
	minKubeVersionCSVs = []string{
		"config/manifests/bases/sidecarset-operator.clusterserviceversion.yaml",
		"bundle/manifests/sidecarset-operator.clusterserviceversion.yaml",
	}
	kubernetesRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes v(\S+)`)
)

// pinnedKubernetes is the k8s.io/kubernetes version a tools module pins.
func pinnedKubernetes(module string) (*version.Version, error) {
	data, err := os.ReadFile(filepath.Join(repoDir, module, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := kubernetesRequire.FindSubmatch(data)
	if m == nil {
		return nil, fmt.Errorf("%s/go.mod does not require k8s.io/kubernetes", module)
	}
	return version.ParseSemantic(string(m[1]))
}

// TestSupportedVersions keeps the supported floor stated once in meaning:
// the CSVs' minKubeVersion, the authoring policy's CEL library, the module
// that builds the oldest tested API server (test/tools/k8s-1.<minor>), the
// README and docs/supported-versions.md say the same minor, and the page's
// matrix names the exact releases the suites run on.
func TestSupportedVersions(t *testing.T) {
	t.Parallel()
	var floor *version.Version
	for _, f := range minKubeVersionCSVs {
		raw, err := os.ReadFile(filepath.Join(repoDir, f))
		if err != nil {
			t.Fatal(err)
		}
		var csv struct {
			Spec struct {
				MinKubeVersion string `json:"minKubeVersion"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &csv); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		v, err := version.ParseSemantic(csv.Spec.MinKubeVersion)
		if err != nil {
			t.Fatalf("%s: minKubeVersion: %v", f, err)
		}
		if v.Patch() != 0 {
			t.Errorf("%s: minKubeVersion %s names a patch release; the floor is a minor (1.%d.0)", f, v, v.Minor())
		}
		if floor == nil {
			floor = v
		} else if !v.EqualTo(floor) {
			t.Errorf("%s: minKubeVersion %s, %s says %s", f, v, minKubeVersionCSVs[0], floor)
		}
	}
	minor := fmt.Sprintf("1.%d", floor.Minor())
	if got := authoring.MinKubernetesVersion; got.Major() != 1 || got.Minor() != floor.Minor() {
		t.Errorf("policy/authoring compiles the policy with the CEL library of %s, the CSV's minKubeVersion is %s", got, floor)
	}

	oldestModule := "test/tools/k8s-" + minor
	oldest, err := pinnedKubernetes(oldestModule)
	if err != nil {
		t.Fatalf("the oldest supported minor is not built for the envtest suites: %v", err)
	}
	if oldest.Minor() != floor.Minor() {
		t.Errorf("%s pins Kubernetes %s, not %s", oldestModule, oldest, minor)
	}
	newest, err := pinnedKubernetes(newestTools)
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(repoDir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "K8S_OLDEST_MOD := "+oldestModule+"\n") {
		t.Errorf("the Makefile does not build the oldest supported minor from %s", oldestModule)
	}

	page, err := os.ReadFile(filepath.Join(docsDir, versionsPage))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**Kubernetes " + minor + " and newer**",
		"`minKubeVersion: " + floor.String() + "`",
		"| " + newest.String() + " | `" + newestTools + "`",
		"| " + oldest.String() + " | `" + oldestModule + "`",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("docs/%s does not say %q", versionsPage, want)
		}
	}
	readme, err := os.ReadFile(filepath.Join(repoDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "On Kubernetes " + minor + " or newer"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
