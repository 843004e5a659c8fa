// Package certs provides the webhook server's serving certificate: issued
// and rotated by the manager (cert-controller, its CA bundle injected into
// the webhook configurations), or mounted by someone else; and the
// certificate's expiry as a metric.
package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// cert-controller's informers list and watch the certificate Secret and the
// two webhook configurations, and only them (see ownObjects: a field
// selector on each name); it updates only those. The pod webhooks' scope
// reads and updates the mutating one, through a cache limited to its name
// too (setup.CacheOptions). Under OLM, which generates the configurations'
// names, the bundle replaces these rules (config/manifests). The Secret's
// grant is no marker of the manager's role: it ships with the self-managed
// certificate (config/certs/secret_rbac.yaml), since with an external
// certificate the manager reads no Secret.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,resourceNames=sidecarset-operator-mutating;sidecarset-operator-validating,verbs=get;list;watch;update;patch

// CertOptions say where the webhook server's certificate comes from.
type CertOptions struct {
	// Source is names.CertSourceSelf or names.CertSourceExternal.
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
// conversion webhook (webhooks/crdconversion): only when it issues the
// certificate itself, for named webhook configurations. With an external
// certificate its issuer writes the CRD's CA bundle too (cert-manager's CA
// injector, OLM), and the manager neither reads nor writes the CRD, so it
// needs no right on it.
func (o CertOptions) KeepsConversion() bool {
	return o.Source == names.CertSourceSelf && o.MutatingConfig != ""
}

// SetupCertificates arranges for a serving certificate in o.Dir. The
// returned channel closes once the certificate is there and, for
// self-managed certificates, the webhook configurations trust it: only then
// may the webhook server start.
func SetupCertificates(mgr manager.Manager, o CertOptions) (<-chan struct{}, error) {
	if err := mgr.Add(&certExpiry{dir: o.Dir, interval: 30 * time.Second}); err != nil {
		return nil, err
	}
	switch o.Source {
	case names.CertSourceExternal:
		ready := make(chan struct{})
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return waitForFiles(ctx, o.Dir, ready)
		})); err != nil {
			return nil, err
		}
		return ready, nil
	case names.CertSourceSelf:
		injected := make(chan struct{})
		err := rotator.AddRotator(ownObjects(mgr, o), &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
			CertDir:        o.Dir,
			CAName:         "sidecarset-operator-ca",
			CAOrganization: "sidecarset-operator",
			DNSName:        o.DNSName,
			IsReady:        injected,
			Webhooks: []rotator.WebhookInfo{
				{Name: o.MutatingConfig, Type: rotator.Mutating},
				{Name: o.ValidatingConfig, Type: rotator.Validating},
			},
			// Every replica serves webhooks, so every replica keeps its
			// mounted certificate current; the Secret is shared.
			RequireLeaderElection: false,
			FieldOwner:            names.FieldOwner,
		})
		if err != nil {
			return nil, fmt.Errorf("setting up the certificate rotator: %w", err)
		}
		// The manager writes the certificate into Dir itself (an emptyDir in a
		// cluster): it does not wait for a kubelet to refresh a Secret volume,
		// and it works the same for a manager running on a host (make dev,
		// the e2e suites), where no kubelet mounts anything.
		copier := &secretToDir{reader: mgr.GetAPIReader(), key: types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}, dir: o.Dir}
		if err := mgr.Add(copier); err != nil {
			return nil, err
		}
		// The rotator is ready once the configurations trust its CA and a
		// certificate file exists, which may be an earlier one (another CA,
		// left in the directory): ready only once the directory holds the
		// Secret's certificate as it is after the CA was injected.
		ready := make(chan struct{})
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return copier.copyAfter(ctx, injected, ready)
		})); err != nil {
			return nil, err
		}
		return ready, nil
	default:
		return nil, fmt.Errorf("unknown certificate source %q: want %q or %q", o.Source, names.CertSourceSelf, names.CertSourceExternal)
	}
}

// waitForFiles closes ready once tls.crt and tls.key exist in dir, looking
// every second; it returns when they do or when the context ends.
func waitForFiles(ctx context.Context, dir string, ready chan<- struct{}) error {
	log := ctrl.LoggerFrom(ctx).WithName("certificates")
	logged := false
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		if fileExists(filepath.Join(dir, corev1.TLSCertKey)) && fileExists(filepath.Join(dir, corev1.TLSPrivateKeyKey)) {
			return true, nil
		}
		if !logged {
			log.Info("Waiting for the webhook certificate to be mounted", "dir", dir)
			logged = true
		}
		return false, nil
	})
	if err == nil {
		close(ready)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// secretToDir copies a TLS Secret's certificate and key into a directory,
// as a kubelet's Secret volume would, and keeps them current.
type secretToDir struct {
	// mu serializes the writes of the files (Start's and copyAfter's).
	mu     sync.Mutex
	reader client.Reader
	key    types.NamespacedName
	dir    string
}

// NeedLeaderElection is false: every replica serves webhooks.
func (s *secretToDir) NeedLeaderElection() bool { return false }

// Start polls the Secret every second until it holds a certificate and a
// key, then every 30s, and rewrites the files when they differ. A failed
// write stops it with its error; a failed read is logged and tried again.
func (s *secretToDir) Start(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, time.Second, true, s.copy)
	if err == nil {
		err = wait.PollUntilContextCancel(ctx, 30*time.Second, false, func(ctx context.Context) (bool, error) {
			_, err := s.copy(ctx)
			return false, err
		})
	}
	if wait.Interrupted(err) {
		return nil
	}
	return err
}

// copy writes the Secret's certificate and key into the directory;
// copied says whether the Secret had both.
func (s *secretToDir) copy(ctx context.Context) (copied bool, err error) {
	secret := &corev1.Secret{}
	err = s.reader.Get(ctx, s.key, secret)
	switch {
	case err == nil && len(secret.Data[corev1.TLSCertKey]) > 0 && len(secret.Data[corev1.TLSPrivateKeyKey]) > 0:
		return true, s.write(secret)
	case err != nil && !apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).WithName("certificates").Error(err, "Reading the webhook certificate Secret", "secret", s.key)
	}
	return false, nil
}

// copyAfter waits for after to close, then copies the Secret's certificate
// into the directory (waiting for the Secret to hold one) and closes ready.
func (s *secretToDir) copyAfter(ctx context.Context, after <-chan struct{}, ready chan<- struct{}) error {
	select {
	case <-after:
	case <-ctx.Done():
		return nil
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, s.copy)
	if err != nil && ctx.Err() == nil {
		return err
	}
	if err == nil {
		close(ready)
	}
	return nil // or stopped: not a failure
}

// everyReplica is a runnable that runs on every replica, leader or not
// (a plain manager.RunnableFunc runs on the leader only).
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false: every replica serves webhooks.
func (everyReplica) NeedLeaderElection() bool { return false }

func (s *secretToDir) write(secret *corev1.Secret) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
