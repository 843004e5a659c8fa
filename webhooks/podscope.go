package webhooks

import (
	"context"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// PodWebhookName is the name of the pod webhook in the mutating webhook
// configuration (see markers.go).
const PodWebhookName = "mpod.sidecarset-operator.dev"

// conflictRetry is how soon a write that lost a conflict is tried again.
const conflictRetry = 200 * time.Millisecond

// podScopeKey is the one item of the scope controller's queue: every event
// asks for the same recomputation.
var podScopeKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "pod-webhook"}}

// PodWebhookScope keeps the pod webhook's matchConditions equal to what the
// SidecarSets in the cache need (package scope): pods that no SidecarSet
// could select are admitted by the API server without calling the webhook.
// It runs on the leader and writes the webhook configuration only when the
// condition changes.
type PodWebhookScope struct {
	Client client.Client
	// ConfigName is the MutatingWebhookConfiguration holding the pod webhook.
	ConfigName string
}

// SetupWithManager watches the SidecarSets and the webhook configuration (an
// install or upgrade that rewrites it is scoped again).
func (r *PodWebhookScope) SetupWithManager(mgr ctrl.Manager) error {
	enqueue := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{podScopeKey}
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == r.ConfigName })
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod-webhook-scope").
		Watches(&appsv1alpha1.SidecarSet{}, enqueue).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, enqueue, builder.WithPredicates(ours)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile recomputes the condition and writes it if it changed.
func (r *PodWebhookScope) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	list := &appsv1alpha1.SidecarSetList{}
	if err := r.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, err
	}
	sets := make([]*appsv1alpha1.SidecarSet, len(list.Items))
	for i := range list.Items {
		sets[i] = &list.Items[i]
	}
	conditions, summary := scope.Conditions(sets)
	podWebhookScoped.Set(boolGauge(summary.Scoped))

	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: r.ConfigName}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			// Not installed (yet): its creation is an event.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == PodWebhookName })
	if i < 0 {
		return reconcile.Result{}, fmt.Errorf("the webhook configuration %s has no webhook %s", r.ConfigName, PodWebhookName)
	}
	want := scope.Merge(cfg.Webhooks[i].MatchConditions, conditions)
	if slices.Equal(cfg.Webhooks[i].MatchConditions, want) {
		return reconcile.Result{}, nil
	}
	cfg.Webhooks[i].MatchConditions = want
	if err := r.Client.Update(ctx, cfg); err != nil {
		if apierrors.IsConflict(err) {
			// The cache was behind: the certificate rotation wrote the CA
			// bundle, or our previous write is not in the cache yet. Not an
			// error: compute again shortly from the fresher object.
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case summary.Scoped && summary.Keys == 0:
		log.Info("No SidecarSet selects pods: the pod webhook receives none")
	case summary.Scoped:
		log.Info("Scoped the pod webhook to the SidecarSets' selectors", "labelKeys", summary.Keys, "valuesDropped", summary.ValuesDropped)
	default:
		log.Info("The pod webhook receives every pod", "reason", summary.Reason)
	}
	return reconcile.Result{}, nil
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
