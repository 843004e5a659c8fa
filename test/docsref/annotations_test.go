package docsref

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// annotationsPage is the reference of every annotation and label key.
const annotationsPage = "docs/reference/annotations.md"

// codeDirs hold the operator's and the plugin's code (test/ does not).
var codeDirs = []string{"api", "controllers", "webhooks", "policy", "internal", "cmd", "version"}

// keyLiteral is an annotation or label key with a DNS prefix, or such a
// prefix alone ("version.sidecarset.kruise.io/"): what a key constant holds.
// Webhook names (no slash) and the pod cache's internal key (a space) are
// not keys.
var keyLiteral = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}/[A-Za-z0-9._-]*$`)

// keyConstants returns every string constant of the code whose value is a
// key, with where it is declared.
func keyConstants(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	visit := func(path string) {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				for i, v := range spec.(*ast.ValueSpec).Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil || !keyLiteral.MatchString(s) {
						continue
					}
					rel, _ := filepath.Rel(root, path)
					out[s] = filepath.ToSlash(rel) + ": " + spec.(*ast.ValueSpec).Names[i].Name
				}
			}
		}
	}
	for _, dir := range codeDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				visit(path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestAnnotationsPageListsEveryKey(t *testing.T) {
	t.Parallel()
	keys := keyConstants(t)
	// The scan must see the well-known keys, or it scans nothing.
	for _, must := range []string{"kruise.io/sidecarset-hash", "sidecarset-operator.dev/failure-policy", "sidecarset-operator.dev/authority"} {
		if _, ok := keys[must]; !ok {
			t.Fatalf("the scan of %v did not find %q", codeDirs, must)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, annotationsPage))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	var missing []string
	for key, where := range keys {
		// A key is listed in code font, a prefix followed by its variable part.
		if !strings.Contains(page, "`"+key) {
			missing = append(missing, key+" ("+where+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("%s does not list %s", annotationsPage, m)
	}
}

func TestKeyLiteral(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"kruise.io/sidecarset-hash":              true,
		"version.sidecarset.kruise.io/":          true,
		"sidecarset-operator.dev/failure-policy": true,
		"mpod.sidecarset-operator.dev":           false,
		"sidecarset-operator.dev/state cached":   false,
		"sigs.k8s.io/yaml":                       true,
		"IS_INJECTED":                            false,
	} {
		if got := keyLiteral.MatchString(s); got != want {
			t.Errorf("keyLiteral(%q) = %v, want %v", s, got, want)
		}
	}
}
