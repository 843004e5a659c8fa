package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Release is one version of the operator as an upgrade meets it: its
// manager image in the real node's registry, and its install rendered for
// the cluster (InstallFromImage's overlay) naming that image by digest
// (by its tag for the suite's own).
type Release struct {
	// Commit is the commit built; empty for the working tree.
	Commit string
	// Digest is the manager image's digest.
	Digest string
	// CRD is the checkout's config/crd, which an upgrade applies first.
	CRD []byte
	// Install is the whole install, as config/default renders it;
	// Upgrade the same through this checkout's config/upgrade component
	// (docs/upgrade.md).
	Install, Upgrade []byte
}

// BuildRelease builds the release of the checkout at root (the repository
// or a worktree of it): the manager image, labelled version 0.1.0-<name>
// and pushed under the tag v0.1.0-<name>, and the install rendered into
// the environment's directory under name.
func (e *Env) BuildRelease(ctx context.Context, root, name string) (*Release, error) {
	if e.Node == nil {
		return nil, fmt.Errorf("the operator runs from its image on the real node: the environment has none")
	}
	dir := filepath.Join(e.Dir, "release", name)
	// The version label tells the releases apart: two checkouts whose
	// manager is the same still give two images, and a rollout.
	digest, err := e.pushImage(ctx, root, filepath.Join(dir, "image"), ManagerImage+"-"+name, "0.1.0-"+name)
	if err != nil {
		return nil, err
	}
	return e.renderRelease(ctx, root, dir, digest)
}

// SuiteRelease is the suite's own install (InstallFromImage: this
// checkout, the image by its tag), to return to after an upgrade.
func (e *Env) SuiteRelease(ctx context.Context) (*Release, error) {
	return e.renderRelease(ctx, e.RepoRoot, filepath.Join(e.Dir, "release", "suite"), "")
}

// renderRelease renders the install of the checkout at root into dir,
// plain and through this checkout's config/upgrade component: the upgrade
// procedure is this checkout's, whichever version it installs.
func (e *Env) renderRelease(ctx context.Context, root, dir, digest string) (*Release, error) {
	r := &Release{Digest: digest}
	var err error
	if r.Install, err = e.renderInstall(ctx, root, filepath.Join(dir, "install"), digest); err != nil {
		return nil, err
	}
	up := filepath.Join(dir, "upgrade")
	if err := os.MkdirAll(up, 0o755); err != nil {
		return nil, err
	}
	component, err := filepath.Rel(up, filepath.Join(e.RepoRoot, "config", "upgrade", "keepscope"))
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../install\ncomponents:\n- %s\n", component)
	if err := os.WriteFile(filepath.Join(up, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	if r.Upgrade, err = e.Cluster.RunKubectl(ctx, "kustomize", up); err != nil {
		return nil, err
	}
	if r.CRD, err = e.Cluster.RunKubectl(ctx, "kustomize", filepath.Join(root, "config", "crd")); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output(); err == nil && root != e.RepoRoot {
		r.Commit = strings.TrimSpace(string(out))
	}
	return r, nil
}

// Worktree checks ref out, detached, into a new temporary directory; the
// returned function removes it.
func (e *Env) Worktree(ctx context.Context, ref string) (string, func(context.Context) error, error) {
	dir, err := os.MkdirTemp("", "sidecarset-worktree-")
	if err != nil {
		return "", nil, err
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", e.RepoRoot, "worktree", "add", "--detach", dir, ref).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("git worktree add %s: %w\n%s", ref, err, out)
	}
	return dir, func(ctx context.Context) error {
		if out, err := exec.CommandContext(ctx, "git", "-C", e.RepoRoot, "worktree", "remove", "--force", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("git worktree remove: %w\n%s", err, out)
		}
		return nil
	}, nil
}

// ApplyRelease upgrades (or rolls back) the install to a release as
// docs/upgrade.md says: the CRD first, server-side, until it is
// established; then the whole install (manifests: Release.Upgrade),
// server-side.
func (e *Env) ApplyRelease(ctx context.Context, crd, manifests []byte) error {
	if _, err := e.Cluster.RunKubectlStdin(ctx, crd, "apply", "--server-side", "-f", "-"); err != nil {
		return err
	}
	if err := waitEstablished(ctx, e.Cluster, "sidecarsets.apps.kruise.io", time.Minute); err != nil {
		return err
	}
	_, err := e.Cluster.RunKubectlStdin(ctx, manifests, "apply", "--server-side", "-f", "-")
	return err
}
