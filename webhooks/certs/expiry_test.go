package certs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
)

func TestCertificateNotAfter(t *testing.T) {
	t.Parallel()
	ca, err := pki.NewCA("expiry-test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := certificateNotAfter(ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(ca.Cert.NotAfter) {
		t.Errorf("not after %s, want %s", got, ca.Cert.NotAfter)
	}
	if _, err := certificateNotAfter([]byte("not a certificate")); err == nil {
		t.Error("a file without a PEM certificate has an expiry")
	}
}

// TestCertExpiry_SetsTheGauge: the serving certificate's expiry is exported
// once the certificate is in the directory.
func TestCertExpiry_SetsTheGauge(t *testing.T) {
	ca, err := pki.NewCA("expiry-gauge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- (&certExpiry{dir: dir, interval: 10 * time.Millisecond}).Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(metrics.WebhookCertExpiry) != float64(ca.Cert.NotAfter.Unix()) {
		if time.Now().After(deadline) {
			t.Fatalf("sidecarset_webhook_certificate_expiry_timestamp_seconds = %v, want %d",
				testutil.ToFloat64(metrics.WebhookCertExpiry), ca.Cert.NotAfter.Unix())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
