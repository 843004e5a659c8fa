package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The sources of the four validation layers docs/validation.md maps,
// relative to this package.
const (
	crdFile        = "../../../config/crd/bases/apps.kruise.io_sidecarsets.yaml"
	rulesDir       = "../../../policy/rules"
	authoringFile  = "../../../policy/authoring/sidecarset-authoring.yaml"
	goChecksDir    = "../../../webhooks/validation"
	validationPage = "validation.md"
)

// goCheck is how docs/validation.md names a Go check: a function of
// webhooks/validation that validates (validateX) or warns (xWarnings).
var goCheck = regexp.MustCompile("`(validate[A-Z][A-Za-z]*|[a-z][A-Za-z]*Warnings)`")

// TestValidationMap keeps docs/validation.md complete: every rule of each
// layer is on the page (CRD CEL rules and authoring policy rules by their
// fixed message, policy rules by name, constrained spec fields by path, Go
// checks by function name), and every Go check the page names exists.
func TestValidationMap(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(docsDir, validationPage))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)

	messages, fields := crdRules(t)
	layers := []struct {
		name  string
		rules []string
	}{
		{"CRD CEL rule (message)", messages},
		{"CRD enum or bound (spec field)", quoted(fields)},
		{"policy rule (name)", quoted(policyRuleNames(t))},
		{"authoring policy rule (message)", authoringMessages(t)},
		{"Go check (function)", quoted(goChecks(t))},
	}
	for _, l := range layers {
		if len(l.rules) == 0 {
			t.Errorf("no %s found: the source moved?", l.name)
		}
		for _, r := range l.rules {
			if !strings.Contains(page, r) {
				t.Errorf("docs/%s does not list the %s %s", validationPage, l.name, r)
			}
		}
	}
	checks := goChecks(t)
	for _, m := range goCheck.FindAllStringSubmatch(page, -1) {
		if !slices.Contains(checks, m[1]) {
			t.Errorf("docs/%s names the Go check %s, which webhooks/validation does not have", validationPage, m[1])
		}
	}
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}

// crdRules returns the messages of the CRD's CEL rules, in every served
// version, and the spec fields of our own types that carry an enum or a
// numeric bound (Kubernetes' container and volume types excluded).
func crdRules(t *testing.T) (messages, fields []string) {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	readYAML(t, crdFile, &crd)
	var walk func(node map[string]any, path string)
	walk = func(node map[string]any, path string) {
		rules, _ := node["x-kubernetes-validations"].([]any)
		for _, r := range rules {
			if m, _ := r.(map[string]any)["message"].(string); m != "" && !slices.Contains(messages, m) {
				messages = append(messages, m)
			}
		}
		own := strings.HasPrefix(path, "spec") && !slices.ContainsFunc(
			[]string{"spec.containers[]", "spec.initContainers[]", "spec.volumes[]", "spec.imagePullSecrets[]"},
			func(core string) bool { return strings.HasPrefix(path, core) })
		_, enum := node["enum"]
		_, minimum := node["minimum"]
		_, maximum := node["maximum"]
		if own && (enum || minimum || maximum) && !slices.Contains(fields, path) {
			fields = append(fields, path)
		}
		props, _ := node["properties"].(map[string]any)
		for name, child := range props {
			walk(child.(map[string]any), strings.TrimPrefix(path+"."+name, "."))
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items, path+"[]")
		}
	}
	for _, v := range crd.Spec.Versions {
		walk(v.Schema.OpenAPIV3Schema, "")
	}
	return messages, fields
}

// policyRuleNames returns the names of the validations of every policy
// shipped under policy/rules.
func policyRuleNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(rulesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		var p struct {
			Validations []struct {
				Name string `json:"name"`
			} `json:"validations"`
		}
		readYAML(t, f, &p)
		for _, v := range p.Validations {
			names = append(names, v.Name)
		}
	}
	return names
}

// authoringMessages returns the fixed messages of the authoring
// ValidatingAdmissionPolicy's validations.
func authoringMessages(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(authoringFile)
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	for doc := range strings.SplitSeq(string(raw), "\n---") {
		var p struct {
			Kind string `json:"kind"`
			Spec struct {
				Validations []struct {
					Message string `json:"message"`
				} `json:"validations"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
			t.Fatalf("%s: %v", authoringFile, err)
		}
		if p.Kind != "ValidatingAdmissionPolicy" {
			continue
		}
		for _, v := range p.Spec.Validations {
			messages = append(messages, v.Message)
		}
	}
	return messages
}

// goChecks returns the checks of webhooks/validation: its functions named
// validateX or xWarnings.
func goChecks(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(goChecksDir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(goChecksDir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if n := fn.Name.Name; goCheck.MatchString("`" + n + "`") {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
