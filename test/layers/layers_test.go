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

// layers, most specific prefix first.
var layers = []layer{
	{"api/", 0},
	{"version/", 0}, // the build's version, stamped by -ldflags -X: imports nothing of the module
	{"policy/", 1},
	{"internal/setup", 4}, // the manager's wiring: everything below
	{"internal/", 2},      // wiring shared by both shells (cache indexes and reads, the scope state)
	{"webhooks/", 3},
	{"controllers/", 3},
	{"cmd/kubectl-sidecarset/", 4},
	{"hack/", 4}, // build tools (bundle, CRD, images)
	{"", 5},      // main
}

// layerOf returns the layer of a package of the module (its path relative
// to the module), and false for the tests' own packages, which may use
// anything.
func layerOf(rel string) (layer, bool) {
	if rel == "test" || strings.HasPrefix(rel, "test/") {
		return layer{}, false
	}
	for _, l := range layers {
		if strings.HasPrefix(rel+"/", l.prefix) || (l.prefix == "" && rel == "") {
			return l, true
		}
	}
	return layer{}, false
}

func TestNoPackageDependsOnALayerAbove(t *testing.T) {
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from, ok := layerOf(relative(fields[0]))
		if !ok {
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

// TestLayerOf pins the layer of a few packages, so that a prefix edit
// cannot silently put them in the wrong one.
func TestLayerOf(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]string{
		"api/v1beta1": "api/", "internal/candidate": "internal/", "policy/celenv": "policy/", "policy": "policy/",
		"internal/lookup": "internal/", "internal/setup": "internal/setup", "webhooks/inject": "webhooks/", "webhooks": "webhooks/",
		"controllers/rollout": "controllers/", "cmd/kubectl-sidecarset/explain": "cmd/kubectl-sidecarset/", "": "",
	} {
		l, ok := layerOf(rel)
		if !ok || l.prefix != want {
			t.Errorf("layerOf(%q) = %q, %v; want %q", rel, l.prefix, ok, want)
		}
	}
	if _, ok := layerOf("test/e2e"); ok {
		t.Error("test/e2e has a layer; the tests may use anything")
	}
	if !slices.IsSortedFunc(layers[:2], func(a, b layer) int { return a.rank - b.rank }) {
		t.Error("api/ is not below policy/")
	}
}
