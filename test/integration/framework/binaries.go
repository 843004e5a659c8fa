package framework

import (
	"fmt"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// K8sBinDirEnv names the directory of the kube-apiserver and kubectl the
// suites run on: make test-integration runs them once on bin/k8s (the newest
// Kubernetes release) and once on bin/k8s-1.35 (the oldest supported minor).
// Unset, it is bin/k8s. etcd always comes from bin/k8s (KUBEBUILDER_ASSETS).
const K8sBinDirEnv = "SIDECARSET_K8S_BIN_DIR"

// Binaries are the paths of the control plane's commands.
type Binaries struct {
	APIServer, Kubectl, Etcd string
}

// binariesFor resolves the commands from the repository root and the
// environment (getenv).
func binariesFor(root string, getenv func(string) string) Binaries {
	defaultDir := filepath.Join(root, "bin", "k8s")
	dir := getenv(K8sBinDirEnv)
	if dir == "" {
		dir = defaultDir
	}
	etcdDir := getenv("KUBEBUILDER_ASSETS")
	if etcdDir == "" {
		etcdDir = defaultDir
	}
	return Binaries{
		APIServer: filepath.Join(dir, "kube-apiserver"),
		Kubectl:   filepath.Join(dir, "kubectl"),
		Etcd:      filepath.Join(etcdDir, "etcd"),
	}
}

// serverVersion asks the API server for its version.
func serverVersion(cfg *rest.Config) (*version.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("asking the API server for its version: %w", err)
	}
	return version.ParseGeneric(info.GitVersion)
}

// RequireMinor skips the current spec when the API server is older than
// Kubernetes 1.minor, printing why: reason names the API server behaviour
// the spec asserts and the release that brought it.
func (e *Env) RequireMinor(minor uint, reason string) {
	if msg, skip := tooOld(e.ServerVersion, minor, reason); skip {
		ginkgo.Skip(msg)
	}
}

// tooOld says whether a server of version v is older than Kubernetes
// 1.minor, and the skip message then.
func tooOld(v *version.Version, minor uint, reason string) (string, bool) {
	if v.Major() > 1 || v.Minor() >= minor {
		return "", false
	}
	return fmt.Sprintf("needs Kubernetes 1.%d, the API server is v%s: %s", minor, v, reason), true
}
