package framework

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/certs"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// OperatorNamespace is where the operator keeps its ControllerRevisions and
// reads the whitelist, in the integration suites.
const OperatorNamespace = "kruise-system"

// managerStopTimeout bounds how long StopManager waits for the operator to
// stop (its webhook server to release its port).
const managerStopTimeout = 30 * time.Second

// StopManager stops the operator that StartManager runs and waits until it
// has stopped, so that another can start on the same port: a restart of
// the manager process, as far as the cluster can tell.
func (e *Env) StopManager() error {
	if e.stopManager == nil {
		return errors.New("no manager started")
	}
	stop := e.stopManager
	e.stopManager = nil
	return stop()
}

// ManagerOptions change the operator's options for a suite.
type ManagerOptions struct {
	// Mutate adjusts the operator options (gates, workers).
	Mutate func(*app.Options)
	// User, when set, is who the manager's requests are made as (the
	// admin impersonating it, with system:authenticated); else the admin.
	User string
	// ProbeAddress, when set, is where the manager serves its health
	// probes, with the ready checks main adds (/readyz); else none.
	ProbeAddress string
	// Intercept, when set, stands between the manager's client and the
	// API server (a suite counts the controller's writes); else nothing.
	Intercept *interceptor.Funcs
}

// StartManager runs the operator, wired exactly as main wires it, against
// the envtest control plane; the API server reaches its webhooks over TLS
// with envtest's certificate. It returns when the webhooks serve; cancel the
// context, or call StopManager, to stop it.
func (e *Env) StartManager(ctx context.Context, o ManagerOptions) error {
	wio := &e.TestEnv.WebhookInstallOptions
	watches := crdwatch.NewSidecarSetWatches()
	cfg := e.Config
	if o.User != "" {
		cfg = e.userConfig(o.User)
	}
	opts := app.Options{
		Namespace: OperatorNamespace,
		Certs:     certs.CertOptions{Source: names.CertSourceExternal, Dir: wio.LocalServingCertDir},
		Workers:   2,
		// As main does: the pod webhook is narrowed to the SidecarSets'
		// selectors, so every suite also proves the narrowing loses no pod.
		ScopedWebhookConfig: names.MutatingConfigName,
		SidecarSetWatches:   watches,
	}
	if o.Mutate != nil {
		o.Mutate(&opts)
	}
	mgr, err := ctrl.NewManager(app.ClientConfig(cfg), ctrl.Options{
		Scheme:  Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
		Cache:                  app.CacheOptions(OperatorNamespace, watches, opts.ScopedWebhookConfig),
		HealthProbeBindAddress: cmp.Or(o.ProbeAddress, "0"),
		Controller:             config.Controller{SkipNameValidation: new(true), RecoverPanic: new(false)},
		NewClient:              newClient(o.Intercept),
	})
	if err != nil {
		return err
	}
	e.ManagerCache, e.SidecarSetWatches = mgr.GetCache(), watches
	ctx, cancel := context.WithCancel(ctx)
	server, err := app.All(ctx, mgr, opts)
	if err != nil {
		cancel()
		return err
	}
	if o.ProbeAddress != "" {
		if err := mgr.AddReadyzCheck("webhooks", server.ReadyCheck()); err != nil {
			cancel()
			return err
		}
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	e.stopManager = func() error {
		cancel()
		select {
		case err := <-errs:
			return err
		case <-time.After(managerStopTimeout):
			return fmt.Errorf("the manager did not stop within %v", managerStopTimeout)
		}
	}

	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errs:
			return fmt.Errorf("the manager stopped: %w", err)
		default:
		}
		if server.ReadyCheck()(nil) == nil {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
			if err == nil {
				return conn.Close()
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the webhook server did not start within 60s")
}

// newClient makes the manager's client as the manager does by default,
// through funcs when they are set.
func newClient(funcs *interceptor.Funcs) client.NewClientFunc {
	if funcs == nil {
		return client.New
	}
	return func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, *funcs), nil
	}
}
