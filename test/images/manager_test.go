package images

import (
	"bytes"
	"context"
	"debug/elf"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidecarset-operator/sidecarset-operator/hack/image/release"
)

func TestManagerImage_HasEveryPlatformUnderOneOCIIndex(t *testing.T) {
	b := images(t)
	mt, err := b.manager.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if !mt.IsIndex() {
		t.Fatalf("the manager image is a %s, want an image index", mt)
	}
	m, err := b.manager.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String())
		if !d.MediaType.IsImage() || d.ArtifactType != "" {
			t.Errorf("%s: media type %s, artifact type %q; want an image manifest and no artifact type", d.Platform, d.MediaType, d.ArtifactType)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
	if diff := cmp.Diff(metadata(release.ManagerMetadata()).Labels(), m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	if local := digest(t, b.managerLocal); local != digest(t, b.manager) {
		t.Errorf("pushed %s, pulled back %s", local, digest(t, b.manager))
	}
}

// The binary of each platform is a static executable of that architecture.
func TestManagerImage_BinaryIsStaticForItsArchitecture(t *testing.T) {
	b := images(t)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for p, img := range platformImages(t, b.manager, b.platforms) {
		t.Run(p, func(t *testing.T) {
			bin, ok := files(t, img)[release.ManagerBinary]
			if !ok {
				t.Fatalf("no /%s in the image", release.ManagerBinary)
			}
			if bin.Mode != 0o755 {
				t.Errorf("/%s has mode %o, want 755", release.ManagerBinary, bin.Mode)
			}
			f, err := elf.NewFile(bytes.NewReader(bin.Data))
			if err != nil {
				t.Fatalf("/%s is not ELF: %v", release.ManagerBinary, err)
			}
			arch := configFile(t, img).Architecture
			if want := machines[arch]; f.Machine != want {
				t.Errorf("/%s is for %s, want %s (%s)", release.ManagerBinary, f.Machine, want, arch)
			}
			if f.Type != elf.ET_EXEC {
				t.Errorf("/%s is an ELF %s, want an executable", release.ManagerBinary, f.Type)
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
					t.Errorf("/%s is dynamically linked (%s program header)", release.ManagerBinary, prog.Type)
				}
			}
			if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
				t.Errorf("/%s needs shared libraries %v", release.ManagerBinary, libs)
			}
		})
	}
}

// The binary of this machine's architecture runs: --help prints the usage
// of the flag package (cmd/manager/main.go parses flag.CommandLine, which
// exits 0 on -help) naming the manager's flags.
func TestManagerImage_BinaryRunsHelp(t *testing.T) {
	b := images(t)
	img, err := release.PlatformImage(b.manager, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		t.Skipf("no image for this machine's architecture: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(bin, files(t, img)[release.ManagerBinary].Data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --help exits with %v, want 0:\n%s", err, out)
	}
	for _, flag := range []string{"-leader-elect", "-metrics-bind-address", "-webhook-port", "-cert-source", "-feature-gates", "-zap-log-level"} {
		if !bytes.Contains(out, []byte(flag)) {
			t.Errorf("manager --help does not mention %s:\n%s", flag, out)
		}
	}
}

