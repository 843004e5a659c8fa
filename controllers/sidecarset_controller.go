// Package controllers runs the SidecarSet controller: it records revisions,
// keeps the status fresh and upgrades sidecars in place, following the plan
// of the pure planner (controllers/rollout).
package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
	"github.com/sidecarset-operator/sidecarset-operator/internal/scopestate"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch;patch;pause-rollouts
// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete,namespace=kruise-system
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Event reasons on SidecarSets and pods.
const (
	// EventNotUpgradablePods is OpenKruise's event for pods that cannot be
	// upgraded in place (emitted once per change, not every round).
	EventNotUpgradablePods = "NotUpgradablePods"
	// EventRolloutStarted: pods started to be upgraded to a new revision.
	EventRolloutStarted = "RolloutStarted"
	// EventRolloutCompleted: every upgradable pod runs the latest sidecars.
	EventRolloutCompleted = "RolloutCompleted"
	// EventResetContainerSucceed and EventResetContainerFailed are
	// OpenKruise's hot-upgrade reset events on pods.
	EventResetContainerSucceed = "ResetContainerSucceed"
	EventResetContainerFailed  = "ResetContainerFailed"
	// EventUpgradeFailed: a pod patch failed.
	EventUpgradeFailed = "UpgradeFailed"
	// EventPodMetadataNotPatched: upgrades leave out patchPodMetadata
	// annotations (SidecarSet state, or keys the whitelist does not allow).
	EventPodMetadataNotPatched = "PodMetadataNotPatched"
)

// whitelistWait is how long a reconcile that would re-apply patchPodMetadata
// waits for the whitelist to be loaded, at start-up.
const whitelistWait = time.Second

// SidecarSetReconciler reconciles SidecarSets.
type SidecarSetReconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// Namespace is the operator's namespace (ControllerRevisions).
	Namespace string
	// Recorder emits events.
	Recorder events.EventRecorder
	// Workers is the number of SidecarSets reconciled in parallel.
	Workers int
	// PodWriters bounds the pod patches issued in parallel by one reconcile.
	PodWriters int
	// RateLimiter paces retries (nil: controller-runtime's default).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// Whitelist holds the patchPodMetadata whitelist in force, which an
	// upgrade consults when it re-applies patchPodMetadata, as injection
	// does.
	Whitelist *policy.Store
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
	// Detector knows the selected pods that run without the sidecars; nil
	// leaves notInjectedPods and the Injected condition alone.
	Detector *detect.Detector
	// Evictions is the policy/v1 REST client evictions are posted with
	// (kubernetes.Interface.PolicyV1().RESTClient()).
	Evictions rest.Interface
	// Pods is the core/v1 REST client pods are patched with, their answers
	// read only when they are errors (PodWrites).
	Pods rest.Interface
	// ResizeUnsupported says that the API server does not serve
	// pods/resize (Kubernetes before 1.33): resources changes are then
	// reported, or recreated, instead of resized.
	ResizeUnsupported bool
	// Scope knows the SidecarSets the pod webhooks' scope leaves out (the
	// Scoped condition); nil leaves it alone.
	Scope *scopestate.State

	// pods lists a SidecarSet's pods: from the manager's cache, as it holds
	// them (nil: through Client, copied).
	pods fieldindex.Pods
	// memories are what it remembers of each SidecarSet between reconciles.
	memories       memories
	resizeRefusals sync.Map // pod UID -> resizeRefusal
	now            func() time.Time
}

// noteState is what the last events said about a SidecarSet, so that events
// are emitted on transitions only.
type noteState struct {
	notUpgradable  string // generation and count of the last NotUpgradablePods event
	rollingTo      string // hash of the rollout announced as started
	completed      string // hash announced as completed
	notPatched     string // the last PodMetadataNotPatched warnings
	notInjected    string // the pods and reasons of the last PodsNotInjected event
	resizePending  string // the pods of the last ResizePending event
	pdbRefused     string // the pods of the last WaitingForPodDisruptionBudget event
	notRecreatable string // the pods of the last PodsNotRecreatable event
	stalled        string // the progress clock of the last ProgressDeadlineExceeded event
	restricted     string // the pods of the last SidecarsRestricted event
	scope          string // the message of the last ScopeDegraded event
}

