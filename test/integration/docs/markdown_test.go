package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

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
