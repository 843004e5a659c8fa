// Command manager runs the SidecarSet operator: the pod injection webhook,
// the SidecarSet admission webhooks and the in-place upgrade controller.
package main

import (
	"crypto/tls"
	"flag"
	"os"
	"strings"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appsv1alpha1.AddToScheme(scheme))
}

// options are the manager's command-line settings.
type options struct {
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	leaderElect   bool
	enableHTTP2   bool
	namespace     string
}

func main() {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"The address the metrics endpoint binds to (:8443 serves HTTPS, :8080 HTTP with --metrics-secure=false, 0 disables it).")
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS, authenticated and authorized by the API server.")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "The address the health probes bind to.")
	flag.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica runs the controllers; webhooks serve on every replica.")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Enable HTTP/2 for the metrics and webhook servers (off by default against HTTP/2 stream attacks).")
	flag.StringVar(&o.namespace, "namespace", envOr("POD_NAMESPACE", "kruise-system"),
		"The operator's namespace: it holds the ControllerRevisions and the kruise-configuration ConfigMap.")
	gates := newFeatureGate()
	flag.Func("feature-gates", "Comma-separated key=value pairs of feature gates: "+strings.Join(gates.KnownFeatures(), "; "), gates.Set)
	zapOpts := zap.Options{Development: false, TimeEncoder: zapcore.ISO8601TimeEncoder}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "sidecarset-operator.apps.kruise.io",
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "Unable to create the manager")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up the ready check")
		os.Exit(1)
	}

	setupLog.Info("Starting the manager", "namespace", o.namespace)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "The manager stopped with an error")
		os.Exit(1)
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
