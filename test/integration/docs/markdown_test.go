package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// docsDir is the user guide, relative to this package.
const docsDir = "../../../docs"

// skipMarker starts a ```yaml block that is shown but not applied (an
// output, or a file that is not a Kubernetes object); a reason follows it.
const skipMarker = "# not applied:"

// page is one markdown page of the guide.
type page struct {
	// name is the file name, such as "injection.md".
	name string
	// lines are the page's lines.
	lines []string
}

// readPage reads docs/<name>.
func readPage(name string) (page, error) {
	f, err := os.Open(filepath.Join(docsDir, name))
	if err != nil {
		return page{}, err
	}
	defer func() { _ = f.Close() }()
	p := page{name: name}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		p.lines = append(p.lines, sc.Text())
	}
	return p, sc.Err()
}

// pageNames lists docs/*.md, sorted.
func pageNames() ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(paths))
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	return names, nil
}

// block is one ```yaml fence of a page.
type block struct {
	page string
	// line is the 1-based line of the opening fence.
	line int
	// body is the text between the fences.
	body string
	// skip is the reason given after skipMarker, or "".
	skip string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// fence reports whether a line opens or closes a code fence, and its info
// string (the language).
func fence(line string) (bool, string) {
	trimmed := strings.TrimLeft(line, " ")
	if !strings.HasPrefix(trimmed, "```") {
		return false, ""
	}
	return true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
}

// yamlBlocks returns the page's ```yaml blocks, and the problems that would
// hide an example from the test: an indented yaml fence, an unclosed fence.
func yamlBlocks(p page) ([]block, []string) {
	var blocks []block
	var problems []string
	inFence, isYAML := false, false
	var cur block
	var body []string
	for i, line := range p.lines {
		isFence, info := fence(line)
		switch {
		case !inFence && isFence:
			inFence = true
			isYAML = info == "yaml"
			if isYAML && line != "```yaml" {
				problems = append(problems, fmt.Sprintf("%s:%d: a yaml fence must start at column 0 as exactly ```yaml", p.name, i+1))
			}
			cur, body = block{page: p.name, line: i + 1}, nil
		case inFence && isFence && info == "":
			inFence = false
			if !isYAML {
				continue
			}
			cur.body = strings.Join(body, "\n") + "\n"
			if len(body) > 0 && strings.HasPrefix(body[0], skipMarker) {
				cur.skip = strings.TrimSpace(strings.TrimPrefix(body[0], skipMarker))
			}
			blocks = append(blocks, cur)
		case inFence:
			body = append(body, line)
		}
	}
	if inFence {
		problems = append(problems, fmt.Sprintf("%s:%d: the code fence is never closed", p.name, cur.line))
	}
	return blocks, problems
}

// example is one object of a ```yaml block.
type example struct {
	block block
	// index is the document's position in the block, from 0.
	index int
	// yaml is the document as written.
	yaml string
	// obj is the parsed object.
	obj *unstructured.Unstructured
}

func (e example) String() string {
	return fmt.Sprintf("%s (document %d: %s %s)", e.block, e.index+1, e.obj.GetKind(), objectName(e.obj))
}

func objectName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}

// documentSeparator splits a multi-document block.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// examples parses the objects of a block: each document must be a complete
// object (apiVersion, kind, metadata.name), without "..." elisions or
// duplicate keys. Documents holding only comments are ignored.
func examples(b block) ([]example, error) {
	if strings.Contains(b.body, "...") {
		return nil, fmt.Errorf("%s: the example elides part of the object with \"...\"; write it out", b)
	}
	var out []example
	for i, doc := range documentSeparator.Split(b.body, -1) {
		if onlyComments(doc) {
			continue
		}
		data, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", b, i+1, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", b, i+1, err)
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s, document %d: an example needs apiVersion, kind and metadata.name", b, i+1)
		}
		out = append(out, example{block: b, index: i, yaml: doc, obj: obj})
	}
	return out, nil
}

func onlyComments(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// link is a markdown link of a page, outside code.
type link struct {
	line   int
	target string
}

// markdownLink matches [text](target); the target has no spaces.
var markdownLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// inlineCode matches `code` spans, whose brackets are not links.
var inlineCode = regexp.MustCompile("`[^`]*`")

// links returns the page's links outside code fences and code spans.
func links(p page) []link {
	var out []link
	inFence := false
	for i, line := range p.lines {
		if isFence, _ := fence(line); isFence {
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

// anchors returns the GitHub anchors of a page's headings.
func anchors(p page) map[string]bool {
	out := map[string]bool{}
	counts := map[string]int{}
	inFence := false
	for _, line := range p.lines {
		if isFence, _ := fence(line); isFence {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := slugify(text)
		if n := counts[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		counts[slug]++
	}
	return out
}

// linkText turns [text](url) into text, as GitHub does for anchors.
var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slugify is GitHub's heading anchor: lower case, letters, digits, spaces,
// hyphens and underscores kept, spaces turned into hyphens.
func slugify(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
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

// checkLink returns a problem if a relative link of a page points to a file
// or heading that does not exist.
func checkLink(p page, l link) string {
	t := l.target
	if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(t, "#")
	where := fmt.Sprintf("%s:%d: link %q", p.name, l.line, t)
	target := p
	if file != "" {
		path := filepath.Join(docsDir, file)
		if _, err := os.Stat(path); err != nil {
			return where + ": no such file"
		}
		if anchor == "" || !strings.HasSuffix(file, ".md") {
			return ""
		}
		if filepath.Dir(path) != filepath.Clean(docsDir) {
			return "" // a page outside the guide: its headings are not checked
		}
		var err error
		if target, err = readPage(filepath.Base(file)); err != nil {
			return where + ": " + err.Error()
		}
	}
	if anchor != "" && !anchors(target)[anchor] {
		return where + ": no such heading"
	}
	return ""
}
