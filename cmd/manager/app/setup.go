// Package app wires the operator's components into a manager: the cache
// indexes, the whitelist watcher, the webhook certificates and server, and
// the SidecarSet controller. The manager's main (cmd/manager) and the
// integration suites use the same wiring.
package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/scopestate"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/accessreview"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/authoringpolicy"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/certs"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdconversion"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/podscope"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/webhookserver"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/whitelistwatch"
)

// LeaderElectionID names the Lease of leader election; the RBAC below
// allows exactly that Lease.
const LeaderElectionID = "sidecarset-operator.apps.kruise.io"

// Leader election (the controllers run on the leader only): client-go's
// Lease lock gets, creates and updates the one Lease. create cannot be
// limited to a name (the name of an object being created is not part of the
// authorization check), get and update are.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kruise-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kruise-system,resources=leases,resourceNames=sidecarset-operator.apps.kruise.io,verbs=get;update

// Options configure the operator's components.
type Options struct {
	// Namespace is the operator's namespace.
	Namespace string
	// Certs says where the webhook certificate comes from.
	Certs certs.CertOptions
	// Inject are the injection gates.
	Inject inject.Options
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
	// Workers is the number of SidecarSets reconciled in parallel.
	Workers int
	// PodWriters bounds the parallel pod patches of one reconcile.
	PodWriters int
	// RateLimiter paces the SidecarSet queue.
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// InstallAuthoringPolicy installs the SidecarSet authoring policy and its
	// binding at start (OLM, whose bundles cannot carry them).
	InstallAuthoringPolicy bool
	// SidecarSetWatches is the tracker given to CacheOptions (nil: none):
	// the ready check waits on it after a write of the CRD.
	SidecarSetWatches *crdwatch.SidecarSetWatches
	// ScopedWebhookConfig names the MutatingWebhookConfiguration whose pod
	// webhooks are narrowed to the pods the SidecarSets select.
	ScopedWebhookConfig string
	// ScopeOLMWebhooks narrows the pod webhooks of the configurations OLM
	// created (found by label) when ScopedWebhookConfig is empty.
	ScopeOLMWebhooks bool
}

// All adds every component to the manager. A policy that does not compile
// is an error here, at start-up, not at the first request.
func All(ctx context.Context, mgr ctrl.Manager, o Options) (*webhookserver.Server, error) {
	rules, err := policy.CompileRules()
	if err != nil {
		return nil, fmt.Errorf("compiling the SidecarSet CEL rules: %w", err)
	}
	authoringPolicy, err := authoring.Load()
	if err != nil {
		return nil, fmt.Errorf("compiling the SidecarSet authoring policy: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	authz, err := accessreview.NewAuthorizer(clientset.AuthorizationV1())
	if err != nil {
		return nil, fmt.Errorf("setting up the authorizer of the authoring policy: %w", err)
	}
	if err := fieldindex.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("setting up the cache indexes: %w", err)
	}
	whitelist := policy.NewStore()
	if err := whitelistwatch.Add(mgr, whitelist, o.Namespace); err != nil {
		return nil, fmt.Errorf("watching the whitelist: %w", err)
	}
	certReady, err := certs.SetupCertificates(mgr, o.Certs)
	if err != nil {
		return nil, fmt.Errorf("setting up the webhook certificate: %w", err)
	}
	var podScope *podscope.PodWebhookScope
	var scopeState *scopestate.State
	if o.ScopedWebhookConfig != "" || o.ScopeOLMWebhooks {
		scopeState = &scopestate.State{}
		podScope = &podscope.PodWebhookScope{Client: mgr.GetClient(), ConfigName: o.ScopedWebhookConfig, Namespace: o.Namespace, State: scopeState,
			Build: version.Get()}
	}
	// One registry of the SidecarSets, indexed for pods, with one writer
	// on every replica: the pod webhook injects from it, the detector (on
	// the leader) finds the pods that miss their sidecars with it.
	registry := candidate.NewRegistry()
	if err := mgr.Add(&candidate.Follower{Registry: registry, Informer: func(ctx context.Context) (candidate.Informer, error) {
		return mgr.GetCache().GetInformer(ctx, &appsv1beta1.SidecarSet{}, cache.BlockUntilSynced(false))
	}}); err != nil {
		return nil, fmt.Errorf("setting up the SidecarSet registry: %w", err)
	}
	detector := detect.New(mgr.GetCache(), registry, o.Namespace)
	if err := detector.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the detector of pods without their sidecars: %w", err)
	}
	server, err := webhookserver.Add(mgr, webhookserver.Options{
		Registry:                     registry,
		Namespace:                    o.Namespace,
		Inject:                       o.Inject,
		PatchMetadataDefaultsAllowed: o.PatchMetadataDefaultsAllowed,
		Rules:                        rules,
		Whitelist:                    whitelist,
		Scope:                        podScope,
		Authoring:                    authoringPolicy,
		Authorizer:                   authz,
	}, certReady)
	if err != nil {
		return nil, fmt.Errorf("setting up the webhooks: %w", err)
	}
	pods, err := controllers.PodWrites(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("setting up the pod writes' client: %w", err)
	}
	resizeSupported, err := lookup.ServesPodResize(clientset.Discovery())
	if err != nil {
		return nil, fmt.Errorf("discovering the pods/resize subresource: %w", err)
	}
	err = (&controllers.SidecarSetReconciler{
		Client:                       mgr.GetClient(),
		Namespace:                    o.Namespace,
		Recorder:                     mgr.GetEventRecorder("sidecarset-controller"),
		Workers:                      o.Workers,
		PodWriters:                   o.PodWriters,
		RateLimiter:                  o.RateLimiter,
		Whitelist:                    whitelist,
		PatchMetadataDefaultsAllowed: o.PatchMetadataDefaultsAllowed,
		Detector:                     detector,
		ResizeUnsupported:            !resizeSupported,
		Evictions:                    clientset.PolicyV1().RESTClient(),
		Pods:                         pods,
		Scope:                        scopeState,
	}).SetupWithManager(mgr)
	if err != nil {
		return nil, fmt.Errorf("setting up the SidecarSet controller: %w", err)
	}
	// With self-managed certificates, the CRD's conversion webhook follows
	// the SidecarSet webhook's Service or URL and CA bundle; with external
	// ones (cert-manager, OLM) their issuer writes it, and the manager has no
	// right on the CRD. The manager is ready once it is set and the
	// SidecarSet watch survived the write.
	if o.Certs.KeepsConversion() {
		conv := &crdconversion.ConversionConfig{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(),
			MutatingConfig: o.Certs.MutatingConfig, Watches: o.SidecarSetWatches}
		if err := mgr.Add(conv); err != nil {
			return nil, fmt.Errorf("setting up the CRD conversion webhook: %w", err)
		}
		if err := mgr.AddReadyzCheck("sidecarset-crd", conv.ReadyCheck()); err != nil {
			return nil, fmt.Errorf("setting up the CRD conversion ready check: %w", err)
		}
	}
	// The heap's free pages go back to the system after a burst, not
	// minutes later (MemoryReturner).
	if err := mgr.Add(MemoryReturner{}); err != nil {
		return nil, fmt.Errorf("setting up the memory returner: %w", err)
	}
	if o.InstallAuthoringPolicy {
		if err := mgr.Add(&authoringpolicy.Installer{Client: mgr.GetClient()}); err != nil {
			return nil, fmt.Errorf("setting up the authoring policy installer: %w", err)
		}
	}
	if podScope != nil {
		podScope.Serving = server.Serving
		if err := podScope.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the pod webhook scope: %w", err)
		}
	}
	return server, nil
}
