package certs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// certificateNotAfter is the expiry of the first certificate of a PEM file
// (the serving certificate; its chain follows it).
func certificateNotAfter(data []byte) (time.Time, error) {
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return time.Time{}, err
	}
	return certs[0].NotAfter, nil
}

// certExpiry exports the expiry of the certificate the webhook server
// serves (tls.crt of its directory, whoever writes it) as
// sidecarset_webhook_certificate_expiry_timestamp_seconds, read again at
// every interval: rotations show as they happen.
type certExpiry struct {
	dir      string
	interval time.Duration
}

// NeedLeaderElection is false: every replica serves webhooks.
func (c *certExpiry) NeedLeaderElection() bool { return false }

// Start reads the certificate until the context ends. A certificate not
// there yet is waited for; one that cannot be read is logged once per
// change of error.
func (c *certExpiry) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("certificates")
	var last string
	wait.UntilWithContext(ctx, func(context.Context) {
		data, err := os.ReadFile(filepath.Join(c.dir, corev1.TLSCertKey))
		if err == nil {
			var notAfter time.Time
			if notAfter, err = certificateNotAfter(data); err == nil {
				metrics.WebhookCertExpiry.Set(float64(notAfter.Unix()))
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) && err.Error() != last {
			log.Error(fmt.Errorf("reading the serving certificate's expiry: %w", err), "Webhook certificate", "dir", c.dir)
			last = err.Error()
		}
	}, c.interval)
	return nil
}
