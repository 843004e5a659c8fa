package docs_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// The table of docs/security.md between these markers ties each guarantee
// the page states to the tests that show it: each row is
// `| claim | tests |`, where tests names Go tests (`TestName`, or
// `TestName/case` for one case of a table or of golden files), test files
// (`path/to/file_test.go`, or a Go file under test/ that holds a suite's
// cases) and, after a file, the text of one of its specs ("should ...").
const (
	claimsStart = "<!-- claims -->"
	claimsEnd   = "<!-- /claims -->"
)

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	specText   = regexp.MustCompile(`"([^"]+)"`)
	goTestName = regexp.MustCompile(`^(Test[A-Z_]\w*)(?:/(\S+))?$`)
)

// claimRow is a row of the claims table.
type claimRow struct {
	claim, tests string
}

func claimRows(page []byte) []claimRow {
	start, end := bytes.Index(page, []byte(claimsStart)), bytes.Index(page, []byte(claimsEnd))
	gomega.Expect(start).To(gomega.BeNumerically(">=", 0), "security.md has no %s marker", claimsStart)
	gomega.Expect(end).To(gomega.BeNumerically(">", start), "security.md has no %s marker after the start", claimsEnd)
	var rows []claimRow
	sc := bufio.NewScanner(bytes.NewReader(page[start:end]))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| Claim") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		gomega.Expect(cells).To(gomega.HaveLen(2), "row %q: want | claim | tests |", line)
		rows = append(rows, claimRow{claim: strings.TrimSpace(cells[0]), tests: strings.TrimSpace(cells[1])})
	}
	return rows
}

// testSources reads every Go test file of the repository, by path from
// its root.
func testSources(root string) map[string]string {
	out := map[string]string{}
	gomega.Expect(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})).To(gomega.Succeed())
	return out
}

// testExists returns what is wrong with a Go test name, or "": a function
// `func name(` in a test file and, for a case, the case's name quoted in
// that file, or a file of that name (any extension) under its package's
// testdata.
func testExists(root string, sources map[string]string, name, tc string) string {
	for path, src := range sources {
		if !strings.HasSuffix(path, "_test.go") || !strings.Contains(src, "func "+name+"(") {
			continue
		}
		if tc == "" || strings.Contains(src, `"`+tc+`"`) || inTestdata(filepath.Join(root, filepath.Dir(filepath.FromSlash(path)), "testdata"), tc) {
			return ""
		}
	}
	if tc != "" {
		return "no Go test " + name + " with a case " + tc
	}
	return "no Go test " + name
}

// inTestdata reports whether dir holds, at any depth, a file or directory
// named tc, or tc with an extension.
func inTestdata(dir, tc string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipAll
		}
		if n := d.Name(); n == tc || strings.HasPrefix(n, tc+".") {
			found = true
		}
		return nil
	})
	return found
}

var _ = ginkgo.Describe("The security model's claims", func() {
	ginkgo.It("should each name tests that exist", func() {
		page, err := readPage("security.md")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// Tests are named by their path from the repository's root.
		root := filepath.Join(docsDir, "..")
		sources := testSources(root)
		rows := claimRows([]byte(strings.Join(page.lines, "\n")))
		gomega.Expect(len(rows)).To(gomega.BeNumerically(">=", 30), "the table covers the page's guarantees")
		var problems []string
		for _, row := range rows {
			var files []string
			names := 0
			for _, m := range backticked.FindAllStringSubmatch(row.tests, -1) {
				ref := m[1]
				switch m := goTestName.FindStringSubmatch(ref); {
				case m != nil:
					names++
					if problem := testExists(root, sources, m[1], m[2]); problem != "" {
						problems = append(problems, row.claim+": "+problem)
					}
				case strings.HasSuffix(ref, ".go"):
					names++
					if _, ok := sources[ref]; !ok && strings.HasPrefix(ref, "test/") {
						// A suite's table of cases, beside its specs.
						if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(ref))); err == nil {
							sources[ref] = string(data)
						}
					}
					if _, ok := sources[ref]; !ok {
						problems = append(problems, row.claim+": no test file "+ref)
					}
					files = append(files, ref)
				}
			}
			for _, m := range specText.FindAllStringSubmatch(row.tests, -1) {
				found := false
				for _, f := range files {
					if strings.Contains(sources[f], m[1]) {
						found = true
					}
				}
				if !found {
					problems = append(problems, row.claim+": no spec \""+m[1]+"\" in "+strings.Join(files, ", "))
				}
			}
			if names == 0 {
				problems = append(problems, row.claim+": names no test")
			}
		}
		// The prose names tests too ("Tested by ..."): a renamed or removed
		// test fails here as in the table.
		for _, line := range page.lines {
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				if t := goTestName.FindStringSubmatch(m[1]); t != nil {
					if problem := testExists(root, sources, t[1], t[2]); problem != "" {
						problems = append(problems, "the page names "+m[1]+": "+problem)
					}
				}
			}
		}
		gomega.Expect(problems).To(gomega.BeEmpty())
	})
})
