package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sidecarset-operator/sidecarset-operator/test/cluster"
)

// StateFile records a running real node's host changes. There is one per
// machine: the kubelet's device-plugin directory, containerd's shim sockets
// and the ports are the host's, so two real nodes cannot run side by side.
// It is in /run, which a reboot empties as it undoes the changes.
const StateFile = "/run/sidecarset-operator/real-node.json"

// hostChanges is every change the node makes to the host outside its own
// directory. Each is recorded before it is made, so that Down undoes it
// whatever happened since, even after the process that made it was killed.
type hostChanges struct {
	// Dir is the node's directory.
	Dir string `json:"dir"`
	// Sysctls are the kernel settings the kubelet rewrites, as they were.
	Sysctls map[string]string `json:"sysctls"`
	// Cgroups are the kubelet's cgroup root in each hierarchy.
	Cgroups []string `json:"cgroups"`
	// Bridge is the pods' bridge.
	Bridge string `json:"bridge,omitempty"`
	// CreatedDirs are the directories outside Dir the node's programs
	// create where their paths are fixed (the top of each that did not exist
	// before).
	CreatedDirs []string `json:"createdDirs"`
	// PodLogs is where the kubelet writes the containers' logs; its links in
	// /var/log/containers point there.
	PodLogs string `json:"podLogs"`
}

// kubeletSysctls are the kernel settings the kubelet sets at its start
// (kubelet's setupKernelTunables): it leaves them changed when it stops.
var kubeletSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
}

// fixedDirs are the directories the kubelet, containerd's shims and the CNI
// library use whatever they are told: the device-plugin socket directory,
// the container log links, the shims' sockets and CNI's result cache.
var fixedDirs = []string{"/var/lib/kubelet/device-plugins", "/var/log/containers", "/run/containerd/s", "/var/lib/cni"}

func readState() (*hostChanges, error) {
	data, err := os.ReadFile(StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var h hostChanges
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", StateFile, err)
	}
	return &h, nil
}

func (h *hostChanges) save() error {
	if err := os.MkdirAll(filepath.Dir(StateFile), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	tmp := StateFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, StateFile)
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	data, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(data)), err
}

// recordSysctls remembers the kubelet's kernel settings as they are.
func (h *hostChanges) recordSysctls() error {
	h.Sysctls = map[string]string{}
	for _, name := range kubeletSysctls {
		v, err := readSysctl(name)
		if err != nil {
			return err
		}
		h.Sysctls[name] = v
	}
	return h.save()
}

