// Package freshclone checks the newcomer's path through the Makefile: on a
// machine with no bin/, the README's commands must plan the build of every
// tool they need. CI restores bin/ from a cache, so without this test a
// Makefile that plans no tool builds would stay green there and fail every
// fresh clone (it did: `tools:` named its stamps before they were defined).
//
// Each check is a dry run (`make -n`) with LOCALBIN pointing at an empty
// directory: it costs a second and builds nothing.
package freshclone

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What each tool group's build names on its command line.
var (
	k8sTools  = []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl"}
	etcdTools = []string{"go.etcd.io/etcd/server/v3"}
	devTools  = []string{"sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl", "sigs.k8s.io/controller-tools/cmd/controller-gen"}
	lintTools = []string{"github.com/golangci/golangci-lint/v2/cmd/golangci-lint"}
	promTools = []string{"github.com/prometheus/prometheus/cmd/prometheus", "github.com/prometheus/prometheus/cmd/promtool"}
	nodeTools = []string{"k8s.io/kubernetes/cmd/kubelet", "github.com/containerd/containerd/v2/cmd/containerd",
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/ctr",
		"github.com/opencontainers/runc", "github.com/containernetworking/plugins/plugins/main/bridge",
		"github.com/containernetworking/plugins/plugins/ipam/host-local", "github.com/containernetworking/plugins/plugins/main/loopback",
		"download libseccomp-dev busybox-static"}
)

// oldestK8sTools is the build of the oldest supported minor's kube-apiserver
// and kubectl, from their own module.
var oldestK8sTools = []string{"cd test/tools/k8s-1.35 && GONOSUMDB=k8s.io/kubernetes"}

// everyTool is every tool group's build.
var everyTool = slices.Concat(k8sTools, etcdTools, oldestK8sTools, devTools, lintTools, nodeTools, promTools)

// The line each group prints as its build starts.
var announcements = map[string]string{
	"k8s":        "building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl v",
	"etcd":       "building etcd v",
	"k8s-1.35":   "building kube-apiserver and kubectl v1.35.",
	"dev":        "building kwok, kwokctl and controller-gen",
	"lint":       "building golangci-lint v",
	"kubelet":    "building kubelet v",
	"containerd": "building containerd v",
	"debs":       "fetching the Debian packages libseccomp-dev and busybox-static",
	"runc":       "building runc v",
	"cni":        "building the CNI plugins bridge, host-local and loopback v",
	"prometheus": "building prometheus and promtool v",
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("no Makefile at the repository root %s: %v", root, err)
	}
	return root
}

