// Package cluster runs a local Kubernetes cluster with kwokctl's binary
// runtime: a real etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (built from source into bin/k8s), and kwok simulating the
// nodes and their kubelets. The kubelet behaviour is declared in kwok Stages:
// kwok's defaults for nodes and pod completion/deletion, and ours (stages/)
// for pods becoming ready and for containers restarting after an in-place
// image change.
package cluster

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

//go:embed stages/*.yaml
var ownStages embed.FS

// kwokDefaultStages are the stage files of the kwok module that kwokctl would
// load by default and that ours do not replace. kwokctl drops every default
// stage as soon as one custom stage is given, so they are shipped along.
var kwokDefaultStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// Cluster is a kwokctl cluster with the binary runtime.
type Cluster struct {
	// Name is the kwokctl cluster name.
	Name string
	// RepoRoot is the repository root; the tools are in RepoRoot/bin and
	// the kwok module is resolved from RepoRoot/test/tools.
	RepoRoot string
	// WorkDir holds the cluster's state (KWOK_WORKDIR) and its kubeconfig.
	WorkDir string
	// Out receives the output of kwokctl and kubectl; nil discards it.
	Out io.Writer
}

// BinDir is where the tools are.
func (c *Cluster) BinDir() string { return filepath.Join(c.RepoRoot, "bin") }

// Kubectl is the path of the kubectl built with the control plane.
func (c *Cluster) Kubectl() string { return filepath.Join(c.BinDir(), "k8s", "kubectl") }

// KubeconfigPath is the admin kubeconfig of the cluster.
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.WorkDir, "kubeconfig") }

// Exists reports whether the cluster has been created in WorkDir.
func (c *Cluster) Exists() bool {
	_, err := os.Stat(filepath.Join(c.WorkDir, "clusters", c.Name, "kwok.yaml"))
	return err == nil
}

// Create creates and starts the cluster with the given number of nodes and
// waits until it is ready.
func (c *Cluster) Create(ctx context.Context, nodes int) error {
	if err := os.MkdirAll(c.WorkDir, 0o755); err != nil {
		return err
	}
	stages, err := c.stages(ctx)
	if err != nil {
		return err
	}
	stagesPath := filepath.Join(c.WorkDir, "stages.yaml")
	if err := os.WriteFile(stagesPath, stages, 0o644); err != nil {
		return err
	}
	k8s := filepath.Join(c.BinDir(), "k8s")
	if err := c.kwokctl(ctx, "create", "cluster", "--name", c.Name, "--runtime", "binary",
		"--kube-apiserver-binary", filepath.Join(k8s, "kube-apiserver"),
		"--etcd-binary", filepath.Join(k8s, "etcd"),
		"--kube-controller-manager-binary", filepath.Join(k8s, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(k8s, "kube-scheduler"),
		"--kwok-controller-binary", filepath.Join(c.BinDir(), "kwok"),
		"--config", stagesPath,
		"--kubeconfig", c.KubeconfigPath(),
		"--disable-qps-limits",
		"--wait", "3m",
	); err != nil {
		return fmt.Errorf("creating kwok cluster %s: %w", c.Name, err)
	}
	return c.Scale(ctx, nodes)
}

// Scale makes the cluster have exactly the given number of kwok nodes (110
// pods each) and waits until they are ready.
func (c *Cluster) Scale(ctx context.Context, nodes int) error {
	if err := c.kwokctl(ctx, "scale", "node", "--name", c.Name, "--replicas", strconv.Itoa(nodes)); err != nil {
		return fmt.Errorf("scaling cluster %s to %d nodes: %w", c.Name, nodes, err)
	}
	_, err := c.RunKubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout=2m")
	return err
}

// Start starts the components of an existing, stopped cluster.
func (c *Cluster) Start(ctx context.Context) error {
	return c.kwokctl(ctx, "start", "cluster", "--name", c.Name, "--wait", "3m")
}

// Delete stops the cluster and removes its state.
func (c *Cluster) Delete(ctx context.Context) error {
	if !c.Exists() {
		return nil
	}
	return c.kwokctl(ctx, "delete", "cluster", "--name", c.Name, "--kubeconfig", c.KubeconfigPath())
}

// RESTConfig returns a client configuration for the cluster's admin.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
}

// RunKubectl runs kubectl against the cluster and returns its standard
// output; on failure the error carries the standard error.
func (c *Cluster) RunKubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.RunKubectlStdin(ctx, nil, args...)
}

// RunKubectlStdin runs kubectl against the cluster with stdin as its
// standard input.
func (c *Cluster) RunKubectlStdin(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Kubectl(), append([]string{"--kubeconfig", c.KubeconfigPath()}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (c *Cluster) kwokctl(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir(), "kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.WorkDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if c.Out != nil {
		_, _ = c.Out.Write(out.Bytes())
	}
	if err != nil {
		return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, lastLines(out.String(), 20))
	}
	return nil
}

// stages returns the stage file: kwok's defaults that we keep, then ours.
func (c *Cluster) stages(ctx context.Context) ([]byte, error) {
	kwokDir, err := c.kwokModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, rel := range kwokDefaultStages {
		data, err := os.ReadFile(filepath.Join(kwokDir, rel))
		if err != nil {
			return nil, fmt.Errorf("reading kwok's default stage: %w", err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	entries, err := ownStages.ReadDir("stages")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := ownStages.ReadFile("stages/" + e.Name())
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// kwokModuleDir is where the Go module cache holds the kwok module the tools
// module pins (bin/kwok was built from it). A bin/ restored from a cache may
// come without the module cache, so the module is downloaded when missing.
func (c *Cluster) kwokModuleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/kwok")
	cmd.Dir = filepath.Join(c.RepoRoot, "test", "tools")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &mod); jsonErr == nil && mod.Error != "" {
		return "", fmt.Errorf("downloading the kwok module: %s", mod.Error)
	}
	if err != nil {
		if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
			return "", fmt.Errorf("downloading the kwok module: %w: %s", err, exitErr.Stderr)
		}
		return "", fmt.Errorf("downloading the kwok module: %w", err)
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("downloading the kwok module: go mod download gave no directory: %s", out)
	}
	return mod.Dir, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
