package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// managerWrites are the fields of its own objects the manager writes, as
// docs/upgrade.md's GitOps table names them: where the code writes each,
// and the jq path that ignores it in the Argo CD example.
var managerWrites = map[string]struct{ file, code, jq string }{
	"webhooks[].matchConditions":       {"webhooks/podscope/podscope.go", "w.MatchConditions = merged", ".webhooks[].matchConditions"},
	"webhooks[].clientConfig.caBundle": {"webhooks/certs/certs.go", "Webhooks: []rotator.WebhookInfo{", ".webhooks[].clientConfig.caBundle"},
	"spec.conversion":                  {"webhooks/crdconversion/crdconversion.go", "crd.Spec.Conversion = want", ".spec.conversion.webhook.clientConfig.caBundle"},
}

// fieldWrites are the statements that write one of those fields in the
// manager's code; each file holding one must be in the table (the OLM-only
// objectSelector write is named in the page's prose).
var fieldWrites = regexp.MustCompile(`\.MatchConditions = |\.Spec\.Conversion = |rotator\.WebhookInfo\{|\.ObjectSelector = `)

// TestUpgradeManagerOwnedFields checks docs/upgrade.md's table of the
// fields the manager writes against the code, and that the Argo CD
// example ignores each.
func TestUpgradeManagerOwnedFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoDir, "docs", "upgrade.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	start := strings.Index(page, "## GitOps")
	if start < 0 {
		t.Fatal("docs/upgrade.md has no GitOps section")
	}
	section := page[start:]
	row := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]+)`[^|]* \\| [^|]*`(webhooks/[a-z/]+\\.go)`")
	var named []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		field, file := m[1], m[2]
		named = append(named, file)
		want, ok := managerWrites[field]
		if !ok {
			t.Errorf("the table names %s, which the manager does not write", field)
			continue
		}
		if file != want.file {
			t.Errorf("the table says %s writes %s; %s does", file, field, want.file)
		}
		code, err := os.ReadFile(filepath.Join(repoDir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(code), want.code) {
			t.Errorf("%s no longer writes %s (%q)", file, field, want.code)
		}
		if !strings.Contains(section, "- "+want.jq+"\n") {
			t.Errorf("the Argo CD example does not ignore %s (%s)", field, want.jq)
		}
	}
	if len(named) != len(managerWrites) {
		t.Errorf("the table has %d rows naming code, want %d: %v", len(named), len(managerWrites), named)
	}
	if !strings.Contains(section, "`objectSelector`") {
		t.Error("the GitOps section does not name the objectSelector the manager drops under OLM")
	}
	var writers []string
	for _, dir := range []string{"webhooks", "controllers", "internal"} {
		err := filepath.WalkDir(filepath.Join(repoDir, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			code, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if fieldWrites.Match(code) {
				rel, err := filepath.Rel(repoDir, path)
				writers = append(writers, filepath.ToSlash(rel))
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range writers {
		if !slices.Contains(named, file) {
			t.Errorf("%s writes a field of the manager's own objects that docs/upgrade.md's GitOps table does not name", file)
		}
	}
}
