// Package webhookserver serves the operator's webhooks on every replica: it
// registers the admission handlers (package webhooks) and the CRD's
// conversion once the serving certificate is ready and the informers they
// read have synced, and reports readiness.
package webhookserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/failureevents"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/podscope"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/whitelistwatch"
)

// The webhooks read SidecarSets, namespaces (metadata) and the operator's
// ControllerRevisions from the cache.
// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,namespace=kruise-system,resources=controllerrevisions,verbs=get;list;watch

// Options configure the webhooks.
type Options struct {
	// Registry indexes the SidecarSets for pods, as its follower keeps
	// them (candidate.Follower); the pod webhook serves once it has
	// synced.
	Registry *candidate.Registry
	// Namespace is the operator's namespace: ControllerRevisions and the
	// kruise-configuration ConfigMap live there.
	Namespace string
	// Inject are the injection gates.
	Inject inject.Options
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
	// Rules are the compiled SidecarSet CEL rules.
	Rules *policy.Rules
	// Whitelist is the store of the patchPodMetadata whitelist.
	Whitelist *policy.Store
	// Scope, when set, writes the pod webhooks' scope before the server
	// serves its first pod.
	Scope *podscope.PodWebhookScope
	// Authoring is the compiled authoring policy, enforced where the API
	// server does not enforce it; nil disables that.
	Authoring *authoring.Policy
	// Authorizer answers the authoring policy's permission checks.
	Authorizer authorizer.UnconditionalAuthorizer
}

// Server registers the webhooks once the serving certificate is ready, and
// reports readiness. It runs on every replica.
type Server struct {
	mgr       manager.Manager
	opts      Options
	certReady <-chan struct{}
	started   atomic.Bool
	failures  *failureevents.Reporter
	guard     *serving.Guard
}

