package images

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// stage is one FROM ... stage of a Dockerfile, as far as these tests read
// it.
type stage struct {
	name       string
	copies     []copyInstr
	labels     map[string]string
	runs       []string
	user       string
	workdir    string
	entrypoint []string
}

// copyInstr is a COPY instruction: its sources, destination and --from.
type copyInstr struct {
	from string
	srcs []string
	dest string
}

// parseDockerfile reads the stages of a Dockerfile: continuation lines
// joined, comments skipped, LABEL values optionally double-quoted (one
// key=value per instruction, as ours write them), ${ARG} references
// replaced by args (an ARG not given is empty, as in docker build).
func parseDockerfile(t *testing.T, file string, args map[string]string) []*stage {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var stages []*stage
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = os.Expand(strings.TrimSpace(rest), func(k string) string { return args[k] })
		if strings.EqualFold(instr, "FROM") {
			s := &stage{labels: map[string]string{}}
			if f := strings.Fields(rest); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			continue // ARG before FROM
		}
		s := stages[len(stages)-1]
		switch strings.ToUpper(instr) {
		case "COPY":
			c := copyInstr{}
			fields := strings.Fields(rest)
			for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
				if v, ok := strings.CutPrefix(fields[0], "--from="); ok {
					c.from = v
				}
				fields = fields[1:]
			}
			if len(fields) < 2 {
				t.Fatalf("%s: COPY needs a source and a destination: %q", file, line)
			}
			c.srcs, c.dest = fields[:len(fields)-1], fields[len(fields)-1]
			s.copies = append(s.copies, c)
		case "LABEL":
			k, v, ok := strings.Cut(rest, "=")
			if !ok {
				t.Fatalf("%s: LABEL without key=value: %q", file, line)
			}
			s.labels[k] = strings.Trim(v, `"`)
		case "RUN":
			s.runs = append(s.runs, rest)
		case "USER":
			s.user = rest
		case "WORKDIR":
			s.workdir = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &s.entrypoint); err != nil {
				t.Fatalf("%s: ENTRYPOINT is not a JSON array: %v", file, err)
			}
		}
	}
	if len(stages) == 0 {
		t.Fatalf("%s has no FROM", file)
	}
	return stages
}

// copied is where a file of the image comes from: a file of the build
// context (repo-relative) or a path in an earlier stage.
type copied struct {
	from, src string
}

// copyTree is the file tree the COPY instructions of a stage produce, by
// image path relative to the root: a directory source copies its contents
// into the destination, a file source goes to the destination (or into it,
// when it ends with a slash or there are several sources), files the
// context leaves out (ignored) are not there. Sources from other stages are
// taken as files.
func copyTree(t *testing.T, root, workdir string, copies []copyInstr, ignored func(string) bool) map[string]copied {
	t.Helper()
	out := map[string]copied{}
	for _, c := range copies {
		dest := c.dest
		if !path.IsAbs(dest) {
			dir := strings.HasSuffix(dest, "/") || dest == "."
			dest = path.Join("/", workdir, dest)
			if dir {
				dest += "/"
			}
		}
		for _, src := range c.srcs {
			if c.from != "" {
				target := dest
				if strings.HasSuffix(dest, "/") || len(c.srcs) > 1 {
					target = path.Join(dest, path.Base(src))
				}
				out[strings.TrimPrefix(path.Clean(target), "/")] = copied{from: c.from, src: src}
				continue
			}
			info, err := os.Stat(filepath.Join(root, src))
			if err != nil {
				t.Fatalf("COPY %s: %v", src, err)
			}
			if ignored(path.Clean(src)) {
				t.Fatalf("COPY %s: .dockerignore leaves it out of the build context", src)
			}
			if !info.IsDir() {
				target := dest
				if strings.HasSuffix(dest, "/") || len(c.srcs) > 1 {
					target = path.Join(dest, path.Base(src))
				}
				out[strings.TrimPrefix(path.Clean(target), "/")] = copied{src: path.Clean(src)}
				continue
			}
			err = filepath.WalkDir(filepath.Join(root, src), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(filepath.Join(root, src), p)
				if err != nil {
					return err
				}
				repoRel, err := filepath.Rel(root, p)
				if err != nil || ignored(filepath.ToSlash(repoRel)) {
					return err
				}
				out[strings.TrimPrefix(path.Join(dest, filepath.ToSlash(rel)), "/")] = copied{src: filepath.ToSlash(repoRel)}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// noIgnore is the context of make bundle-build: bundle.Dockerfile and
// bundle/ in a tar stream, without .dockerignore.
func noIgnore(string) bool { return false }

// dockerignore returns whether .dockerignore at root keeps a file (a
// slash-separated path relative to root) out of the build context: a
// pattern matching the path or one of its parent directories excludes it,
// as docker build does (exceptions, "!pattern", are not supported: ours has
// none).
func dockerignore(t *testing.T, root string) func(rel string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore: exceptions (%s) are not supported by this test", line)
		}
		patterns = append(patterns, strings.TrimSuffix(path.Clean(line), "/"))
	}
	return func(rel string) bool {
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			for _, pattern := range patterns {
				if ok, _ := path.Match(pattern, p); ok {
					return true
				}
			}
		}
		return false
	}
}

// finalStage returns the last stage, the one the image is.
func finalStage(stages []*stage) *stage {
	return stages[len(stages)-1]
}

// stageNamed returns the stage of that name.
func stageNamed(t *testing.T, stages []*stage, name string) *stage {
	t.Helper()
	for _, s := range stages {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no stage %q", name)
	return nil
}

func (c copied) String() string {
	if c.from != "" {
		return fmt.Sprintf("--from=%s %s", c.from, c.src)
	}
	return c.src
}