// restoreSysctls puts back every kernel setting that changed.
func (h *hostChanges) restoreSysctls() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(h.Sysctls)) {
		want := h.Sysctls[name]
		if got, err := readSysctl(name); err == nil && got == want {
			continue
		}
		if err := os.WriteFile(sysctlPath(name), []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %s: %w", name, want, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies are the mount points of the host's cgroup hierarchies
// (v1's, one per controller, and the v2 one beside them, if any).
func cgroupHierarchies() ([]string, error) {
	ms, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// makeCgroups creates the kubelet's cgroup root in every hierarchy (the
// kubelet requires it to exist): in cpuset's, with the root's CPUs and
// memory nodes.
func (h *hostChanges) makeCgroups(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, mp := range hierarchies {
		dir := filepath.Join(mp, root)
		h.Cgroups = append(h.Cgroups, dir)
		if err := h.save(); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating the cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			data, err := os.ReadFile(filepath.Join(mp, f))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				return fmt.Errorf("setting %s of %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// cgroupDirs returns the directories under the node's cgroups, deepest
// first.
func (h *hostChanges) cgroupDirs() []string {
	var dirs []string
	for _, root := range h.Cgroups {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// cgroupPIDs returns the processes in the node's cgroups.
func (h *hostChanges) cgroupPIDs() []int {
	seen := map[int]bool{}
	for _, dir := range h.cgroupDirs() {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				seen[pid] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// removeCgroups kills what still runs in the node's cgroups (the
// containers' processes, once containerd and its shims are gone) and
// removes them, deepest first.
func (h *hostChanges) removeCgroups() error {
	var errs []error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range h.cgroupPIDs() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		errs = nil
		for _, dir := range h.cgroupDirs() {
			if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing the cgroup %s: %w", dir, err))
			}
		}
		return len(errs) == 0, nil
	})
	if err != nil {
		return errors.Join(errs...)
	}
	return nil
}

// makeBridge creates the pods' bridge with its address and brings it up.
func (h *hostChanges) makeBridge(name, cidr string) error {
	h.Bridge = name
	if err := h.save(); err != nil {
		return err
	}
	return createBridge(name, cidr)
}

// bridgeAddress is the pods' bridge's MAC address (locally administered).
// A bridge whose address is not set takes the lowest of its ports', so it
// changes whenever a pod whose veth had the lowest goes or a lower one
// comes: the pods' neighbour entries for their gateway then name an address
// nobody answers, and their traffic to and from the host (the API server,
// the kubelet's probes, the API server's webhook calls) is lost until the
// entries go stale, for up to tens of seconds. Set, it never changes.
const bridgeAddress = "02:73:73:6e:6f:01"

// createBridge creates a bridge with a fixed MAC address (bridgeAddress),
// gives it the address cidr and brings it up; an existing bridge gets the
// same.
func createBridge(name, cidr string) error {
	if !linkExists(name) {
		if err := ip("link", "add", "name", name, "address", bridgeAddress, "type", "bridge"); err != nil {
			return err
		}
	}
	if err := ip("link", "set", name, "address", bridgeAddress); err != nil {
		return err
	}
	if err := ip("addr", "replace", cidr, "dev", name); err != nil {
		return err
	}
	return ip("link", "set", name, "up")
}

func (h *hostChanges) removeBridge() error {
	if h.Bridge == "" || !linkExists(h.Bridge) {
		return nil
	}
	return ip("link", "delete", h.Bridge)
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// recordFixedDirs remembers, for each fixed directory, the top of what does
// not exist yet: what the node's programs will create.
func (h *hostChanges) recordFixedDirs() error {
	for _, d := range fixedDirs {
		top := ""
		for p := d; p != "/"; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			top = p
		}
		if top != "" && !slices.Contains(h.CreatedDirs, top) {
			h.CreatedDirs = append(h.CreatedDirs, top)
		}
	}
	return h.save()
}

// removeFixedDirs removes the directories the node's programs created, and
// the container log links that point into the node's logs in a
// /var/log/containers that was there before.
func (h *hostChanges) removeFixedDirs() error {
	var errs []error
	for _, d := range h.CreatedDirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && h.PodLogs != "" && strings.HasPrefix(target, h.PodLogs+"/") {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// mountsUnder returns the mount points at or under the roots, deepest
// first.
func mountsUnder(roots []string) ([]string, error) {
	ms, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		for _, r := range roots {
			if m.Mountpoint == r || strings.HasPrefix(m.Mountpoint, r+"/") {
				return false, false
			}
		}
		return true, false
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out), nil
}

// unmountUnder detaches every mount under the roots: the containers' root
// file systems, shared memory and network namespaces, the pods' volumes.
func unmountUnder(roots []string) error {
	var errs []error
	var points []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if points, err = mountsUnder(roots); err != nil || len(points) == 0 {
			return true, err
		}
		errs = nil
		for _, p := range points {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			}
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return errors.Join(append(errs, fmt.Errorf("still mounted: %s", strings.Join(points, ", ")))...)
	}
	return err
}

// processesOf returns the processes whose executable is one of the
// binaries.
func processesOf(binaries ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if slices.Contains(binaries, strings.TrimSuffix(exe, " (deleted)")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll kills the processes and waits until they are gone.
func killAll(pids []int) error {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, cluster.WaitGone(pid, 10*time.Second))
	}
	return errors.Join(errs...)
}
