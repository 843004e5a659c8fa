// Command manager runs the SidecarSet operator: the pod injection webhook,
// the SidecarSet admission webhooks and the in-place upgrade controller.
package main

import (
	"crypto/tls"
	"flag"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/certs"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

var scheme = app.NewScheme()

// options are the manager's command-line settings.
type options struct {
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	leaderElect   bool
	enableHTTP2   bool
	// scopePodWebhook narrows the pod webhook to the SidecarSets' selectors.
	scopePodWebhook bool
	// installAuthoringPolicy installs the authoring policy at start (OLM).
	installAuthoringPolicy bool
	namespace              string

	webhookHost string
	webhookPort int
	certs       certs.CertOptions
	clientAuth  serving.Options

	pprofAddr     string
	workers       int
	podWriters    int
	apiQPS        float64
	apiBurst      int
	rateBaseDelay time.Duration
	rateMaxDelay  time.Duration
	rateQPS       int
	rateBucket    int
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
		"The operator's namespace: it holds the ControllerRevisions, the kruise-configuration ConfigMap and the webhook certificate.")
	flag.StringVar(&o.webhookHost, "webhook-host", "", "The address the webhook server binds to (empty: all).")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "The port the webhook server listens on.")
	flag.StringVar(&o.certs.Source, "cert-source", names.CertSourceSelf,
		"Where the webhook certificate comes from: self (generated, rotated and injected into the webhook configurations by the manager) "+
			"or external (mounted in --webhook-cert-dir by OLM or cert-manager, hot-reloaded).")
	flag.StringVar(&o.certs.Dir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "The directory of the webhook certificate (tls.crt, tls.key).")
	flag.StringVar(&o.certs.SecretName, "webhook-cert-secret", "sidecarset-operator-webhook-cert", "The Secret of the self-managed webhook certificate.")
	flag.StringVar(&o.certs.DNSName, "cert-dns-name", "",
		"The name the self-managed certificate is issued for (default: the webhook Service, <--webhook-service>.<namespace>.svc; localhost for a manager running on the host).")
	flag.StringVar(&o.certs.MutatingConfig, "mutating-webhook-configuration", names.MutatingConfigName,
		"The MutatingWebhookConfiguration holding the pod webhooks, whose CA bundle the self-managed certificate keeps current. "+
			"Empty: the configurations OLM created from the CSV's webhook definitions (found by their olm.webhook-description-generate-name label).")
	flag.StringVar(&o.certs.ValidatingConfig, "validating-webhook-configuration", names.ValidatingConfigName,
		"The ValidatingWebhookConfiguration whose CA bundle the self-managed certificate keeps current.")
	flag.BoolVar(&o.scopePodWebhook, "scope-pod-webhook", true,
		"Keep the pod webhooks' matchConditions limited to the pods the SidecarSets select, so that the API server calls no webhook for the others. "+
			"Off leaves them as installed (the shipped manifests install a condition that sends no pod: leave this on).")
	flag.BoolVar(&o.installAuthoringPolicy, "install-authoring-policy", false,
		"Install the SidecarSet authoring policy (a ValidatingAdmissionPolicy and its binding) at start, without overwriting an administrator's changes. "+
			"For OLM, whose bundles cannot carry admission policies; config/default installs the policy itself.")
	flag.StringVar(&o.clientAuth.ClientCAFile, "webhook-client-ca-file", os.Getenv("WEBHOOK_CLIENT_CA_FILE"),
		"The CA bundle of the client certificate the API server presents to the admission webhooks (--admission-control-config-file); "+
			"set, every admission path refuses a request without a certificate it signed. Reloaded when the file changes. "+
			"Empty: admission requests are not authenticated. The conversion webhook stays open (the API server presents no certificate to it). "+
			"Default: $WEBHOOK_CLIENT_CA_FILE (for OLM, whose Subscription sets environment variables and volumes, not arguments).")
	var clientNames []string
	flag.Func("webhook-client-names", "Comma-separated subject common names of the accepted client certificates (default: $WEBHOOK_CLIENT_NAMES, else any the client CA signed).",
		func(v string) error {
			clientNames = append(clientNames, strings.Split(v, ",")...)
			return nil
		})
	webhookService := flag.String("webhook-service", "sidecarset-operator-webhook", "The Service in front of the webhook server.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "", "The address of the Go pprof endpoints (empty: disabled).")
	flag.IntVar(&o.workers, "sidecarset-workers", 5, "The number of SidecarSets reconciled in parallel.")
	flag.IntVar(&o.podWriters, "pod-writers", 32, "The number of pod patches one SidecarSet reconcile issues in parallel.")
	flag.Float64Var(&o.apiQPS, "kube-api-qps", 200, "Queries per second to the API server.")
	flag.IntVar(&o.apiBurst, "kube-api-burst", 400, "Burst of queries to the API server.")
	flag.DurationVar(&o.rateBaseDelay, "rate-limiter-base-delay", 5*time.Millisecond, "The first retry delay of a failed reconcile (doubling per failure).")
	flag.DurationVar(&o.rateMaxDelay, "rate-limiter-max-delay", 60*time.Second, "The longest retry delay of a failed reconcile.")
	flag.IntVar(&o.rateQPS, "rate-limiter-qps", 100, "Overall reconciles per second the queue releases.")
	flag.IntVar(&o.rateBucket, "rate-limiter-bucket-size", 1000, "Burst of reconciles the queue releases.")
	gates := newFeatureGate()
	flag.Func("feature-gates", "Comma-separated key=value pairs of feature gates: "+strings.Join(gates.KnownFeatures(), "; "), gates.Set)
	zapOpts := zap.Options{Development: false, TimeEncoder: zapcore.ISO8601TimeEncoder}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	o.clientAuth.ClientNames = clientNames
	if names := os.Getenv("WEBHOOK_CLIENT_NAMES"); len(clientNames) == 0 && names != "" {
		o.clientAuth.ClientNames = strings.Split(names, ",")
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")
	if limit, err := app.SetMemoryLimit(memlimit.FromCgroup); err != nil {
		setupLog.Error(err, "Unable to read the container's memory limit; the Go runtime has no soft limit")
	} else if limit != math.MaxInt64 {
		setupLog.Info("Go soft memory limit", "bytes", limit)
	}
	o.certs.Namespace = o.namespace
	if o.certs.DNSName == "" {
		o.certs.DNSName = *webhookService + "." + o.namespace + ".svc"
	}

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	guard, err := serving.NewGuard(o.clientAuth)
	if err != nil {
		setupLog.Error(err, "Unable to set up the webhook client authentication")
		os.Exit(1)
	}
	if !guard.Authenticates() {
		setupLog.Info("Admission reviews are not authenticated: any client reaching the webhook port is served; set --webhook-client-ca-file (docs/install.md)")
	}

	sidecarSetWatches := crdwatch.NewSidecarSetWatches()
	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(o.apiQPS), o.apiBurst
	// The watch streams of every pod would be gzipped by the API server and
	// gunzipped here: CPU on both sides (5% of the manager's while pods are
	// created, in a profile) for a connection inside the cluster.
	restConfig.DisableCompression = true
	mgr, err := ctrl.NewManager(app.ClientConfig(restConfig), ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsOpts,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: o.webhookHost, Port: o.webhookPort, CertDir: o.certs.Dir,
			TLSOpts: append(slices.Clip(tlsOpts), guard.ConfigureTLS), WebhookMux: serving.NewMux(),
		}),
		Cache:                         app.CacheOptions(o.namespace, sidecarSetWatches, o.certs.MutatingConfig),
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              app.LeaderElectionID,
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    app.ControllerConfig(),
	})
	if err != nil {
		setupLog.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	scopedConfig, scopeOLM := "", false
	if o.scopePodWebhook {
		scopedConfig, scopeOLM = o.certs.MutatingConfig, o.certs.MutatingConfig == ""
	}
	ctx := ctrl.SetupSignalHandler()
	server, err := app.All(ctx, mgr, app.Options{
		Namespace:                    o.namespace,
		Certs:                        o.certs,
		Inject:                       inject.Options{SortContainersByName: gates.Enabled(EnableSortSidecarContainerByName)},
		PatchMetadataDefaultsAllowed: gates.Enabled(SidecarSetPatchPodMetadataDefaultsAllowed),
		Workers:                      o.workers,
		PodWriters:                   o.podWriters,
		RateLimiter:                  app.RateLimiter(o.rateBaseDelay, o.rateMaxDelay, o.rateQPS, o.rateBucket),
		ScopedWebhookConfig:          scopedConfig,
		ScopeOLMWebhooks:             scopeOLM,
		InstallAuthoringPolicy:       o.installAuthoringPolicy,
		SidecarSetWatches:            sidecarSetWatches,
	})
	if err != nil {
		setupLog.Error(err, "Unable to set up the operator")
		os.Exit(1)
	}
	server.UseGuard(guard)
	if err := mgr.Add(guard); err != nil {
		setupLog.Error(err, "Unable to set up the webhook client CA reload")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("webhooks", server.ReadyCheck()); err != nil {
		setupLog.Error(err, "Unable to set up the ready check")
		os.Exit(1)
	}

	build := version.Get()
	metrics.BuildInfo.WithLabelValues(build.Version, build.Revision).Set(1)
	setupLog.Info("Starting the manager", "version", build.Version, "revision", build.Revision, "namespace", o.namespace, "certSource", o.certs.Source)
	if err := mgr.Start(ctx); err != nil {
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
