// Package podscope keeps the pod webhooks' matchConditions equal to what
// the SidecarSets need (webhooks/scope computes them), on the leader, and
// once before the webhook server serves.
package podscope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/internal/scopestate"
	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// conflictRetry is how soon a write that lost a conflict is tried again.
const conflictRetry = 200 * time.Millisecond

// podScopeKey is the one item of the scope controller's queue: every event
// asks for the same recomputation.
var podScopeKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "pod-webhook"}}

// errScopeConflict says a webhook configuration changed under the write.
var errScopeConflict = errors.New("the webhook configuration changed during the write")

// PodWebhookScope keeps the pod webhooks' matchConditions equal to what the
// SidecarSets in the cache need (package scope): pods that no SidecarSet
// selects are admitted by the API server without calling a webhook, and the
// pods only best-effort SidecarSets select go to the failurePolicy Ignore
// webhook. In OLM's configurations it also drops, in the same write, the
// bundle's objectSelector that exempts the operator's label in every
// namespace, once the condition exempts it in the operator's namespace only
// (scope.Condition.ObjectSelector). The controller runs on the leader; the
// webhook server also writes the scope once before it serves its first pod
// (Sync).
type PodWebhookScope struct {
	// Client reads SidecarSets and webhook configurations and writes the
	// latter.
	Client client.Client
	// ConfigName is the MutatingWebhookConfiguration holding the pod
	// webhooks. Empty means OLM created them: they are found by
	// names.OLMWebhookLabel.
	ConfigName string
	// Namespace is the operator's namespace: its own pods there are left
	// out of the scope (scope.Scope.Exempting).
	Namespace string

	// State receives the SidecarSets the scope leaves out (the controller
	// reports them); nil reports them in the log and metrics only.
	State *scopestate.State

	// Serving reports whether this replica's webhook server answers
	// (webhookserver.Server.Serving). Until it does, the controller writes nothing: a
	// scope written earlier would send pods to the failurePolicy Fail
	// webhook with nothing to answer it (a first install, or one after
	// make undeploy), and the server writes the scope itself just before
	// it serves (SyncBeforeServing). Nil: always serving.
	Serving func() bool
	served  atomic.Bool

	// Build is the manager's version: each write of the scope records it in
	// the configurations' annotations (version.Annotation), where the
	// kubectl plugin reads the operator's version. Empty records nothing.
	Build version.Info

	mu        sync.Mutex
	last      map[string]scope.Condition // by webhook name: what was last written and logged
	writtenAt time.Time                  // when a write last changed a webhook configuration
}

// SetupWithManager watches the SidecarSets and the webhook configurations
// (an install, an upgrade or OLM rewriting them is scoped again).
func (r *PodWebhookScope) SetupWithManager(mgr ctrl.Manager) error {
	enqueue := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{podScopeKey}
	})
	ours := predicate.NewPredicateFuncs(r.isOurs)
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod-webhook-scope").
		Watches(&appsv1beta1.SidecarSet{}, enqueue, builder.WithPredicates(scopeInputChanged)).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, enqueue, builder.WithPredicates(ours)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// scopeInputChanged passes the SidecarSet events that can change the