// SetupWithManager registers the controller.
func (r *SidecarSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.pods = fieldindex.CachedPods(mgr.GetCache())
	if r.now == nil {
		r.now = time.Now
	}
	if r.PodWriters <= 0 {
		r.PodWriters = 32
	}
	b := ctrl.NewControllerManagedBy(mgr)
	// The detector's changes, and the scope's, come in as reconcile
	// requests.
	if r.Detector != nil {
		b = b.WatchesRawSource(r.Detector.Changes())
	}
	if r.Scope != nil {
		notify, src := requestsByName()
		r.Scope.OnChange(notify)
		b = b.WatchesRawSource(src)
	}
	return b.
		Named("sidecarset").
		// For's watch, with the SidecarSets that have work to do first at
		// start (workFirst), and Owns' watch of the revisions.
		Watches(&appsv1beta1.SidecarSet{}, &workFirst{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&appsv1.ControllerRevision{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&appsv1beta1.SidecarSet{}, handler.OnlyControllerOwner())).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			log := mgr.GetLogger().WithValues("controller", "sidecarset")
			if req != nil {
				log = log.WithValues("SidecarSet", req.Name)
			}
			return log
		}).
		// The pod index is added when this watch starts (the pod list then
		// gates the controller's workers only, not the webhooks).
		WatchesRawSource(fieldindex.Watch(mgr.GetCache(), &corev1.Pod{}, r.podHandler(), podChanged)).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToSidecarSets),
			builder.WithPredicates(namespaceRelabeled)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers, RateLimiter: r.RateLimiter}).
		Complete(r)
}

