// Package docsref checks the documentation against the repository: every
// relative link of the README, CONTRIBUTING.md and the guide (docs/**)
// points to a file and, for a markdown page, to one of its headings; and
// the annotations reference lists every key the code defines.
package docsref

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, relative to this package.
const root = "../.."

// pages returns the markdown pages whose links are checked, relative to
// the root: the README, CONTRIBUTING.md and every page under docs/.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

var (
	// markdownLink is an inline link or image: [text](target) or
	// [text](target "title").
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// inlineCode is a code span, whose brackets are not links.
	inlineCode = regexp.MustCompile("`[^`]*`")
	// headingLink is a link inside a heading, which GitHub reduces to its text.
	headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// isFence reports whether a line opens or closes a code fence.
func isFence(line string) bool {
	l := strings.TrimSpace(line)
	return strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~")
}

// link is one relative link of a page.
type link struct {
	line   int
	target string
}

// links returns the links of a page outside code fences and code spans.
func links(text string) []link {
	var out []link
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if isFence(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: i + 1, target: m[1]})
		}
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case; letters, digits,
// hyphens and underscores kept; spaces turned into hyphens; the rest
// dropped.
func slug(heading string) string {
	heading = headingLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a page's headings, repeated headings
// numbered as GitHub numbers them (-1, -2, ...).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		if isFence(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		s := slug(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// checkLink returns what is wrong with a link of page (relative to the
// root), or "".
func checkLink(page, text string, l link) string {
	t := l.target
	if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
		return ""
	}
	where := fmt.Sprintf("%s:%d: %q", page, l.line, t)
	file, anchor, _ := strings.Cut(t, "#")
	target := text
	if file != "" {
		path := filepath.Join(root, filepath.Dir(page), filepath.FromSlash(file))
		info, err := os.Stat(path)
		if err != nil {
			return where + ": no such file"
		}
		if anchor == "" || info.IsDir() || !strings.HasSuffix(file, ".md") {
			return ""
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return where + ": " + err.Error()
		}
		target = string(data)
	}
	if anchor != "" && !anchors(target)[anchor] {
		return where + ": no such heading"
	}
	return ""
}

func TestLinksResolve(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, page := range pages(t) {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(data)) {
			checked++
			if problem := checkLink(page, string(data), l); problem != "" {
				t.Error(problem)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d links found: the checker is not reading the pages", checked)
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"API versions: v1alpha1 and v1beta1":    "api-versions-v1alpha1-and-v1beta1",
		"Resources: resized in place":           "resources-resized-in-place",
		"When is an upgrade complete?":          "when-is-an-upgrade-complete",
		"The local cluster (`make dev`)":        "the-local-cluster-make-dev",
		"Compared with OpenKruise's own output": "compared-with-openkruises-own-output",
		"[Linked](x.md) heading":                "linked-heading",
		"partition: how many pods stay behind":  "partition-how-many-pods-stay-behind",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestCheckLinkFindsBrokenLinks(t *testing.T) {
	t.Parallel()
	page := "docs/README.md"
	text := "# Title\n\n## A section\n"
	for target, broken := range map[string]bool{
		"#a-section":                 false,
		"#no-section":                true,
		"overview.md":                false,
		"missing.md":                 true,
		"../README.md#why":           false,
		"../README.md#nothing-there": true,
		"https://example.com/x.md":   false,
	} {
		if got := checkLink(page, text, link{line: 1, target: target}) != ""; got != broken {
			t.Errorf("checkLink(%q) broken = %v, want %v", target, got, broken)
		}
	}
}
