// Package framework starts the envtest control plane (a real kube-apiserver
// and etcd built into bin/k8s) for the integration suites, with the CRDs of
// config/crd and, on request, the webhook configurations of config/webhook.
package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/apiserver"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
)

// Scheme is the manager's (app.NewScheme): the built-in types, the
// SidecarSet API and CustomResourceDefinitions.
var Scheme = app.NewScheme()

// Env is a running envtest control plane.
type Env struct {
	// TestEnv is the envtest environment.
	TestEnv *envtest.Environment
	// Config is an admin client configuration.
	Config *rest.Config
	// Client is an admin client.
	Client client.Client
	// KubeconfigPath is an admin kubeconfig for kubectl.
	KubeconfigPath string
	// Kubectl is the kubectl of the API server's release.
	Kubectl string
	// ServerVersion is the API server's version (RequireMinor).
	ServerVersion *version.Version
	// ManagerCache is the cache of the operator that StartManager runs
	// (nil before): what its webhooks and controller see.
	ManagerCache client.Reader
	// SidecarSetWatches follows the watches of ManagerCache's SidecarSet
	// informer: a spec that writes the CRD waits on it, so that the next
	// spec does not meet an operator whose watch the API server just ended.
	SidecarSetWatches *crdwatch.SidecarSetWatches

	// stopManager stops the operator StartManager runs and waits for it.
	stopManager func() error
	// stopConversion stops the conversion-only server of
	// Options.ServeConversion.
	stopConversion func() error
}

// Options select what is installed.
type Options struct {
	// Webhooks installs the webhook configurations of config/webhook, served
	// by envtest's local webhook server (TestEnv.WebhookInstallOptions).
	Webhooks bool
	// ServeConversion serves the CRD's conversion webhook (v1alpha1 to and
	// from the stored v1beta1) on envtest's local webhook server without the
	// operator, for the suites that do not start it. (The CRD always points
	// its conversion there; the operator serves it when it runs.)
	ServeConversion bool
}

// Start starts the control plane. kube-apiserver and kubectl come from
// $SIDECARSET_K8S_BIN_DIR, etcd from KUBEBUILDER_ASSETS (the Makefile
// exports bin/k8s); both default to bin/k8s. It prints the API server's
// version.
func Start(o Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bins := binariesFor(root, os.Getenv)
	te := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		ControlPlane: envtest.ControlPlane{
			APIServer:   &envtest.APIServer{Path: bins.APIServer},
			Etcd:        &envtest.Etcd{Path: bins.Etcd},
			KubectlPath: bins.Kubectl,
		},
		// The scheme knows the SidecarSet hub and spoke: envtest points the
		// CRD's conversion webhook at its local webhook server.
		Scheme: Scheme,
	}
	if o.Webhooks {
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}}
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting envtest (run make envtest?): %w", err), te.Stop())
	}
	env := &Env{TestEnv: te, Config: cfg, Kubectl: bins.Kubectl}
	if env.Client, err = client.New(cfg, client.Options{Scheme: Scheme}); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	if env.ServerVersion, err = serverVersion(cfg); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	_, _ = fmt.Fprintf(ginkgo.GinkgoWriter, "envtest: kube-apiserver v%s (%s)\n", env.ServerVersion, bins.APIServer)
	if env.KubeconfigPath, err = writeAdminKubeconfig(te); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	if o.ServeConversion {
		if env.stopConversion, err = apiserver.ServeConversion(te.WebhookInstallOptions); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}
	return env, nil
}

// Stop stops the control plane and removes the kubeconfig.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	var err error
	if e.stopConversion != nil {
		err = e.stopConversion()
	}
	return errors.Join(err, e.TestEnv.Stop(), os.Remove(e.KubeconfigPath))
}

func writeAdminKubeconfig(te *envtest.Environment) (string, error) {
	user, err := te.AddUser(envtest.User{Name: "envtest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "envtest-kubeconfig-*")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	_, err = f.Write(data)
	return f.Name(), err
}

// RepoRoot is the repository root: the nearest parent directory of the
// working directory with the operator's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isOperatorModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

func isOperatorModule(gomod []byte) bool {
	const line = "module github.com/sidecarset-operator/sidecarset-operator\n"
	return len(gomod) >= len(line) && string(gomod[:len(line)]) == line
}