// The Go builder's image is the Dockerfile's: the files its final stage
// copies, its user, working directory, entrypoint and labels (the ARGs set
// as make docker-build sets them), and every time the build's.
func TestManagerImage_IsWhatTheDockerfileBuilds(t *testing.T) {
	b := images(t)
	stages := parseDockerfile(t, filepath.Join(b.root, "Dockerfile"), map[string]string{"VERSION": version, "REVISION": revision})
	final := finalStage(stages)
	want := copyTree(t, b.root, final.workdir, final.copies, dockerignore(t, b.root))
	for p, img := range platformImages(t, b.manager, b.platforms) {
		t.Run(p, func(t *testing.T) {
			tree := files(t, img)
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), tree.Paths()); diff != "" {
				t.Errorf("files (-Dockerfile +image):\n%s", diff)
			}
			for path, src := range want {
				if src.from != "" {
					if path != release.ManagerBinary || src.src != "/workspace/manager" {
						t.Errorf("/%s comes from %s, want only the builder's manager", path, src)
					}
					continue
				}
				data, err := os.ReadFile(filepath.Join(b.root, src.src))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(tree[path].Data, data) {
					t.Errorf("/%s differs from %s", path, src.src)
				}
			}
			cfg := configFile(t, img).Config
			if cfg.User != final.user || cfg.User != release.ManagerUser {
				t.Errorf("user %q, Dockerfile %q, want %q", cfg.User, final.user, release.ManagerUser)
			}
			if !slices.Equal(cfg.Entrypoint, final.entrypoint) || !slices.Equal(cfg.Entrypoint, []string{"/manager"}) {
				t.Errorf("entrypoint %q, Dockerfile %q, want [/manager]", cfg.Entrypoint, final.entrypoint)
			}
			if cfg.WorkingDir != final.workdir {
				t.Errorf("working directory %q, Dockerfile %q", cfg.WorkingDir, final.workdir)
			}
			if len(cfg.Cmd) != 0 || len(cfg.Env) != 0 {
				t.Errorf("cmd %q and env %q; the Dockerfile sets neither", cfg.Cmd, cfg.Env)
			}
			if diff := cmp.Diff(final.labels, cfg.Labels); diff != "" {
				t.Errorf("labels (-Dockerfile +image):\n%s", diff)
			}
			requireTimes(t, img)
		})
	}
}

// The Dockerfile compiles the manager as the Go builder does, from every
// file the manager's packages need: a package added outside the copied
// directories, or an embedded file .dockerignore leaves out, would break
// docker-build only.
func TestDockerfile_BuildsTheManagerAsTheGoBuilderDoes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const version, revision = "1.2.3", "0123abcd"
	builder := stageNamed(t, parseDockerfile(t, filepath.Join(root, "Dockerfile"), map[string]string{"VERSION": version, "REVISION": revision}), "builder")
	var build string
	for _, r := range builder.runs {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	for _, want := range append([]string{"CGO_ENABLED=0"}, release.GoBuildFlags(version, revision)...) {
		if ldflags, ok := strings.CutPrefix(want, "-ldflags="); ok {
			want = `-ldflags="` + ldflags + `"`
		}
		if !strings.Contains(build, want) {
			t.Errorf("the Dockerfile's go build %q lacks %s", build, want)
		}
	}

	var sources []string
	for _, c := range builder.copies {
		sources = append(sources, c.srcs...)
	}
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"-f", `{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}{{range .EmbedFiles}}{{$d}}/{{.}} {{end}}{{end}}{{end}}`, release.ManagerPackage)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ignored := dockerignore(t, root)
	files := append(strings.Fields(string(out)), filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	if len(files) < 10 {
		t.Fatalf("go list found only %d files of the manager", len(files))
	}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if !slices.ContainsFunc(sources, func(src string) bool {
			return rel == strings.TrimSuffix(src, "/") || strings.HasPrefix(rel, strings.TrimSuffix(src, "/")+"/")
		}) {
			t.Errorf("the manager needs %s, which the Dockerfile's builder stage does not COPY", rel)
		}
		if ignored(rel) {
			t.Errorf("the manager needs %s, which .dockerignore leaves out of the build context", rel)
		}
	}
}

// The same sources give the same image: a second build (compile, link,
// layers, configs) has the digest of the first.
func TestManagerImage_IsReproducible(t *testing.T) {
	b := images(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	again, err := release.BuildManager(ctx, b.root, b.platforms, metadata(release.ManagerMetadata()))
	if err != nil {
		t.Fatal(err)
	}
	first, second := digest(t, b.manager), digest(t, again)
	t.Logf("first build %s (%s), second %s (%s)", first, b.managerBuild.Round(time.Second), second, time.Since(start).Round(time.Second))
	if first != second {
		t.Errorf("two builds of the same sources differ: %s then %s", first, second)
	}
}