// makePlan runs make with the given arguments on the working tree, with
// LOCALBIN set to localBin, and returns what make printed.
func makePlan(t *testing.T, localBin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("GNU make is required by the README's commands: %v", err)
	}
	cmd := exec.Command("make", append([]string{"-C", repoRoot(t), "--no-print-directory", "LOCALBIN=" + localBin}, args...)...)
	// The plan must not depend on the caller's make flags (make test -j2).
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func requireAll(t *testing.T, target, plan string, wants ...[]string) {
	t.Helper()
	var missing []string
	for _, group := range wants {
		for _, w := range group {
			if !strings.Contains(plan, w) {
				missing = append(missing, w)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("on a fresh clone, `make %s` does not build %s; its plan:\n%s", target, strings.Join(missing, ", "), plan)
	}
}

func requireNone(t *testing.T, target, plan string, unwanted []string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(plan, w) {
			t.Errorf("`make %s` builds %s, which it does not need", target, w)
		}
	}
}

func requireAnnounced(t *testing.T, target, plan string, groups ...string) {
	t.Helper()
	for _, g := range groups {
		line := announcements[g]
		found := false
		for l := range strings.SplitSeq(plan, "\n") {
			if strings.Contains(l, line) && strings.Contains(l, "(about ") && strings.Contains(l, " on two cores") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("`make %s` does not announce the %s build with its expected duration (%q ... (about ... on two cores))", target, g, line)
		}
	}
}

func TestFreshClone_DevBuildsTheClusterTools(t *testing.T) {
	plan := makePlan(t, t.TempDir(), "-n", "dev")
	requireAll(t, "dev", plan, k8sTools, etcdTools, devTools)
	requireNone(t, "dev", plan, slices.Concat(oldestK8sTools, lintTools, nodeTools, promTools))
	requireAnnounced(t, "dev", plan, "k8s", "etcd", "dev")
	if !strings.Contains(plan, "test/devenv up") {
		t.Errorf("`make dev` does not start the dev cluster; its plan:\n%s", plan)
	}
}

// make dev-node builds what the real node needs, and only that (make dev
// built the cluster's tools): the root check comes first, so that a user
// without root hears it before ten minutes of builds.
func TestFreshClone_DevNodeBuildsTheNodeTools(t *testing.T) {
	plan := makePlan(t, t.TempDir(), "-n", "dev-node")
	requireAll(t, "dev-node", plan, nodeTools)
	requireNone(t, "dev-node", plan, slices.Concat(k8sTools, etcdTools, oldestK8sTools, devTools, lintTools))
	requireAnnounced(t, "dev-node", plan, "kubelet", "containerd", "debs", "runc", "cni")
	root, node := strings.Index(plan, "needs root"), strings.Index(plan, "test/devenv node-up")
	if root < 0 || node < 0 || root > strings.Index(plan, "building kubelet") {
		t.Errorf("`make dev-node` does not check for root first, then join the node; its plan:\n%s", plan)
	}
}

func TestFreshClone_ToolsBuildsEveryTool(t *testing.T) {
	plan := makePlan(t, t.TempDir(), "-n", "tools")
	requireAll(t, "tools", plan, everyTool)
	requireAnnounced(t, "tools", plan, "k8s", "etcd", "k8s-1.35", "dev", "lint", "kubelet", "containerd", "debs", "runc", "cni", "prometheus")
}

// make test-integration builds both API servers (and only the control
// plane's tools), then runs the envtest suites on the newest Kubernetes and
// then on the oldest supported minor, each run naming its version.
func TestFreshClone_TestIntegrationRunsOnBothVersions(t *testing.T) {
	bin := t.TempDir()
	plan := makePlan(t, bin, "-n", "test-integration")
	requireAll(t, "test-integration", plan, k8sTools, etcdTools, oldestK8sTools)
	requireNone(t, "test-integration", plan, slices.Concat(devTools, lintTools, nodeTools, promTools))
	requireAnnounced(t, "test-integration", plan, "k8s", "etcd", "k8s-1.35")
	newest := strings.Index(plan, "SIDECARSET_K8S_BIN_DIR="+filepath.Join(bin, "k8s")+" go test ./test/integration/...")
	oldest := strings.Index(plan, "SIDECARSET_K8S_BIN_DIR="+filepath.Join(bin, "k8s-1.35")+" go test ./test/integration/...")
	if newest < 0 || oldest < newest {
		t.Errorf("`make test-integration` does not run the suites on bin/k8s, then on bin/k8s-1.35; its plan:\n%s", plan)
	}
	if n := strings.Count(plan, "envtest suites on Kubernetes v"); n != 2 || !strings.Contains(plan, "envtest suites on Kubernetes v1.35.") {
		t.Errorf("`make test-integration` does not announce each run with its Kubernetes version (%d announcements); its plan:\n%s", n, plan)
	}
}

func TestFreshClone_TestBuildsEveryTool(t *testing.T) {
	plan := makePlan(t, t.TempDir(), "-n", "test")
	requireAll(t, "test", plan, everyTool)
}

// After one build, the tools are reused: no later command rebuilds them. The
// "build" here runs GO=true (and true for the Debian commands), which
// accepts any arguments and writes nothing but the stamps the Makefile
// leaves behind.
func TestFreshClone_ToolsAreBuiltOnce(t *testing.T) {
	bin := t.TempDir()
	makePlan(t, bin, "GO=true", "APT_GET=true", "DPKG_DEB=true", "tools")
	for _, target := range []string{"tools", "dev", "dev-node", "test"} {
		plan := makePlan(t, bin, "-n", target)
		requireNone(t, target+" (after make tools)", plan, everyTool)
	}
}

// The release images need no tool of bin/ and no container engine: on a
// fresh clone, `make image bundle-image catalog` plans no tool build and
// runs hack/image once per image, in order.
func TestFreshClone_ReleaseImagesNeedNoTools(t *testing.T) {
	plan := makePlan(t, t.TempDir(), "-n", "image", "bundle-image", "catalog")
	requireNone(t, "image bundle-image catalog", plan, everyTool)
	var steps []string
	for line := range strings.SplitSeq(plan, "\n") {
		if strings.Contains(line, "docker") || strings.Contains(line, "podman") {
			t.Errorf("the plan calls a container engine: %s", line)
		}
		if _, rest, ok := strings.Cut(line, "go run ./hack/image "); ok {
			steps = append(steps, strings.Fields(rest)[0])
		}
	}
	if want := "manager bundle catalog"; strings.Join(steps, " ") != want {
		t.Errorf("`make image bundle-image catalog` runs hack/image %q, want %q; its plan:\n%s", steps, want, plan)
	}
}
