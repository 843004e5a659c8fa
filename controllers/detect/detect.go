// Package detect runs the detector of pods that run without their
// sidecars: a controller, on the leader, that knows for each SidecarSet the
// pods it selects (selector, namespace, namespaceSelector) that do not
// carry its sidecars, and why. The SidecarSet controller reads that
// (NotInjected, Synced) into the status and is told when it changes
// (Changes).
//
// It follows every pod of the cluster, but a pod event costs a look-up of
// the pod's labels in the SidecarSet registry (internal/candidate), so a
// pod no SidecarSet can select costs next to nothing and none costs a list:
// only a SidecarSet's creation or change, as the registry reports it once
// it holds it, rescans the pods it selects. The decision for one pod is
// pure (decide.go); what the detector holds is one struct (state.go).
package detect

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// notifyDelay coalesces the reconciles a change asks of the SidecarSet
// controller: a Deployment scaling up without its sidecars changes a
// SidecarSet's pods once per pod. The controller hears of a change at most
// this long after it.
const notifyDelay = 500 * time.Millisecond

// registryPoll is how often the detector's start looks whether the
// registry has synced.
const registryPoll = 100 * time.Millisecond

// NotInjectedPod is a pod a SidecarSet selects that runs without its
// sidecars, and why (match.NotInjected*).
type NotInjectedPod struct {
	Pod    types.NamespacedName
	Reason string
}

// Detector is the controller of the pods that miss their sidecars.
type Detector struct {
	// cache reads pods and namespaces, and provides the pod informer.
	cache cache.Cache
	// registry indexes the SidecarSets for pods, as its follower keeps
	// them, and says when a SidecarSet changed.
	registry *candidate.Registry
	// namespace is the operator's namespace, whose own pods there are
	// never injected.
	namespace string
	state     *state
}

// New returns a detector that reads the cache, looks pods up in the
// registry (the detector is its listener: Registry.OnChange), and leaves
// out the operator's own pods in its namespace.
func New(c cache.Cache, registry *candidate.Registry, namespace string) *Detector {
	return &Detector{cache: c, registry: registry, namespace: namespace, state: newState()}
}

// item is one piece of the detector's work: a pod to look at, a SidecarSet
// whose pods to look at again, or the mark queued after the pods of the
// first list.
type item struct {
	pod        types.NamespacedName
	sidecarSet string
	synced     bool
}

// SetupWithManager registers the detector as a controller of the
// manager's, with one worker: the mark of the first list is reached once
// every pod of that list has been looked at, not only taken.
func (d *Detector) SetupWithManager(mgr ctrl.Manager) error {
	pods := source.TypedKind(d.cache, &corev1.Pod{},
		handler.TypedEnqueueRequestsFromMapFunc(d.podItems),
		predicate.TypedFuncs[*corev1.Pod]{UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Pod]) bool {
			return podMatters(e.ObjectOld, e.ObjectNew)
		}})
	return builder.TypedControllerManagedBy[item](mgr).
		Named("not-injected-detector").
		WatchesRawSource(&sidecarSetChanges{registry: d.registry}).
		WatchesRawSource(&markedWhenSynced{TypedSyncingSource: pods}).
		WithLogConstructor(func(it *item) logr.Logger {
			log := mgr.GetLogger().WithValues("controller", "not-injected-detector")
			switch {
			case it == nil:
			case it.sidecarSet != "":
				log = log.WithValues("SidecarSet", it.sidecarSet)
			case !it.synced:
				log = log.WithValues("pod", it.pod)
			}
			return log
		}).
		WithOptions(controller.TypedOptions[item]{MaxConcurrentReconciles: 1}).
		Complete(d)
}

// podItems asks to look at a pod. Once synced, only a pod that some
// SidecarSet can select, or that misses one, is worth it: a SidecarSet
// created after the event rescans its pods from the cache, which has the
// pod by then.
func (d *Detector) podItems(_ context.Context, p *corev1.Pod) []item {
	key := client.ObjectKeyFromObject(p)
	if d.state.isSynced() && !d.state.tracks(key) && len(d.registry.Candidates(p.Namespace, p.Labels)) == 0 {
		return nil
	}
	return []item{{pod: key}}
}

// Synced reports whether every pod has been looked at: until then the
// counts are not known.
func (d *Detector) Synced() bool { return d.state.isSynced() }

// NotInjected returns the pods a SidecarSet misses, sorted.
func (d *Detector) NotInjected(sidecarSet string) []NotInjectedPod {
	return d.state.notInjected(sidecarSet)
}

// Changes is the source of the SidecarSet controller's reconciles of the
// SidecarSets whose pods that miss them changed, coalesced for notifyDelay;
// once synced, every SidecarSet's first.
func (d *Detector) Changes() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		d.state.attach(q)
		return nil
	})
}

