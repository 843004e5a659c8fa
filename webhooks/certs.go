package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// cert-controller's informers list and watch the certificate Secret (only
// it: see secretByName) and webhook configurations cluster-wide; it updates
// only ours.
// +kubebuilder:rbac:groups="",namespace=kruise-system,resources=secrets,resourceNames=sidecarset-operator-webhook-cert,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,resourceNames=sidecarset-operator-mutating;sidecarset-operator-validating,verbs=update;patch

// Certificate sources.
const (
	// CertSourceSelf generates, rotates and injects the certificates
	// (open-policy-agent/cert-controller): a CA and a serving certificate in a
	// Secret, the CA bundle patched into the webhook configurations.
	CertSourceSelf = "self"
	// CertSourceExternal serves the certificate someone else mounts in the
	// certificate directory (OLM, cert-manager), hot-reloaded on change.
	CertSourceExternal = "external"
)

// CertOptions say where the webhook server's certificate comes from.
type CertOptions struct {
	// Source is CertSourceSelf or CertSourceExternal.
	Source string
	// Dir holds tls.crt and tls.key.
	Dir string
	// Namespace and SecretName locate the self-managed Secret.
	Namespace, SecretName string
	// DNSName is the name the certificate is valid for: the webhook Service
	// (<service>.<namespace>.svc) in a cluster, localhost for a host process.
	DNSName string
	// MutatingConfig and ValidatingConfig name the webhook configurations
	// whose CA bundle is kept current.
	MutatingConfig, ValidatingConfig string
}

// KeepsConversion reports whether the manager keeps the SidecarSet CRD's
// conversion webhook (ConversionConfig): only when it issues the
// certificate itself, for named webhook configurations. With an external
// certificate its issuer writes the CRD's CA bundle too (cert-manager's CA
// injector, OLM), and the manager neither reads nor writes the CRD, so it
// needs no right on it.
func (o CertOptions) KeepsConversion() bool {
	return o.Source == CertSourceSelf && o.MutatingConfig != ""
}

// SetupCertificates arranges for a serving certificate in o.Dir. The
// returned channel closes once the certificate is there and, for
// self-managed certificates, the webhook configurations trust it: only then
// may the webhook server start.
func SetupCertificates(mgr manager.Manager, o CertOptions) (<-chan struct{}, error) {
	switch o.Source {
	case CertSourceExternal:
		ready := make(chan struct{})
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return waitForFiles(ctx, o.Dir, ready)
		})); err != nil {
			return nil, err
		}
		return ready, nil
	case CertSourceSelf:
		ready := make(chan struct{})
		err := rotator.AddRotator(oneSecret(mgr, o.Namespace, o.SecretName), &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
			CertDir:        o.Dir,
			CAName:         "sidecarset-operator-ca",
			CAOrganization: "sidecarset-operator",
			DNSName:        o.DNSName,
			IsReady:        ready,
			Webhooks: []rotator.WebhookInfo{
				{Name: o.MutatingConfig, Type: rotator.Mutating},
				{Name: o.ValidatingConfig, Type: rotator.Validating},
			},
			// Every replica serves webhooks, so every replica keeps its
			// mounted certificate current; the Secret is shared.
			RequireLeaderElection: false,
			FieldOwner:            "sidecarset-operator",
		})
		if err != nil {
			return nil, fmt.Errorf("setting up the certificate rotator: %w", err)
		}
		// The manager writes the certificate into Dir itself (an emptyDir in a
		// cluster): it does not wait for a kubelet to refresh a Secret volume,
		// and it works the same for a manager running on a host (make dev,
		// the e2e suites), where no kubelet mounts anything.
		if err := mgr.Add(&secretToDir{reader: mgr.GetAPIReader(), key: types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}, dir: o.Dir}); err != nil {
			return nil, err
		}
		return ready, nil
	default:
		return nil, fmt.Errorf("unknown certificate source %q: want %q or %q", o.Source, CertSourceSelf, CertSourceExternal)
	}
}

// waitForFiles closes ready once tls.crt and tls.key exist in dir.
func waitForFiles(ctx context.Context, dir string, ready chan<- struct{}) error {
	log := ctrl.LoggerFrom(ctx).WithName("certificates")
	logged := false
	for {
		if fileExists(filepath.Join(dir, corev1.TLSCertKey)) && fileExists(filepath.Join(dir, corev1.TLSPrivateKeyKey)) {
			close(ready)
			return nil
		}
		if !logged {
			log.Info("Waiting for the webhook certificate to be mounted", "dir", dir)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// secretToDir copies a TLS Secret's certificate and key into a directory,
// as a kubelet's Secret volume would, and keeps them current.
type secretToDir struct {
	reader client.Reader
	key    types.NamespacedName
	dir    string
}

// NeedLeaderElection is false: every replica serves webhooks.
func (s *secretToDir) NeedLeaderElection() bool { return false }

// Start polls the Secret (every second until it exists, then every 30s) and
// rewrites the files when they differ.
func (s *secretToDir) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("certificates")
	interval := time.Second
	for {
		secret := &corev1.Secret{}
		err := s.reader.Get(ctx, s.key, secret)
		switch {
		case err == nil && len(secret.Data[corev1.TLSCertKey]) > 0 && len(secret.Data[corev1.TLSPrivateKeyKey]) > 0:
			if err := s.write(secret); err != nil {
				return err
			}
			interval = 30 * time.Second
		case err != nil && !apierrors.IsNotFound(err):
			log.Error(err, "Reading the webhook certificate Secret", "secret", s.key)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (s *secretToDir) write(secret *corev1.Secret) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	// The key first: the certificate watcher reloads when the certificate
	// changes and must then find the matching key.
	for _, name := range []string{corev1.TLSPrivateKeyKey, corev1.TLSCertKey} {
		path := filepath.Join(s.dir, name)
		current, err := os.ReadFile(path) //nolint:gosec // our own certificate directory
		if err == nil && bytes.Equal(current, secret.Data[name]) {
			continue
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, secret.Data[name], 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// oneSecret returns the manager as cert-controller sees it: its informers
// list and watch every Secret of the namespace, which would need read
// access to all of them; through this manager's configuration they ask for
// the certificate Secret only (a metadata.name field selector), which a
// grant limited by resourceNames allows.
func oneSecret(mgr manager.Manager, namespace, name string) manager.Manager {
	cfg := rest.CopyConfig(mgr.GetConfig())
	path := "/api/v1/namespaces/" + namespace + "/secrets"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return secretByName{next: rt, path: path, selector: "metadata.name=" + name}
	})
	return configManager{Manager: mgr, cfg: cfg}
}

// configManager is a manager with another REST configuration.
type configManager struct {
	manager.Manager
	cfg *rest.Config
}

func (m configManager) GetConfig() *rest.Config { return m.cfg }

// secretByName adds a field selector to the list and watch requests of the
// Secrets of one namespace.
type secretByName struct {
	next           http.RoundTripper
	path, selector string
}

func (s secretByName) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != s.path {
		return s.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	q := req.URL.Query()
	if existing := q.Get("fieldSelector"); existing != "" && existing != s.selector {
		q.Set("fieldSelector", existing+","+s.selector)
	} else {
		q.Set("fieldSelector", s.selector)
	}
	req.URL.RawQuery = q.Encode()
	return s.next.RoundTrip(req)
}
