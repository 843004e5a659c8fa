package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

// ServeConversion serves the SidecarSet conversion webhook (/convert, the
// operator's handler) on envtest's local webhook server, for an API server
// with no operator running, until the returned function is called (it
// returns the server's error). The CRD's conversion must point at
// ConversionClientConfig(wio).
func ServeConversion(wio envtest.WebhookInstallOptions) (stop func() error, err error) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	srv := webhook.NewServer(webhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir})
	srv.Register(names.ConversionPath, serving.NewConverter(scheme))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			_ = conn.Close()
			return stop, nil
		}
	}
	return nil, errors.Join(errors.New("the conversion webhook server did not start within 30s"), stop())
}

// ConversionClientConfig is where envtest's local webhook server serves the
// conversion webhook.
func ConversionClientConfig(wio envtest.WebhookInstallOptions) *apiextensionsv1.WebhookClientConfig {
	url := "https://" + net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)) + names.ConversionPath
	return &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: wio.LocalServingCAData}
}
