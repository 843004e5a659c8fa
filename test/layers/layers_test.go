// Package layers checks the import rule of the tree transitively, which
// the linter's depguard rules check only for direct imports: no package
// depends, directly or through others, on a package of a layer above it or
// of a sibling layer (webhooks/ and controllers/ share code only through
// the layers below both).
package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sidecarset-operator/sidecarset-operator"

// layer is a part of the tree and its rank: a package may depend on
// packages of lower ranks and of its own layer only.
type layer struct {
	prefix string
	rank   int
}

// layers of the tree, bottom up. Layers of one rank are siblings: neither
// depends on the other.
var layers = []layer{
	{"api/", 0},
	{"version/", 0}, // the build's version, stamped by -ldflags -X: imports nothing of the module
	{"policy/", 1},
	{"internal/", 2}, // the floor both shells share: cache transforms, indexes and reads, metrics, the scope state
	{"webhooks/", 3},
	{"controllers/", 3},
	{"cmd/kubectl-sidecarset/", 4},
	{"hack/", 4},        // build tools (bundle, CRD, images)
	{"cmd/manager/", 5}, // the manager: main and its wiring (cmd/manager/app)
}

// isTest reports whether a package (its path relative to the module) is
// one of the tests' own, which may use anything.
func isTest(rel string) bool {
	return rel == "test" || strings.HasPrefix(rel, "test/")
}

// layerOf returns the layer of a package of the module (its path relative
// to the module), and false for a package of no layer: a test's, or one
// outside every layer.
func layerOf(rel string) (layer, bool) {
	if isTest(rel) {
		return layer{}, false
	}
	for _, l := range layers {
		if strings.HasPrefix(rel+"/", l.prefix) {
			return l, true
		}
	}
	return layer{}, false
}

func TestNoPackageDependsOnALayerAbove(t *testing.T) {
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	checked := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from, ok := layerOf(relative(fields[0]))
		if !ok {
			if !isTest(relative(fields[0])) {
				t.Errorf("%s is in no layer: give its directory one", fields[0])
			}
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if dep != module && !strings.HasPrefix(dep, module+"/") {
				continue
			}
			to, ok := layerOf(relative(dep))
			if !ok {
				t.Errorf("%s depends on the test package %s", fields[0], dep)
				continue
			}
			if to.rank > from.rank || (to.rank == from.rank && to.prefix != from.prefix) {
				t.Errorf("%s (layer %q) depends on %s (layer %q)", relative(fields[0]), from.prefix, relative(dep), to.prefix)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d packages checked: the listing is not the module's", checked)
	}
}

func relative(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

// TestLayerOf pins the layer of a few packages, so that a prefix or rank
// edit cannot silently put them in the wrong one.
func TestLayerOf(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]layer{
		"api/v1beta1": {"api/", 0}, "internal/candidate": {"internal/", 2}, "version": {"version/", 0},
		"policy/celenv": {"policy/", 1}, "policy": {"policy/", 1},
		"internal/lookup": {"internal/", 2}, "internal/cachetransform": {"internal/", 2},
		"webhooks/inject": {"webhooks/", 3}, "webhooks": {"webhooks/", 3},
		"controllers/rollout": {"controllers/", 3}, "controllers": {"controllers/", 3},
		"cmd/kubectl-sidecarset/explain": {"cmd/kubectl-sidecarset/", 4}, "hack/image": {"hack/", 4},
		"cmd/manager": {"cmd/manager/", 5}, "cmd/manager/app": {"cmd/manager/", 5},
	} {
		if l, ok := layerOf(rel); !ok || l != want {
			t.Errorf("layerOf(%q) = %v, %v; want %v", rel, l, ok, want)
		}
	}
	for _, rel := range []string{"test/e2e", "test", "", "internalx", "cmd/other"} {
		if l, ok := layerOf(rel); ok {
			t.Errorf("layerOf(%q) = %v; want no layer", rel, l)
		}
	}
	if !slices.IsSortedFunc(layers, func(a, b layer) int { return a.rank - b.rank }) {
		t.Error("the layers are not listed bottom up")
	}
}