// scope: creations, deletions, and updates of the spec, the labels or the
// annotations. A status write, which follows every pod a SidecarSet
// counts, changes none: with thousands of SidecarSets, computing the scope
// again at each one would be most of the manager's work while pods are
// created.
var scopeInputChanged = predicate.Or[client.Object](
	predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// isOurs reports whether a webhook configuration holds the pod webhooks.
func (r *PodWebhookScope) isOurs(o client.Object) bool {
	if r.ConfigName != "" {
		return o.GetName() == r.ConfigName
	}
	name := o.GetLabels()[names.OLMWebhookLabel]
	return name == names.PodWebhookName || name == names.PodBestEffortWebhookName
}

// servingRetry is how soon the controller looks again whether the webhook
// server serves.
const servingRetry = time.Second

// Reconcile recomputes the conditions and writes those that changed, once
// the webhook server serves.
func (r *PodWebhookScope) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if r.Serving != nil && !r.served.Load() {
		if !r.Serving() {
			return reconcile.Result{RequeueAfter: servingRetry}, nil
		}
		r.served.Store(true) // asked once: a server that served keeps serving
	}
	if err := r.Sync(ctx); err != nil {
		if errors.Is(err, errScopeConflict) {
			// The cache was behind: the certificate rotation wrote the CA
			// bundle, or our previous write is not in the cache yet. Not an
			// error: compute again shortly from the fresher object.
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// Sync computes the pod webhooks' conditions from the SidecarSets and
// writes them into the webhook configurations where they differ. A write
// conflict is errScopeConflict. A condition the API server refuses (a limit
// MaxExpressionLength does not foresee) is replaced by the fallback scope:
// the required webhook keeps its condition, every pod goes to the
// best-effort webhook.
func (r *PodWebhookScope) Sync(ctx context.Context) error {
	list := &appsv1beta1.SidecarSetList{}
	// Read-only views of the cache: a copy of thousands of SidecarSets at
	// each sync would be the manager's largest transient allocation.
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	sets := make([]*appsv1beta1.SidecarSet, len(list.Items))
	for i := range list.Items {
		sets[i] = &list.Items[i]
	}
	configs, err := r.configurations(ctx)
	if err != nil {
		return err
	}
	if len(configs) == 0 {
		// None installed (yet): their creation is an event. Meanwhile no
		// pod goes to a webhook, and no scope is awaited.
		r.written(sets, time.Time{})
		return nil
	}
	bestEffortInstalled := slices.ContainsFunc(configs, func(c *admissionregistrationv1.MutatingWebhookConfiguration) bool {
		return slices.ContainsFunc(c.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == names.PodBestEffortWebhookName })
	})
	want := map[string]scope.Condition{}
	why := scopeDegradedMessage
	sc := scope.Installed(sets, r.Namespace, bestEffortInstalled)
	want[names.PodWebhookName] = sc.Required
	if bestEffortInstalled {
		want[names.PodBestEffortWebhookName] = sc.BestEffort
	} else {
		why = scopeDegradedCombinedMessage
	}
	err = r.write(ctx, configs, want)
	var refused *refusedError
	if errors.As(err, &refused) && bestEffortInstalled {
		log := ctrl.LoggerFrom(ctx)
		log.Error(refused.err, "The API server refused the pod webhooks' scope: every pod is sent to the best-effort webhook", "webhook", refused.webhook)
		sc := scope.Fallback(sets, refused.previous)
		want[names.PodWebhookName], want[names.PodBestEffortWebhookName] = sc.Required, sc.BestEffort.Exempting(r.Namespace)
		why = fmt.Sprintf(scopeRefusedMessage, refused.err)
		configs, err = r.configurations(ctx)
		if err == nil {
			err = r.write(ctx, configs, want)
		}
	}
	if err != nil {
		return err
	}
	r.report(ctx, want, why)
	r.mu.Lock()
	at := r.writtenAt
	r.mu.Unlock()
	r.written(sets, at)
	return nil
}

// written hands the SidecarSets' generations the scope now holds, and when
// the webhook configurations last changed, to the controller (State).
func (r *PodWebhookScope) written(sets []*appsv1beta1.SidecarSet, at time.Time) {
	if r.State == nil {
		return
	}
	generations := make(map[string]int64, len(sets))
	for _, s := range sets {
		generations[s.Name] = s.Generation
	}
	r.State.Written(generations, at)
}

// The ScopeDegraded messages (the controller puts them in the condition).
// They name nothing that changes as SidecarSets come and go (the number of
// SidecarSets was in them once): a message that changes is a condition
// rewritten and a warning emitted again for every SidecarSet left out.
const (
	scopeDegradedMessage = "the pod webhooks' scope cannot express this SidecarSet's selection within the API server's " +
		"limit on a condition: its pods are sent to the best-effort webhook with every other pod, " +
		"and are admitted without its sidecars while the operator is unreachable"
	scopeDegradedCombinedMessage = "the pod webhooks' scope cannot express this SidecarSet's selection within the API server's " +
		"limit on a condition, and the install has no best-effort webhook: every pod of the cluster is sent " +
		"to the required webhook"
	scopeRefusedMessage = "the API server refused the pod webhooks' scope (%v): every pod is sent to the best-effort webhook, " +
		"and a pod of this SidecarSet is admitted without its sidecars while the operator is unreachable"
)

// refusedError is the API server refusing a webhook's condition.
type refusedError struct {
	webhook, previous string // the webhook, and our condition it has
	err               error
}

func (e *refusedError) Error() string { return e.err.Error() }

// write puts the conditions into the webhook configurations where they
// differ, and records when one changed.
func (r *PodWebhookScope) write(ctx context.Context, configs []*admissionregistrationv1.MutatingWebhookConfiguration, want map[string]scope.Condition) error {
	found := false
	for _, cfg := range configs {
		changed := false
		previous := ""
		for i := range cfg.Webhooks {
			w := &cfg.Webhooks[i]
			c, ok := want[w.Name]
			if !ok {
				continue
			}
			found = true
			changed = r.recordVersion(cfg) || changed
			if w.Name == names.PodWebhookName {
				previous = "true" // a webhook without our condition receives every pod
				for _, mc := range w.MatchConditions {
					if mc.Name == scope.ConditionName {
						previous = mc.Expression
					}
				}
			}
			merged := scope.Merge(w.MatchConditions, c.MatchConditions())
			if !slices.Equal(w.MatchConditions, merged) {
				w.MatchConditions = merged
				changed = true
			}
			// In the same write: OLM's label-only exemption goes once the
			// condition exempts the operator's pods in its namespace only.
			if sel := c.ObjectSelector(w.ObjectSelector); !equality.Semantic.DeepEqual(sel, w.ObjectSelector) {
				ctrl.LoggerFrom(ctx).Info("Dropping the pod webhook's objectSelector exemption of the operator's label in every namespace: its condition exempts the operator's pods in its namespace only",
					"webhook", w.Name, "configuration", cfg.Name)
				w.ObjectSelector = sel
				changed = true
			}
		}
		if !changed {
			continue
		}
		if err := r.Client.Update(ctx, cfg); err != nil {
			switch {
			case apierrors.IsConflict(err):
				return errScopeConflict
			case apierrors.IsInvalid(err) && want[names.PodWebhookName].Expression != previous:
				return &refusedError{webhook: names.PodWebhookName, previous: previous, err: err}
			}
			return fmt.Errorf("writing the scope of the pod webhooks in %s: %w", cfg.Name, err)
		}
		r.mu.Lock()
		r.writtenAt = time.Now()
		r.mu.Unlock()
	}
	if !found {
		return fmt.Errorf("no webhook configuration has the webhook %s", names.PodWebhookName)
	}
	return nil
}

// recordVersion puts the manager's version into the configuration's
// annotations, and reports whether they changed.
func (r *PodWebhookScope) recordVersion(cfg *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	if r.Build.Version == "" {
		return false
	}
	changed := false
	for k, v := range r.Build.Annotations() {
		if cfg.Annotations[k] != v {
			metav1.SetMetaDataAnnotation(&cfg.ObjectMeta, k, v)
			changed = true
		}
	}
	return changed
}

// configurations returns the MutatingWebhookConfigurations holding the pod
// webhooks: the named one, or OLM's.
func (r *PodWebhookScope) configurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if r.ConfigName != "" {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: r.ConfigName}, cfg); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return []*admissionregistrationv1.MutatingWebhookConfiguration{cfg}, nil
	}
	req, err := labels.NewRequirement(names.OLMWebhookLabel, selection.In, []string{names.PodWebhookName, names.PodBestEffortWebhookName})
	if err != nil {
		return nil, err
	}
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}); err != nil {
		return nil, err
	}
	out := make([]*admissionregistrationv1.MutatingWebhookConfiguration, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// report sets the scope metrics, logs the conditions that changed and
// hands the degraded SidecarSets to the controller (State).
func (r *PodWebhookScope) report(ctx context.Context, conds map[string]scope.Condition, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	log := ctrl.LoggerFrom(ctx)
	degraded := map[string]string{}
	for name, c := range conds {
		metrics.PodWebhookScopeBytes.WithLabelValues(name).Set(float64(len(c.Expression)))
		metrics.PodWebhookScopeExact.WithLabelValues(name).Set(boolGauge(c.Level == scope.Exact))
		metrics.PodWebhookScopeDegraded.WithLabelValues(name).Set(float64(len(c.Degraded)))
		for _, set := range c.Degraded {
			degraded[set] = why
		}
		if prev, ok := r.last[name]; ok && prev.Expression == c.Expression {
			continue
		}
		switch c.Level {
		case scope.Exact:
			log.Info("Scoped a pod webhook to the SidecarSets' selections", "webhook", name,
				"sidecarSets", c.SidecarSets, "bytes", len(c.Expression), "widerNamespaceSelectors", c.Wider)
		case scope.Degraded:
			log.Error(nil, "A pod webhook's scope cannot express every SidecarSet within the API server's limits: the SidecarSets left out are served by the best-effort webhook, which receives every pod",
				"webhook", name, "sidecarSets", c.SidecarSets, "leftOut", c.Degraded, "bytes", len(c.Expression))
		default:
			log.Error(nil, "A pod webhook's scope was widened to fit the API server's limits: it receives pods no SidecarSet selects",
				"webhook", name, "level", c.Level, "sidecarSets", c.SidecarSets, "bytes", len(c.Expression))
		}
	}
	r.last = conds
	if r.State != nil {
		r.State.Set(degraded)
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// startTimeout bounds how long the webhook server waits to write the pod
// webhooks' scope before it serves anyway.
const startTimeout = 10 * time.Second

// SyncBeforeServing writes the pod webhooks' scope, so that the API server
// sends the first pods under the current SidecarSets' scope rather than
// under the installed one. If it cannot (no permission, the API server
// unreachable), it gives up after startTimeout and the server serves
// anyway: the installed condition sends no pod, or the last scope written,
// never more, and the scope controller keeps trying.
func (r *PodWebhookScope) SyncBeforeServing(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx)
	err := wait.PollUntilContextTimeout(ctx, conflictRetry, startTimeout, true, func(ctx context.Context) (bool, error) {
		err := r.Sync(ctx)
		if err != nil {
			log.V(2).Info("Writing the pod webhooks' scope", "error", err.Error())
		}
		return err == nil, nil
	})
	if err != nil {
		log.Error(err, "Could not write the pod webhooks' scope before serving; the scope controller keeps trying")
	}
}
