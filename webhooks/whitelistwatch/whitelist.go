// Package whitelistwatch keeps the patchPodMetadata whitelist (policy.Store)
// equal to the kruise-configuration ConfigMap of the operator's namespace,
// reloaded on every change without a restart.
package whitelistwatch

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
)

// The cache lists and watches only the kruise-configuration ConfigMap (a
// field selector on its name), which RBAC can limit by resource name.
// +kubebuilder:rbac:groups="",namespace=kruise-system,resources=configmaps,resourceNames=kruise-configuration,verbs=get;list;watch

// whitelistWatcher reloads the patchPodMetadata whitelist whenever the
// kruise-configuration ConfigMap changes, without a restart. A malformed
// ConfigMap is reported (event on the ConfigMap, log, metric) and the last
// good whitelist stays in force.
type whitelistWatcher struct {
	reader   client.Reader
	store    *policy.Store
	recorder events.EventRecorder
	key      types.NamespacedName
}

// Add watches the kruise-configuration ConfigMap of the
// operator's namespace. It runs on every replica: each serves webhooks. It
// also loads the ConfigMap once at start, so that the store is loaded
// (policy.Store.Loaded) even when the ConfigMap does not exist and no event
// ever comes: the controller waits for that before it re-applies
// patchPodMetadata.
func Add(mgr manager.Manager, store *policy.Store, namespace string) error {
	w := &whitelistWatcher{
		reader:   mgr.GetCache(),
		store:    store,
		recorder: mgr.GetEventRecorder("sidecarset-operator"),
		key:      configMapKey(namespace),
	}
	// One reconcile at start, through the same queue as the ConfigMap's
	// events (so loads never race), whether or not the ConfigMap exists.
	first := make(chan event.TypedGenericEvent[*corev1.ConfigMap], 1)
	first <- event.TypedGenericEvent[*corev1.ConfigMap]{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: w.key.Namespace, Name: w.key.Name}}}
	isWhitelist := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == w.key.Namespace && o.GetName() == w.key.Name
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("whitelist").
		For(&corev1.ConfigMap{}, builder.WithPredicates(isWhitelist, predicate.Funcs{GenericFunc: func(event.GenericEvent) bool { return false }})).
		WatchesRawSource(source.Channel(first, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{})).
		WithOptions(controller.Options{NeedLeaderElection: new(false), MaxConcurrentReconciles: 1}).
		Complete(w)
}

// Reconcile reloads the whitelist.
func (w *whitelistWatcher) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	load, err := load(ctx, w.reader, w.store, w.key)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case load.configMap == nil:
		metrics.PolicyReloads.WithLabelValues("deleted").Inc()
		log.Info("The whitelist ConfigMap is absent: patchPodMetadata is allowed only by the SidecarSetPatchPodMetadataDefaultsAllowed gate", "configMap", w.key)
	case load.invalid != nil:
		metrics.PolicyReloads.WithLabelValues("error").Inc()
		log.Error(load.invalid, "Malformed whitelist: the last good one stays in force", "configMap", w.key)
		w.recorder.Eventf(load.configMap, nil, corev1.EventTypeWarning, "InvalidWhitelist", "Reload",
			"%s is malformed, the last good whitelist stays in force: %v", appsv1beta1.PatchPodMetadataWhiteListKey, load.invalid)
	default:
		metrics.PolicyReloads.WithLabelValues("success").Inc()
		log.Info("Loaded the patchPodMetadata whitelist", "configMap", w.key, "resourceVersion", load.configMap.ResourceVersion)
		if wl := w.store.Current().Whitelist; wl != nil {
			for _, warning := range wl.Warnings() {
				log.Info("Whitelist warning", "configMap", w.key, "warning", warning)
				w.recorder.Eventf(load.configMap, nil, corev1.EventTypeWarning, "WhitelistWarning", "Reload", "%s", warning)
			}
		}
	}
	return reconcile.Result{}, nil
}

// Load applies the current kruise-configuration ConfigMap of the
// namespace to the store: its whitelist, or no whitelist when the ConfigMap
// is absent. Only a read error is an error (a malformed whitelist is
// reported by the watcher, and the last good one stays in force).
func Load(ctx context.Context, reader client.Reader, store *policy.Store, namespace string) error {
	_, err := load(ctx, reader, store, configMapKey(namespace))
	return err
}

// loaded is what loading the kruise-configuration ConfigMap did.
type loaded struct {
	// configMap is the ConfigMap read; nil when it does not exist.
	configMap *corev1.ConfigMap
	// invalid is why its whitelist was not applied (the last good one
	// stays in force); nil when it was applied.
	invalid error
}

// load applies the current kruise-configuration ConfigMap to the
// store: its whitelist, or no whitelist when the ConfigMap is absent. Only a
// read error is returned as an error.
func load(ctx context.Context, reader client.Reader, store *policy.Store, key types.NamespacedName) (loaded, error) {
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			store.Delete()
			return loaded{}, nil
		}
		return loaded{}, err
	}
	return loaded{configMap: cm, invalid: store.Update(cm)}, nil
}

// configMapKey is the kruise-configuration ConfigMap of a namespace.
func configMapKey(namespace string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: appsv1beta1.ConfigurationConfigMapName}
}