// Add adds the webhook Server to the manager; it starts serving once
// certReady closes.
func Add(mgr manager.Manager, o Options, certReady <-chan struct{}) (*Server, error) {
	s := &Server{mgr: mgr, opts: o, certReady: certReady,
		failures: failureevents.NewReporter(mgr.GetEventRecorder("sidecarset-webhook"))}
	if err := mgr.Add(s.failures); err != nil {
		return nil, err
	}
	return s, mgr.Add(s)
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (s *Server) NeedLeaderElection() bool { return false }

// UseGuard bounds and authenticates every path with g (the one given to the
// webhook server's TLS configuration), in place of bounds alone; call it
// before the manager starts.
func (s *Server) UseGuard(g *serving.Guard) { s.guard = g }

// register serves h at path on route, through the guard: every path is
// registered here.
func (s *Server) register(srv webhook.Server, path string, route serving.Route, h http.Handler) {
	srv.Register(path, s.guard.Wrap(route, h))
}

// Start starts the informers the handlers read, waits for the
// certificate, serves the conversion webhook, waits for those informers,
// then registers the admission handlers. Admitting pods before the
// registry has every SidecarSet would admit them without their sidecars
// (until then the pod path answers 404, which the API server treats as the
// webhook being unreachable).
func (s *Server) Start(ctx context.Context) error {
	begin := time.Now()
	// The informers of what the handlers read start now, while the
	// certificate is made ready, so that the first request does not wait
	// for them; the server waits for those alone: not for the whole cache,
	// whose pod informer (started by the controller, on the leader) lists
	// every pod and serves no webhook. The SidecarSets come through the
	// registry, whose follower runs beside the server.
	registry := s.opts.Registry
	synced := []toolscache.InformerSynced{registry.HasSynced}
	reads := []client.Object{&appsv1.ControllerRevision{}, lookup.NamespaceMetadata()}
	if s.opts.Authoring != nil {
		reads = append(reads, &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
	}
	for _, obj := range reads {
		informer, err := s.mgr.GetCache().GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		synced = append(synced, informer.HasSynced)
	}
	select {
	case <-s.certReady:
	case <-ctx.Done():
		return nil
	}
	// The webhook server starts when it is first asked for (the manager
	// runs it then), and it needs the certificate's files. The conversion
	// webhook serves first: the API server may need it to list the
	// SidecarSets stored as v1alpha1 for the informer, which retries until
	// then.
	srv := s.mgr.GetWebhookServer()
	if s.guard == nil {
		s.guard, _ = serving.NewGuard(serving.Options{}) // bounds, no authentication: cannot fail
	}
	s.register(srv, names.ConversionPath, serving.Conversion, serving.NewConverter(s.mgr.GetScheme()))
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("the cache did not sync")
	}
	log := ctrl.LoggerFrom(ctx)
	log.Info("The webhooks' informers synced", "sidecarSets", registry.Len(), "after", time.Since(begin).Round(time.Millisecond).String())
	// Likewise the whitelist: the watcher may not have loaded it yet, and a
	// SidecarSet with patchPodMetadata would be rejected as if the
	// ConfigMap were missing. A malformed one is reported by the watcher.
	if s.opts.Whitelist != nil {
		if err := whitelistwatch.Load(ctx, s.mgr.GetCache(), s.opts.Whitelist, s.opts.Namespace); err != nil {
			return fmt.Errorf("loading the patchPodMetadata whitelist: %w", err)
		}
	}
	if s.opts.Scope != nil {
		s.opts.Scope.SyncBeforeServing(ctx)
	}
	s.register(srv, names.PodInjectionPath, serving.Admission, &webhooks.PodInjector{
		Injector: decide.Injector{
			Registry:                     registry,
			Reader:                       s.mgr.GetCache(),
			LiveReader:                   s.mgr.GetAPIReader(),
			Namespace:                    s.opts.Namespace,
			Options:                      s.opts.Inject,
			Whitelist:                    s.opts.Whitelist,
			PatchMetadataDefaultsAllowed: s.opts.PatchMetadataDefaultsAllowed,
		},
		Failures: s.failures,
	})
	validator := &webhooks.SidecarSetValidator{
		Reader:                       s.mgr.GetCache(),
		Namespace:                    s.opts.Namespace,
		Rules:                        s.opts.Rules,
		Whitelist:                    s.opts.Whitelist,
		PatchMetadataDefaultsAllowed: s.opts.PatchMetadataDefaultsAllowed,
	}
	if s.opts.Authoring != nil {
		validator.Authoring = &webhooks.AuthoringPolicy{Policy: s.opts.Authoring, Reader: s.mgr.GetCache(), Authorizer: s.opts.Authorizer,
			Namespace: s.opts.Namespace}
	}
	// Both versions, at OpenKruise 1.9's paths and at the v1alpha1 paths of
	// earlier releases (webhook configurations not yet updated).
	for _, path := range []string{names.SidecarSetDefaultPath, names.LegacySidecarSetDefaultPath} {
		s.register(srv, path, serving.Admission, &admission.Webhook{Handler: webhooks.SidecarSetDefaulter{
			Authorizer: s.opts.Authorizer, Reader: s.mgr.GetCache(), LiveReader: s.mgr.GetAPIReader(), Restores: validator.Authoring}})
	}
	for _, path := range []string{names.SidecarSetValidatePath, names.LegacySidecarSetValidatePath} {
		s.register(srv, path, serving.Admission, &admission.Webhook{Handler: validator})
	}
	s.started.Store(true)
	log.Info("Serving the webhooks", "sidecarSets", registry.Len(), "after", time.Since(begin).Round(time.Millisecond).String())
	<-ctx.Done()
	return nil
}

// ReadyCheck fails until the webhook server serves.
func (s *Server) ReadyCheck() healthz.Checker {
	return func(req *http.Request) error {
		if !s.started.Load() {
			return errors.New("the webhook server is not started yet")
		}
		return s.mgr.GetWebhookServer().StartedChecker()(req)
	}
}

// Serving reports whether the webhook server serves: its handlers are
// registered and its port answers TLS (ReadyCheck passes).
func (s *Server) Serving() bool {
	return s.ReadyCheck()(nil) == nil
}
