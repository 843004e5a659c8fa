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
	"net"
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
	// WebhookHosts are the host:port of the webhooks served on this host
	// (the manager's, by URL) that the API server presents its webhook
	// client certificate to, beside every Service's (*.svc).
	WebhookHosts []string
}

// BinDir is where the tools are.
func (c *Cluster) BinDir() string { return filepath.Join(c.RepoRoot, "bin") }

// Kubectl is the path of the kubectl built with the control plane.
func (c *Cluster) Kubectl() string { return filepath.Join(c.BinDir(), "k8s", "kubectl") }

// KubeconfigPath is the admin kubeconfig of the cluster.
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.WorkDir, "kubeconfig") }

// PKIDir holds the cluster's CA and its admin's certificate and key
// (ca.crt, admin.crt, admin.key): the API server serves with the admin's.
func (c *Cluster) PKIDir() string { return filepath.Join(c.WorkDir, "clusters", c.Name, "pki") }

// CACertPath is the cluster's CA certificate.
func (c *Cluster) CACertPath() string { return filepath.Join(c.PKIDir(), "ca.crt") }

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
	if err := c.writeWebhookClientAuth(); err != nil {
		return fmt.Errorf("making the API server's webhook client certificate: %w", err)
	}
	config, err := c.config(ctx)
	if err != nil {
		return err
	}
	configPath := filepath.Join(c.WorkDir, "kwokctl.yaml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return err
	}
	k8s := filepath.Join(c.BinDir(), "k8s")
	if err := c.kwokctl(ctx, "create", "cluster", "--name", c.Name, "--runtime", "binary",
		"--kube-apiserver-binary", filepath.Join(k8s, "kube-apiserver"),
		"--etcd-binary", filepath.Join(k8s, "etcd"),
		"--kube-controller-manager-binary", filepath.Join(k8s, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(k8s, "kube-scheduler"),
		"--kwok-controller-binary", filepath.Join(c.BinDir(), "kwok"),
		"--config", configPath,
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

// ReadyForRealNodes reports whether the cluster was created with what a real
// node needs (configuration): clusters made before it was are not.
func (c *Cluster) ReadyForRealNodes() bool {
	data, err := os.ReadFile(filepath.Join(c.WorkDir, "kwokctl.yaml"))
	return err == nil && bytes.Contains(data, []byte("manage-nodes-with-annotation-selector"))
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

// configuration is kwokctl's configuration of the cluster, what a real node
// joining it needs (test/node): the kwok controller manages the kwok nodes
// only (kwokctl's binary runtime would have it manage every node, a
// kubelet's too); the API server's certificate names this host's address,
// where the real node's pods reach it; the API server reaches webhooks
// served by pods through their endpoints (there is no kube-proxy for
// Service addresses) and the kubelet at its address with the admin's
// certificate (kubectl logs, exec); a namespace can send its pods to the
// real node (PodNodeSelector and PodTolerationRestriction: test/node's
// NamespaceAnnotations); the API server presents a client certificate to
// admission webhooks (writeWebhookClientAuth).
func (c *Cluster) configuration() ([]byte, error) {
	ip, err := HostIP()
	if err != nil {
		return nil, err
	}
	pki := c.PKIDir()
	return fmt.Appendf(nil, `---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubeApiserverCertSANs:
  - %[1]q
componentsPatches:
- name: kwok-controller
  extraArgs:
  - key: manage-all-nodes
    value: "false"
    override: true
  - key: manage-nodes-with-annotation-selector
    value: kwok.x-k8s.io/node=fake
- name: kube-apiserver
  extraArgs:
  - key: enable-aggregator-routing
    value: "true"
  - key: enable-admission-plugins
    value: PodNodeSelector,PodTolerationRestriction
  - key: kubelet-preferred-address-types
    value: InternalIP
  - key: kubelet-client-certificate
    value: %[2]q
  - key: kubelet-client-key
    value: %[3]q
  - key: admission-control-config-file
    value: %[4]q
`, ip, filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), c.admissionConfigPath()), nil
}

// HostIP is this host's address: the default route's (a kubelet refuses
// loopback, and a real node's pods reach the host there).
func HostIP() (string, error) {
	conn, err := net.Dial("udp4", "203.0.113.1:9") // no packet is sent: the route is looked up
	if err != nil {
		return "", fmt.Errorf("finding this host's address (the default route's): %w", err)
	}
	defer func() { _ = conn.Close() }()
	addr, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok || addr.IP.IsLoopback() {
		return "", fmt.Errorf("this host has no address but loopback (%v)", conn.LocalAddr())
	}
	return addr.IP.String(), nil
}

// config returns kwokctl's configuration file: the cluster's configuration,
// kwok's default stages that we keep, then ours.
func (c *Cluster) config(ctx context.Context) ([]byte, error) {
	kwokDir, err := c.kwokModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	conf, err := c.configuration()
	if err != nil {
		return nil, err
	}
	buf.Write(conf)
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