// requestsByName returns a function that asks for a reconcile of the
// SidecarSet it names, and the source those requests come from.
func requestsByName() (func(name string), source.Source) {
	ch := make(chan event.TypedGenericEvent[*appsv1beta1.SidecarSet], 1024)
	notify := func(name string) {
		ch <- event.TypedGenericEvent[*appsv1beta1.SidecarSet]{Object: &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	return notify, source.Channel(ch, &handler.TypedEnqueueRequestForObject[*appsv1beta1.SidecarSet]{})
}

// statusBatchDelay coalesces the reconciles that pod creations and
// deletions trigger: they change only the status counts, and while a
// Deployment scales by hundreds of pods one reconcile per SidecarSet every
// statusBatchDelay is enough (each reconcile looks at all its pods).
const statusBatchDelay = time.Second

// rolloutBatchDelay coalesces the reconciles that a rollout's pod updates
// trigger (the patch coming back, the kubelet reporting the new image,
// readiness). Each reconcile plans all the SidecarSet's pods, so the updates
// of a tenth of a second make one plan, which patches at once the pods that
// every completion in it freed: a freed slot waits at most this long.
const rolloutBatchDelay = 100 * time.Millisecond

// podHandler enqueues the SidecarSets a pod lists: after statusBatchDelay
// for creations and deletions, and for updates of the pods of a SidecarSet
// whose last plan was settled (then they can only move the counts); after
// rolloutBatchDelay for the updates a rollout waits on. An event that a
// queued reconcile already covers queues nothing (reconcileDue): a rollout
// brings two pod events or more per pod, which would each cost the queue
// an insertion and a wake-up. A deleted pod's in-flight entry is forgotten
// at once.
func (r *SidecarSetReconciler) podHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], req reconcile.Request, delay time.Duration) {
		if r.memories.reconcileDue(req.Name, time.Now(), delay) {
			q.AddAfter(req, delay)
		}
	}
	later := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range podToSidecarSets(ctx, o) {
			enqueue(q, req, statusBatchDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			later(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			reqs := append(podToSidecarSets(ctx, e.ObjectOld), podToSidecarSets(ctx, e.ObjectNew)...)
			for _, req := range reqs {
				if r.memories.settled(req.Name) {
					enqueue(q, req, statusBatchDelay)
				} else {
					enqueue(q, req, rolloutBatchDelay)
				}
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.memories.forgetPod(e.Object.GetUID())
			r.resizeRefusals.Delete(e.Object.GetUID())
			later(ctx, e.Object, q)
		},
	}
}

// Reconcile records the revision, refreshes the status and issues this
// round's in-place upgrades.
func (r *SidecarSetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.memories.reconcileStarted(req.Name)
	log := ctrl.LoggerFrom(ctx)
	obj := &appsv1beta1.SidecarSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.memories.forget(req.Name)
			metrics.ForgetSidecarSet(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if len(obj.Spec.PatchPodMetadata) > 0 && r.Whitelist != nil && !r.Whitelist.Loaded() {
		// Until the whitelist watcher has read the ConfigMap, the store
		// knows nothing: upgrading now would deny every key.
		log.V(1).Info("Waiting for the patchPodMetadata whitelist to load")
		return reconcile.Result{RequeueAfter: whitelistWait}, nil
	}
	s := obj.DeepCopy()
	appsv1beta1.SetDefaults(s)
	hashes, err := appsv1beta1.ComputeHashes(&s.Spec)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	pods, err := r.matchedPods(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	existing, err := r.listRevisions(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	memo := r.memories.classified(s.Name)
	latest, collisions, historyErr := r.syncHistory(ctx, s, existing, func() sets.Set[string] { return recordedRevisions(s.Name, pods, memo) })
	if historyErr != nil && latest == "" {
		// The round's status is the collision count (bumped on a name
		// collision), written before the retry.
		st := *obj.Status.DeepCopy()
		st.CollisionCount = &collisions
		if _, err := r.patchStatus(ctx, obj, st); err != nil {
			log.V(2).Info("Could not record the collision count")
		}
		return reconcile.Result{}, historyErr
	}

	// The revisions listed before syncHistory: one it just created is
	// the current spec, which the planner never looks up (paths.go).
	missing, detected := r.detected(s.Name)
	notInjected, err := r.notInjectedPods(ctx, s, missing)
	if err != nil {
		return reconcile.Result{}, err
	}
	revisions := r.memories.revisionSpecs(s, existing, len(pods) > 0 || len(notInjected) > 0)
	evictions, refusals := r.memories.recreations(s.Name)
	now := r.now()
	// A guard whose value the webhook would refuse (stored without it) is
	// off.
	guards, _ := appsv1beta1.ParseRolloutGuards(s.Annotations)
	scopeWhy, scopeDegraded := r.scopeDegraded(s.Name)
	plan, err := rollout.Compute(rollout.Input{
		SidecarSet: s, Hashes: hashes, LatestRevision: latest, CollisionCount: collisions, Pods: pods,
		InFlight: r.memories.inFlight(s.Name), Now: now,
		Whitelist: podmeta.Whitelist{Snapshot: r.Whitelist.Current(), DefaultsAllowed: r.PatchMetadataDefaultsAllowed},
		Revisions: revisions, ResizeUnsupported: r.ResizeUnsupported, ResizeRefused: r.refusedResizes(hashes.Hash),
		NotInjected: notInjected, NotInjectedFrom: r.scopeSettled(s, now), Evictions: evictions, Refused: refusals,
		Guards: guards, Progress: r.memories.progress(s.Name),
		Detected: missing, DetectorSynced: detected, ScopeDegraded: scopeDegraded, ScopeWhy: scopeWhy,
		Memo: memo,
	})
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	r.memories.landed(s.Name, plan.Done...)
	r.memories.evictionsDone(s.Name, plan.EvictionsDone, plan.EvictionsReplaced)
	r.memories.storePlan(s.Name, plan.Settled, plan.Progress)
	if plan.Pause {
		// The pause is the round's one write of the SidecarSet (the plan
		// upgrades nothing); the next round, planned from the paused
		// spec, writes the status.
		return r.pauseRollout(ctx, obj, &plan)
	}

	status := plan.Status
	// While the rollout moves, its progress alone (counts, and the
	// conditions' messages that tell them) is written at most every
	// statusRefreshInterval; the reconciles in between only plan.
	refreshIn := r.memories.statusRefreshIn(s.Name, now)
	if plan.Settled || refreshIn <= 0 || !rollout.ProgressOnly(&obj.Status, &status) {
		wrote, err := r.patchStatus(ctx, obj, status)
		if err != nil {
			return reconcile.Result{}, err
		}
		if wrote {
			r.memories.statusWritten(s.Name, now)
		}
		refreshIn = 0
	}
	recordStatusMetrics(s.Name, &status, len(plan.NotUpgradable), len(plan.Restricted))
	recordGuardMetrics(s.Name, guards, &plan, &status)
	recordPausedMetric(s.Name, s.Spec.UpdateStrategy.Paused)
	metrics.InFlightOldest.Set(r.memories.oldestInFlight(now).Seconds())
	r.announce(obj, s, hashes.Hash, &plan, &status, missing, detected, scopeWhy, scopeDegraded)
	for _, b := range plan.Blocked {
		log.V(2).Info("Pod cannot be planned", "pod", b.Pod, "reason", b.Reason)
	}

	// Resizes and evictions first: the kubelet and the pods' controllers
	// take their time, which the other writes then overlap.
	resizeConflicts, resizeErr := r.applyResizes(ctx, s.Name, plan.Resizes)
	r.applyEvictions(ctx, s.Name, plan.Evictions)
	succeeded, conflicts, writeErr := r.applyUpdates(ctx, s.Name, plan.Updates, false)
	_, resetConflicts, resetErr := r.applyUpdates(ctx, s.Name, plan.Resets, true)
	condErr := r.writeConditions(ctx, plan.Upgradable, plan.Updates, succeeded)
	if err := errors.Join(writeErr, resetErr, resizeErr, condErr); err != nil {
		return reconcile.Result{}, err
	}
	if conflicts+resetConflicts+resizeConflicts > 0 {
		// The cache was behind a pod's latest version: plan again shortly
		// from the fresher cache (not an error: nothing went wrong).
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	if refreshIn > 0 && (plan.RequeueAfter <= 0 || refreshIn < plan.RequeueAfter) {
		// The progress not written yet is written then at the latest.
		return reconcile.Result{RequeueAfter: refreshIn}, nil
	}
	return reconcile.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// statusRefreshInterval is how often, at most, a rollout in progress has
// its status written when only its progress moved (rollout.ProgressOnly): each
// reconcile of a rollout (ten a second while pods complete) would
// otherwise write it, and each write costs the API server and the manager
// a conversion and a watch event. A settled plan's status, and a change
// of anything else (a condition's status or reason, the generation
// observed, the revision), is written at once.
const statusRefreshInterval = time.Second

// staleRetry is how soon a reconcile whose write met a newer version than
// the cache held (a conflict) plans again, from the fresher cache.
const staleRetry = 200 * time.Millisecond

// patchStatus is a reconcile's one write of the SidecarSet's status: the
// status, if it changed, with a JSON merge patch of the difference
// (statusPatch). wrote says whether it wrote.
func (r *SidecarSetReconciler) patchStatus(ctx context.Context, obj *appsv1beta1.SidecarSet, status appsv1beta1.SidecarSetStatus) (wrote bool, err error) {
	updated := obj.DeepCopy()
	updated.Status = status
	if equality.Semantic.DeepEqual(obj.Status, updated.Status) {
		return false, nil
	}
	if err := r.Client.Status().Patch(ctx, updated, statusPatch(obj)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("writing the status: %w", err)
	}
	return true, nil
}

// statusPatch is a merge patch from the stored SidecarSet obj: a field that
// changed is sent, a field that became empty is sent as null (cleared, not
// left stale). The counts the schema requires (matchedPods, updatedPods,
// readyPods) are always sent, 0 included: a status never written (a new
// SidecarSet) decodes as zeros, so a plain diff would leave a zero count
// out and the API server would refuse the status for lacking it. The base
// holds -1 for them, a value no status holds.
func statusPatch(obj *appsv1beta1.SidecarSet) client.Patch {
	base := obj.DeepCopy()
	base.Status.MatchedPods, base.Status.UpdatedPods, base.Status.ReadyPods = -1, -1, -1
	return client.MergeFrom(base)
}

// applyUpdates issues pod patches in parallel (PodWriters at a time, none
// started once ctx ends) and records the upgrades in flight. It returns
// which pods were patched and how many were refused for a stale
// resourceVersion.
func (r *SidecarSetReconciler) applyUpdates(ctx context.Context, set string, updates []rollout.PodUpdate, reset bool) (map[types.UID]bool, int, error) {
	if len(updates) == 0 {
		return nil, 0, nil
	}
	var (
		mu        sync.Mutex
		succeeded = make(map[types.UID]bool, len(updates))
		conflicts int
		errs      []error
	)
	workqueue.ParallelizeUntil(ctx, r.PodWriters, len(updates), func(i int) {
		u := updates[i]
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name, pod.UID = u.Pod.Namespace, u.Pod.Name, u.UID
		err := r.patchPod(ctx, u.Pod, "", u.Patch)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			succeeded[u.UID] = true
			if !reset {
				r.memories.expect(set, u.UID, rollout.InFlight{Hash: u.Hash, Since: r.now()})
			}
			metrics.InPlaceUpdates.WithLabelValues(set, resultLabel(reset, "success")).Inc()
			if reset {
				r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventResetContainerSucceed, "Reset",
					"SidecarSet %s: reset the idle hot-upgrade twin to its empty image", set)
			}
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			conflicts++
			metrics.InPlaceUpdates.WithLabelValues(set, resultLabel(reset, "conflict")).Inc()
		default:
			metrics.InPlaceUpdates.WithLabelValues(set, resultLabel(reset, "error")).Inc()
			errs = append(errs, fmt.Errorf("patching pod %s: %w", u.Pod, err))
			reason := EventUpgradeFailed
			if reset {
				reason = EventResetContainerFailed
			}
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "Upgrade", "SidecarSet %s: %v", set, err)
		}
	})
	return succeeded, conflicts, errors.Join(errs...)
}

func resultLabel(reset bool, result string) string {
	if reset {
		return "reset-" + result
	}
	return result
}

// writeConditions patches the SidecarSetUpgradable pod conditions that
// change; those of upgraded pods only when their upgrade went through.
func (r *SidecarSetReconciler) writeConditions(ctx context.Context, conds []rollout.PodCondition, updates []rollout.PodUpdate, succeeded map[types.UID]bool) error {
	upgrading := make(map[types.NamespacedName]types.UID, len(updates))
	for _, u := range updates {
		upgrading[u.Pod] = u.UID
	}
	var errs []error
	for _, c := range conds {
		if uid, ok := upgrading[c.Pod]; ok && !succeeded[uid] {
			continue
		}
		patch, err := conditionPatch(c.Condition)
		if err != nil {
			return err
		}
		if err := r.patchPod(ctx, c.Pod, "status", patch); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("writing the %s condition of pod %s: %w", appsv1beta1.SidecarSetUpgradableCondition, c.Pod, err))
		}
	}
	return errors.Join(errs...)
}

// recordedRevisions are the ControllerRevisions the pods record for the
// SidecarSet: they must survive history truncation. A pod unchanged since
// the last plan has its annotations read from the plans' memo (nil: none),
// not decoded again.
func recordedRevisions(set string, pods []*corev1.Pod, memo *rollout.Memo) sets.Set[string] {
	names := sets.New[string]()
	for _, p := range pods {
		state, ok := memo.State(p)
		if !ok {
			var err error
			if state, err = podstate.Read(p.Annotations); err != nil {
				continue
			}
		}
		if e, ok := state.Hashes[set]; ok && e.ControllerRevision != "" {
			names.Insert(e.ControllerRevision)
		}
	}
	return names
}
