package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidecarset-operator/sidecarset-operator/version"
)

// The manager image's settings, the same as the Dockerfile's.
const (
	// ManagerBinary is the binary's path in the image.
	ManagerBinary = "manager"
	// ManagerUser is the non-root user (distroless' nonroot).
	ManagerUser = "65532:65532"
	// RootFSDir holds the files the manager image has besides the binary
	// (etc/passwd and etc/group naming the nonroot user), relative to the
	// repository root.
	RootFSDir = "hack/image/rootfs"
)

// ManagerEntrypoint is the image's entrypoint.
func ManagerEntrypoint() []string { return []string{"/" + ManagerBinary} }

// GoBuildFlags are the flags of the manager's go build: no file system
// paths, no symbol table, no VCS stamp, so that the binary depends on the
// sources, the Go toolchain and the version and commit it is stamped with
// (package version) only. The Dockerfile builds with the same.
func GoBuildFlags(ver, revision string) []string {
	ldflags := append([]string{"-s", "-w"}, version.LDFlags(ver, revision)...)
	return []string{"-trimpath", "-ldflags=" + strings.Join(ldflags, " "), "-buildvcs=false"}
}

// goBuildEnv is the environment of the manager's go build for a platform:
// static (no cgo), the architecture's baseline instruction set, and no
// GOFLAGS of the caller's.
func goBuildEnv(p v1.Platform) []string {
	env := []string{"CGO_ENABLED=0", "GOOS=" + p.OS, "GOARCH=" + p.Architecture, "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0"}
	if p.Architecture == "arm" {
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	return env
}

// ManagerPackage is the manager's main package, relative to the repository
// root.
const ManagerPackage = "./cmd/manager"

// BuildManagerBinary compiles the manager (ManagerPackage) for one platform into out, stamped with meta's version
// and revision.
func BuildManagerBinary(ctx context.Context, root string, p v1.Platform, meta Metadata, out string) error {
	return BuildBinary(ctx, root, ManagerPackage, p, meta.Version, meta.Revision, out)
}

// BuildBinary compiles the main package pkg (relative to the repository
// root) for one platform into out, as a release builds its binaries (the
// manager and the kubectl plugin): GoBuildFlags, static, stamped with the
// version and revision.
func BuildBinary(ctx context.Context, root, pkg string, p v1.Platform, ver, revision, out string) error {
	args := append(append([]string{"build"}, GoBuildFlags(ver, revision)...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), goBuildEnv(p)...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, p, err, output)
	}
	return nil
}

// ManagerImage is the manager's index: for each platform, the rootfs files
// and that platform's binary in one layer, run as ManagerUser with the
// binary as entrypoint.
func ManagerImage(platforms []v1.Platform, binaries map[string][]byte, rootfs Tree, meta Metadata) (v1.ImageIndex, error) {
	labels := meta.Labels()
	return multiPlatform(platforms, labels, func(p v1.Platform) (v1.Image, error) {
		bin, ok := binaries[p.String()]
		if !ok {
			return nil, fmt.Errorf("no manager binary")
		}
		tree := rootfs.Merge(Tree{ManagerBinary: {Mode: 0o755, Data: bin}})
		layer, err := Layer(tree, meta.Created)
		if err != nil {
			return nil, err
		}
		cfg := v1.Config{User: ManagerUser, Entrypoint: ManagerEntrypoint(), WorkingDir: "/", Labels: labels}
		return platformImage(p, cfg, meta.Created, "hack/image manager", layer)
	})
}

// BuildManager compiles the manager for every platform and builds its
// index, with the rootfs of the repository at root.
func BuildManager(ctx context.Context, root string, platforms []v1.Platform, meta Metadata) (v1.ImageIndex, error) {
	tmp, err := os.MkdirTemp("", "manager-build-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	binaries := map[string][]byte{}
	for _, p := range platforms {
		out := filepath.Join(tmp, strings.ReplaceAll(p.String(), "/", "-"))
		start := time.Now()
		if err := BuildManagerBinary(ctx, root, p, meta, out); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "built the manager for %s in %s\n", p, time.Since(start).Round(100*time.Millisecond))
		if binaries[p.String()], err = os.ReadFile(out); err != nil {
			return nil, err
		}
	}
	rootfs, err := ReadTree(os.DirFS(root), RootFSDir, "")
	if err != nil {
		return nil, err
	}
	return ManagerImage(platforms, binaries, rootfs, meta)
}