// Reconcile does one item's work.
func (d *Detector) Reconcile(ctx context.Context, it item) (reconcile.Result, error) {
	switch {
	case it.synced:
		var names []string
		for _, e := range d.registry.All() {
			names = append(names, e.SidecarSet.Name)
		}
		ctrl.LoggerFrom(ctx).Info("Following the pods the SidecarSets select", "sidecarSets", len(names))
		d.state.markSynced(names)
		return reconcile.Result{}, nil
	case it.sidecarSet != "":
		return reconcile.Result{}, d.rescan(ctx, it.sidecarSet)
	default:
		return reconcile.Result{}, d.lookAt(ctx, it.pod)
	}
}

// lookAt decides for one pod, from the cache, and records the difference.
func (d *Detector) lookAt(ctx context.Context, key types.NamespacedName) error {
	pod := &corev1.Pod{}
	// observe only reads the pod: the cache's own, not a deep copy per event.
	if err := d.cache.Get(ctx, key, pod, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			d.state.tell(d.state.forget(key))
			return nil
		}
		return err
	}
	return d.observe(ctx, pod)
}

func (d *Detector) observe(ctx context.Context, pod *corev1.Pod) error {
	start := time.Now()
	defer func() {
		metrics.DetectorSeconds.Add(time.Since(start).Seconds())
		metrics.DetectorPods.Inc()
	}()
	var got map[string]string
	if !exempt(pod, d.namespace) {
		entries := d.registry.Candidates(pod.Namespace, pod.Labels)
		ns := match.PodNamespace{Name: pod.Namespace}
		if needsNamespace(pod, entries) {
			meta, err := lookup.Namespace(ctx, d.cache, pod.Namespace)
			if err != nil {
				return err
			}
			ns.Labels, ns.UID = meta.GetLabels(), meta.GetUID()
		}
		got = missing(pod, ns, entries)
	}
	d.state.tell(d.state.record(client.ObjectKeyFromObject(pod), got))
	return nil
}

// rescan looks again at the pods a SidecarSet's selector matches, and at
// those that missed it, after it changed; a SidecarSet the registry no
// longer has is forgotten.
func (d *Detector) rescan(ctx context.Context, name string) error {
	e, ok := d.registry.Get(name)
	if !ok {
		d.state.forgetSidecarSet(name)
		return nil
	}
	s := e.SidecarSet
	previous := d.state.podsOf(name)
	seen := map[types.NamespacedName]bool{}
	if sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector); err == nil && !match.IsEmpty(s.Spec.Selector) {
		// A SidecarSet pinned to namespaces by name lists only theirs.
		for _, ns := range match.IndexValues(s) {
			list := &corev1.PodList{}
			opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy}
			if ns != match.ClusterScope {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := d.cache.List(ctx, list, opts...); err != nil {
				return err
			}
			for i := range list.Items {
				seen[client.ObjectKeyFromObject(&list.Items[i])] = true
				if err := d.observe(ctx, &list.Items[i]); err != nil {
					return err
				}
			}
		}
	}
	for _, key := range previous {
		if !seen[key] {
			if err := d.lookAt(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// sidecarSetChanges is the registry's changes that can change which pods
// miss a SidecarSet, as items; it has synced once the registry has.
type sidecarSetChanges struct {
	registry *candidate.Registry
}

func (s *sidecarSetChanges) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[item]) error {
	s.registry.OnChange(func(old, current *candidate.Entry) {
		if !rescanNeeded(old, current) {
			return
		}
		e := current
		if e == nil {
			e = old
		}
		q.Add(item{sidecarSet: e.SidecarSet.Name})
	})
	return nil
}

func (s *sidecarSetChanges) WaitForSync(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, registryPoll, true, func(context.Context) (bool, error) {
		return s.registry.HasSynced(), nil
	})
	if errors.Is(err, context.Canceled) {
		return nil // the manager stops
	}
	return err
}

// markedWhenSynced is the pod watch, which queues the mark once it has
// queued every pod of the first list, behind them: the first list is
// queued at the lowest priority, and in order within a priority.
type markedWhenSynced struct {
	source.TypedSyncingSource[item]
	queue workqueue.TypedRateLimitingInterface[item]
}

func (m *markedWhenSynced) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[item]) error {
	m.queue = q
	return m.TypedSyncingSource.Start(ctx, q)
}

func (m *markedWhenSynced) WaitForSync(ctx context.Context) error {
	if err := m.TypedSyncingSource.WaitForSync(ctx); err != nil {
		return err
	}
	low := handler.LowPriority
	if pq, ok := m.queue.(priorityqueue.PriorityQueue[item]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, item{synced: true})
	} else {
		m.queue.Add(item{synced: true})
	}
	return nil
}
