// Package node runs a real Kubernetes node on this host and joins it to a
// kwok cluster (test/cluster), beside the simulated nodes: a kubelet,
// containerd with runc, the CNI bridge plugin, and a registry that holds
// the node's images (test/node/images), all built into bin/ by the Makefile
// (make dev-node). It needs root: the kubelet and containerd make cgroups,
// mounts and network namespaces, and the node a bridge.
//
// Every change to the host is recorded (StateFile) before it is made, and
// Down undoes them all: no process, mount, bridge, cgroup or changed kernel
// setting is left behind. One real node runs per machine.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
)

// Defaults of a node: its own ports (the kwok controller uses the kubelet's
// usual ones), a private subnet for the pods.
const (
	DefaultName        = "real-node"
	kubeletPort        = 10350
	kubeletHealthzPort = 10348
	registryAddr       = "127.0.0.1:5123"
	bridgeName         = "ssnode0"
	podSubnet          = "172.30.213.0/24"
	podGateway         = "172.30.213.1"
)

// CgroupRoot is the kubelet's cgroup, in every hierarchy: a container's is
// <hierarchy>/CgroupRoot/kubepods[/burstable|/besteffort]/pod<UID>/<ID>.
const CgroupRoot = "/sidecarset-real-node"

// Node is a real node of a cluster.
type Node struct {
	// Name is the node's name.
	Name string
	// RepoRoot is the repository: the node's own programs are built from it.
	RepoRoot string
	// BinDir holds the tools (bin/: k8s/kubelet, node/...).
	BinDir string
	// Dir holds everything the node writes: containerd's and the kubelet's
	// directories, configurations and logs.
	Dir string
	// Cluster is the cluster the node joins; the kubelet uses its admin
	// credentials.
	Cluster *cluster.Cluster
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// Paths returns where the node's pieces are.
func (n *Node) Paths() Paths { return newPaths(n.BinDir, n.Dir) }

// Registry is the address of the node's registry: push an image there under
// its full name (127.0.0.1:5123/docker.io/library/nginx:1.25) and the node
// pulls it by its usual one (nginx:1.25).
func (n *Node) Registry() string { return registryAddr }

// Subnet is the pods' subnet; the host reaches their addresses.
func (n *Node) Subnet() string { return podSubnet }

func (n *Node) step(start time.Time, format string, args ...any) {
	if n.Out != nil {
		_, _ = fmt.Fprintf(n.Out, "==> %-70s %5.1fs\n", fmt.Sprintf(format, args...), time.Since(start).Seconds())
	}
}

// Up starts the node and waits until it is Ready. A node left in Dir by an
// earlier run is removed first; a node running from another directory is an
// error. A node that does not come up is removed before Up returns.
func (n *Node) Up(ctx context.Context) (err error) {
	start := time.Now()
	if os.Geteuid() != 0 {
		return errors.New("the real node needs root (it runs containerd and a kubelet, and makes cgroups, mounts and a bridge)")
	}
	if prev, err := readState(); err != nil {
		return err
	} else if prev != nil {
		if prev.Dir != n.Dir {
			return fmt.Errorf("a real node already runs on this machine, from %s: one runs at a time (stop it first: make dev-down for the dev cluster's)", prev.Dir)
		}
		n.step(start, "Removing the real node left by an earlier run")
		if err := n.Down(ctx); err != nil {
			return err
		}
	}
	p := n.Paths()
	for _, bin := range []string{p.Kubelet, p.Containerd, p.Shim, p.Runc, p.Ctr, filepath.Join(p.CNIBin, "bridge"), p.Busybox} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s is missing: build the node's tools with make dev-node (or make tools)", bin)
		}
	}
	nodeIP, err := cluster.HostIP()
	if err != nil {
		return err
	}
	for _, addr := range []string{registryAddr, fmt.Sprintf("127.0.0.1:%d", kubeletHealthzPort), net.JoinHostPort(nodeIP, fmt.Sprint(kubeletPort))} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the real node needs the address %s, which is in use: %w", addr, err)
		}
		_ = l.Close()
	}
	// A node that fails to come up is taken down again: nothing half-done
	// stays on the host.
	defer func() {
		if err == nil {
			return
		}
		if state, _ := readState(); state != nil {
			err = errors.Join(err, n.Down(context.WithoutCancel(ctx)))
		}
		err = fmt.Errorf("%w\n(the logs: %s)", err, p.Logs)
	}()

	n.step(start, "Building the node's programs (nodebox, registry)")
	nodebox, registryBin, err := n.buildPrograms(ctx)
	if err != nil {
		return err
	}

	h := &hostChanges{Dir: n.Dir, PodLogs: p.PodLogs}
	if err := h.recordSysctls(); err != nil {
		return err
	}
	if err := h.recordFixedDirs(); err != nil {
		return err
	}
	for _, d := range []string{p.Logs, p.ContainerdRoot, p.ContainerdState, filepath.Join(p.RegistryHosts, "_default"), p.CNIConf, p.CNIState, p.KubeletRoot, p.PodLogs, p.RegistryBlobs, p.RuncRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	n.step(start, "Making the cgroup %s and the bridge %s (%s)", CgroupRoot, bridgeName, podGateway)
	if err := h.makeCgroups(CgroupRoot); err != nil {
		return err
	}
	if err := h.makeBridge(bridgeName, podGateway+"/24"); err != nil {
		return err
	}

	s := Settings{
		Name: n.Name, IP: nodeIP, Paths: p, Registry: registryAddr,
		Bridge: bridgeName, Subnet: podSubnet, Gateway: podGateway, CgroupRoot: CgroupRoot,
		ClientCA: n.Cluster.CACertPath(), KubeletPort: kubeletPort, KubeletHealthzPort: kubeletHealthzPort,
		DNS: hostNameServer(),
	}
	if err := n.writeConfigs(s); err != nil {
		return err
	}

	n.step(start, "Starting the registry on %s", registryAddr)
	reg := n.process("registry", registryBin, "--addr="+registryAddr, "--dir="+p.RegistryBlobs)
	reg.ReadyURL = "http://" + registryAddr + "/v2/"
	if err := startAndWait(ctx, reg, 30*time.Second); err != nil {
		return err
	}
	n.step(start, "Pushing the node's images")
	count, err := pushCatalogue(ctx, registryAddr, p.Busybox, nodebox)
	if err != nil {
		return err
	}
	n.step(start, "Pushed %d images", count)

	n.step(start, "Starting containerd")
	ctrd := n.process("containerd", p.Containerd, "--config="+p.ContainerdConfig)
	if err := ctrd.Start(true); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx, 30*time.Second); err != nil {
		return err
	}

	n.step(start, "Starting the kubelet (node %s, %s)", n.Name, nodeIP)
	kubelet := n.process("kubelet", p.Kubelet,
		"--config="+p.KubeletConfig,
		"--kubeconfig="+n.Cluster.KubeconfigPath(),
		"--root-dir="+p.KubeletRoot,
		"--cert-dir="+filepath.Join(p.KubeletRoot, "pki"),
		"--hostname-override="+n.Name,
		"--node-ip="+nodeIP,
		"--node-labels="+Label+"=true",
		"--v=2",
	)
	kubelet.ReadyURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", kubeletHealthzPort)
	if err := startAndWait(ctx, kubelet, 60*time.Second); err != nil {
		return err
	}
	if err := n.waitReady(ctx, 90*time.Second); err != nil {
		return err
	}
	n.step(start, "The real node %s is Ready", n.Name)
	return nil
}

