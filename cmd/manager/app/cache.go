package app

import (
	"time"

	"golang.org/x/time/rate"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/cachetransform"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
)

// ClientConfig is the REST configuration of the manager's clients: a copy
// of cfg whose pod watches bring the pods filtered on the wire to what the
// pod cache keeps (cachetransform.FilterPodWatches), so that the fields it
// drops are never decoded.
func ClientConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(cachetransform.FilterPodWatches)
	return cfg
}

// CacheOptions shape the manager's cache to what the operator reads: managed
// fields are dropped everywhere; ControllerRevisions are cached from the
// operator's namespace only, ConfigMaps only for the whitelist, admission
// policies and bindings only for the authoring policy, and mutating webhook
// configurations only for mutatingConfig when it is named (the manager's
// RBAC then grants that one by name; under OLM, unnamed, they are found by
// label among all).
//
// Pods are cached compact (cachetransform.PodCache); SidecarSets and
// ControllerRevisions share their strings (cachetransform.Interner), as the
// pods do, so that thousands of them hold one copy of each label, image or
// condition message.
//
// watches, when not nil, follows the SidecarSet informer's watches (the
// ready check after a write of the CRD, crdwatch.SidecarSetWatches).
func CacheOptions(namespace string, watches *crdwatch.SidecarSetWatches, mutatingConfig string) cache.Options {
	in := cachetransform.NewInterner()
	shared := func(obj any) (any, error) {
		obj, err := cache.TransformStripManagedFields()(obj)
		if err != nil {
			return nil, err
		}
		return in.Transform(obj)
	}
	byObject := map[client.Object]cache.ByObject{
		&appsv1beta1.SidecarSet{}: {Transform: shared},
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", appsv1beta1.ConfigurationConfigMapName),
		},
		&appsv1.ControllerRevision{}: {
			Namespaces: map[string]cache.Config{namespace: {}},
			Transform: func(obj any) (any, error) {
				obj, err := cachetransform.TrimRevision(obj)
				if err != nil {
					return nil, err
				}
				return shared(obj)
			},
		},
		// The authoring policy and its binding, by name: the webhook
		// defers to the API server where both exist.
		&admissionregistrationv1.ValidatingAdmissionPolicy{}: {
			Field: fields.OneTermEqualSelector("metadata.name", authoring.Name),
		},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}: {
			Field: fields.OneTermEqualSelector("metadata.name", authoring.Name),
		},
		&corev1.Pod{}: {
			Transform: cachetransform.NewPodCache().Trim,
		},
	}
	if mutatingConfig != "" {
		byObject[&admissionregistrationv1.MutatingWebhookConfiguration{}] = cache.ByObject{
			Field: fields.OneTermEqualSelector("metadata.name", mutatingConfig),
		}
	}
	return cache.Options{
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			if _, ok := obj.(*appsv1beta1.SidecarSet); ok && watches != nil {
				lw = watches.Wrap(lw)
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		},
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         byObject,
	}
}

// RateLimiter paces the SidecarSet queue: per-item exponential backoff for
// failures, and an overall token bucket.
func RateLimiter(baseDelay, maxDelay time.Duration, qps, bucket int) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](baseDelay, maxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(qps), bucket)},
	)
}

// ControllerConfig is the configuration shared by every controller.
func ControllerConfig() config.Controller {
	return config.Controller{
		RecoverPanic: new(true),
	}
}