// hostNameServer is the first name server of the host's resolv.conf, or
// none.
func hostNameServer() string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" && net.ParseIP(f[1]) != nil {
			return f[1]
		}
	}
	return ""
}

func (n *Node) buildPrograms(ctx context.Context) (nodebox []byte, registry string, err error) {
	out := filepath.Join(n.BinDir, "node")
	nodeboxBin := filepath.Join(out, "nodebox")
	registry = filepath.Join(out, "registry")
	for _, b := range []struct{ out, pkg string }{{nodeboxBin, "./test/node/nodebox"}, {registry, "./test/node/registry"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", b.out, b.pkg)
		cmd.Dir = n.RepoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("building %s: %w\n%s", b.pkg, err, o)
		}
	}
	nodebox, err = os.ReadFile(nodeboxBin)
	return nodebox, registry, err
}

func (n *Node) writeConfigs(s Settings) error {
	p := s.Paths
	ctrd, err := ContainerdConfig(s)
	if err != nil {
		return err
	}
	cni, err := CNIConfig(s)
	if err != nil {
		return err
	}
	kubelet, err := KubeletConfig(s)
	if err != nil {
		return err
	}
	for path, data := range map[string][]byte{
		p.ContainerdConfig: ctrd,
		filepath.Join(p.RegistryHosts, "_default", "hosts.toml"): RegistryHosts(s),
		filepath.Join(p.CNIConf, "10-bridge.conflist"):           cni,
		p.KubeletConfig: kubelet,
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) process(name, binary string, args ...string) *cluster.Process {
	return &cluster.Process{
		Binary:  binary,
		Args:    args,
		LogPath: filepath.Join(n.Paths().Logs, name+".log"),
		PIDPath: filepath.Join(n.Dir, name+".pid"),
	}
}

func startAndWait(ctx context.Context, p *cluster.Process, timeout time.Duration) error {
	if err := p.Start(true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.WaitReady(ctx)
}

// KillContainer sends SIGKILL to the main process of a container the node
// runs, named by its status' containerID (containerd://<id>): the
// container dies as on an OOM kill or a node's crash, without its preStop
// hook or a grace period, and the kubelet restarts it as its pod's
// restartPolicy says.
func (n *Node) KillContainer(ctx context.Context, containerID string) error {
	id, ok := strings.CutPrefix(containerID, "containerd://")
	if !ok {
		return fmt.Errorf("container %q is not a containerd container", containerID)
	}
	return n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
}

func (n *Node) ctr(ctx context.Context, args ...string) error {
	p := n.Paths()
	cmd := exec.CommandContext(ctx, p.Ctr, append([]string{"--address", p.ContainerdSocket, "--namespace", "k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *Node) waitContainerd(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = n.ctr(ctx, "version")
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("containerd does not answer on %s: %w (%w)", n.Paths().ContainerdSocket, err, last)
	}
	return nil
}

func (n *Node) clientset() (kubernetes.Interface, error) {
	cfg, err := n.Cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (n *Node) waitReady(ctx context.Context, timeout time.Duration) error {
	cs, err := n.clientset()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		node, getErr := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if getErr != nil {
			last = getErr.Error() // not registered yet: wait on
			return false, nil     //nolint:nilerr // an error to wait through
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = c.Reason + ": " + c.Message
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the node %s is not Ready after %s (%s): %w", n.Name, timeout, last, err)
	}
	return nil
}

// Down stops the node and undoes every change it made to the host; the
// node's logs stay in Dir/logs. It fails, naming them, if changes are left.
// Without a node on the machine, it does nothing.
func (n *Node) Down(ctx context.Context) error {
	h, err := readState()
	if err != nil || h == nil {
		return err
	}
	if h.Dir != n.Dir {
		return fmt.Errorf("the real node on this machine runs from %s, not %s", h.Dir, n.Dir)
	}
	if os.Geteuid() != 0 {
		return errors.New("removing the real node needs root")
	}
	start := time.Now()
	p := n.Paths()
	var errs []error
	n.step(start, "Stopping the kubelet")
	errs = append(errs, cluster.StopFromPIDFile(filepath.Join(n.Dir, "kubelet.pid"), 15*time.Second))
	n.step(start, "Stopping the containers and containerd")
	// The containers' processes first (they are in the kubelet's cgroups),
	// then containerd, then its shims, which outlive it.
	for _, pid := range h.cgroupPIDs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	errs = append(errs, cluster.StopFromPIDFile(filepath.Join(n.Dir, "containerd.pid"), 15*time.Second))
	errs = append(errs, killAll(processesOf(p.Shim, p.Runc)))
	errs = append(errs, cluster.StopFromPIDFile(filepath.Join(n.Dir, "registry.pid"), 10*time.Second))
	n.step(start, "Unmounting and removing the cgroups, the bridge and the fixed directories")
	errs = append(errs, unmountUnder(append([]string{n.Dir}, h.CreatedDirs...)))
	errs = append(errs, h.removeCgroups())
	errs = append(errs, h.removeBridge())
	errs = append(errs, h.restoreSysctls())
	errs = append(errs, h.removeFixedDirs())
	errs = append(errs, n.removeState())
	errs = append(errs, n.deleteNodeObject(ctx))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left := h.leftovers(p); len(left) > 0 {
		return fmt.Errorf("the real node left on the host: %s", strings.Join(left, "; "))
	}
	if err := os.Remove(StateFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = os.Remove(filepath.Dir(StateFile)) // only if empty
	n.step(start, "The real node is gone (its logs: %s)", p.Logs)
	return nil
}

// removeState removes everything of Dir but the logs.
func (n *Node) removeState() error {
	entries, err := os.ReadDir(n.Dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == "logs" {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(n.Dir, e.Name())))
	}
	return errors.Join(errs...)
}

// deleteNodeObject removes the Node from the cluster, if it answers.
func (n *Node) deleteNodeObject(ctx context.Context) error {
	cs, err := n.clientset()
	if err != nil {
		return nil // no cluster left to clean
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if n.Out != nil {
		_, _ = fmt.Fprintf(n.Out, "    (the Node object stays: %v)\n", err)
	}
	return nil
}

// leftovers lists what of the node is still on the host.
func (h *hostChanges) leftovers(p Paths) []string {
	var left []string
	if pids := processesOf(p.Kubelet, p.Containerd, p.Shim, p.Runc); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	if points, err := mountsUnder(append([]string{h.Dir}, h.CreatedDirs...)); err == nil && len(points) > 0 {
		left = append(left, "mounts "+strings.Join(points, ", "))
	}
	if h.Bridge != "" && linkExists(h.Bridge) {
		left = append(left, "the bridge "+h.Bridge)
	}
	for _, c := range h.Cgroups {
		if _, err := os.Stat(c); err == nil {
			left = append(left, "the cgroup "+c)
		}
	}
	for name, want := range h.Sysctls {
		if got, err := readSysctl(name); err == nil && got != want {
			left = append(left, fmt.Sprintf("%s = %s (was %s)", name, got, want))
		}
	}
	for _, d := range h.CreatedDirs {
		if _, err := os.Lstat(d); err == nil {
			left = append(left, "the directory "+d)
		}
	}
	return left
}
