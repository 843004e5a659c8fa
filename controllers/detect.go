package controllers

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/lookup"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// detectFlushInterval coalesces the reconciles that detection asks for: a
// Deployment scaling up without its sidecars changes the set once per pod.
const detectFlushInterval = time.Second

// NotInjectedPod is a pod a SidecarSet selects that runs without its
// sidecars, and why (match.NotInjected*).
type NotInjectedPod struct {
	Pod    types.NamespacedName
	Reason string
}

// Detector knows, for each SidecarSet, the pods it selects (selector,
// namespace, namespaceSelector) that do not carry its sidecars. It follows
// every pod of the cluster through the cache's informer, but a pod event
// costs a look-up of the pod's labels in the SidecarSet registry (package
// candidate), so a pod no SidecarSet can select costs next to nothing and
// none costs a list: only a SidecarSet's creation or change rescans the
// pods it selects (a label-selector list from the cache). Changes are
// reported through Notify, coalesced every second.
type Detector struct {
	// Cache reads pods and namespaces, and provides the informers.
	Cache cache.Cache
	// Registry indexes the SidecarSets for pods; shared with the pod
	// webhook, and kept current by both.
	Registry *candidate.Registry
	// Namespace is the operator's namespace, whose own pods there are
	// never injected.
	Namespace string
	// Notify is told the SidecarSets whose set of pods changed.
	Notify func(sidecarSet string)

	mu      sync.Mutex
	bySet   map[string]map[types.NamespacedName]string // SidecarSet -> pod -> reason
	byPod   map[types.NamespacedName][]string          // pod -> the SidecarSets it misses
	changed map[string]bool
	// pending are the SidecarSets created or changed after the SidecarSets
	// were listed but before every pod was: their pods seen until then
	// were looked up without them, so they are rescanned once it has.
	pending map[string]bool
	synced  atomic.Bool
}

// NeedLeaderElection is true: detection feeds the controller, on the leader.
func (d *Detector) NeedLeaderElection() bool { return true }

// Start follows the SidecarSets and the pods until ctx ends. It first takes
// in every SidecarSet, then every pod (each looked up once against the
// complete registry), and only then rescans on SidecarSet changes.
func (d *Detector) Start(ctx context.Context) error {
	d.mu.Lock()
	d.bySet, d.byPod, d.changed, d.pending = map[string]map[types.NamespacedName]string{}, map[types.NamespacedName][]string{}, map[string]bool{}, nil
	d.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithName("not-injected-detector")
	sets, err := d.Cache.GetInformer(ctx, &appsv1beta1.SidecarSet{})
	if err != nil {
		return err
	}
	setsReg, err := sets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.sidecarSetChanged(ctx, obj) },
		UpdateFunc: func(old, obj any) { d.sidecarSetUpdated(ctx, old, obj) },
		DeleteFunc: func(obj any) { d.sidecarSetDeleted(obj) },
	})
	if err != nil {
		return err
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), setsReg.HasSynced) {
		return nil
	}
	d.mu.Lock()
	d.pending = map[string]bool{}
	d.mu.Unlock()
	pods, err := d.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	podsReg, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { d.podChanged(ctx, obj) },
		UpdateFunc: func(old, obj any) {
			if podMatters(old, obj) {
				d.podChanged(ctx, obj)
			}
		},
		DeleteFunc: d.podDeleted,
	})
	if err != nil {
		return err
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), podsReg.HasSynced) {
		return nil
	}
	d.mu.Lock()
	d.synced.Store(true)
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	for name := range pending {
		s := &appsv1beta1.SidecarSet{}
		if err := d.Cache.Get(ctx, types.NamespacedName{Name: name}, s); err == nil {
			d.rescan(ctx, s)
		}
	}
	log.Info("Following the pods the SidecarSets select", "sidecarSets", d.Registry.Len())
	// Every SidecarSet gets its first count, zero included.
	d.mu.Lock()
	for _, e := range d.Registry.All() {
		d.changed[e.SidecarSet.Name] = true
	}
	d.mu.Unlock()
	t := time.NewTicker(detectFlushInterval)
	defer t.Stop()
	for {
		d.flush()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Synced reports whether every pod has been looked at: until then the
// counts are not known.
func (d *Detector) Synced() bool { return d.synced.Load() }

// NotInjected returns the pods a SidecarSet misses, sorted, and their count.
func (d *Detector) NotInjected(sidecarSet string) []NotInjectedPod {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]NotInjectedPod, 0, len(d.bySet[sidecarSet]))
	for pod, reason := range d.bySet[sidecarSet] {
		out = append(out, NotInjectedPod{Pod: pod, Reason: reason})
	}
	slices.SortFunc(out, func(a, b NotInjectedPod) int {
		return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
	})
	return out
}

func (d *Detector) flush() {
	d.mu.Lock()
	changed := slices.Sorted(maps.Keys(d.changed))
	clear(d.changed)
	d.mu.Unlock()
	for _, name := range changed {
		d.Notify(name)
	}
}

func (d *Detector) sidecarSetChanged(ctx context.Context, obj any) {
	s, ok := obj.(*appsv1beta1.SidecarSet)
	if !ok {
		return
	}
	if err := d.Registry.Upsert(s); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Indexing a SidecarSet", "sidecarSet", s.Name)
		return
	}
	d.mu.Lock()
	if !d.synced.Load() {
		// Before the SidecarSets are listed (pending nil) every pod is
		// looked up later against all of them; after, until every pod is,
		// this one's pods are rescanned then.
		if d.pending != nil {
			d.pending[s.Name] = true
		}
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.rescan(ctx, s)
}

// sidecarSetUpdated rescans only when what selects or injects changed: the
// spec (generation), or the canary annotations.
func (d *Detector) sidecarSetUpdated(ctx context.Context, oldObj, obj any) {
	o, ok1 := oldObj.(*appsv1beta1.SidecarSet)
	s, ok2 := obj.(*appsv1beta1.SidecarSet)
	if ok1 && ok2 && o.Generation == s.Generation && maps.Equal(o.Annotations, s.Annotations) {
		return
	}
	d.sidecarSetChanged(ctx, obj)
}

func (d *Detector) sidecarSetDeleted(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	s, ok := obj.(*appsv1beta1.SidecarSet)
	if !ok {
		return
	}
	d.Registry.Delete(s.Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	for pod := range d.bySet[s.Name] {
		d.byPod[pod] = slices.DeleteFunc(d.byPod[pod], func(n string) bool { return n == s.Name })
		if len(d.byPod[pod]) == 0 {
			delete(d.byPod, pod)
		}
	}
	delete(d.bySet, s.Name)
}

// rescan looks again at the pods a SidecarSet's selector matches, after it
// changed: the ones it no longer misses are dropped, the others decided
// again.
func (d *Detector) rescan(ctx context.Context, s *appsv1beta1.SidecarSet) {
	d.mu.Lock()
	previous := slices.Collect(maps.Keys(d.bySet[s.Name]))
	d.mu.Unlock()
	var pods []*corev1.Pod
	if sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector); err == nil && !match.IsEmpty(s.Spec.Selector) {
		// A SidecarSet pinned to namespaces by name lists only theirs.
		for _, ns := range match.IndexValues(s) {
			list := &corev1.PodList{}
			opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy}
			if ns != match.ClusterScope {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := d.Cache.List(ctx, list, opts...); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Listing the pods of a SidecarSet", "sidecarSet", s.Name)
				return
			}
			for i := range list.Items {
				pods = append(pods, &list.Items[i])
			}
		}
	}
	seen := map[types.NamespacedName]bool{}
	for _, p := range pods {
		seen[client.ObjectKeyFromObject(p)] = true
		d.observe(ctx, p)
	}
	for _, key := range previous {
		if seen[key] {
			continue
		}
		p := &corev1.Pod{}
		if err := d.Cache.Get(ctx, key, p); err != nil {
			d.forget(key)
			continue
		}
		d.observe(ctx, p)
	}
}

func (d *Detector) podChanged(ctx context.Context, obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		d.observe(ctx, p)
	}
}

func (d *Detector) podDeleted(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		d.forget(client.ObjectKeyFromObject(p))
	}
}

// podMatters reports whether a pod update can change what it misses: its
// labels, its SidecarSet annotations, its containers, its end.
func podMatters(oldObj, obj any) bool {
	o, ok1 := oldObj.(*corev1.Pod)
	p, ok2 := obj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(o.Labels, p.Labels) ||
		!podstate.SameHashes(o.Annotations, p.Annotations) ||
		match.PodActive(o) != match.PodActive(p) ||
		len(o.Spec.Containers) != len(p.Spec.Containers) || len(o.Spec.InitContainers) != len(p.Spec.InitContainers)
}

// observe decides, for one pod, the SidecarSets that select it and that it
// misses, and records the difference.
func (d *Detector) observe(ctx context.Context, pod *corev1.Pod) {
	start := time.Now()
	defer func() {
		metrics.DetectorSeconds.Add(time.Since(start).Seconds())
		metrics.DetectorPods.Inc()
	}()
	key := client.ObjectKeyFromObject(pod)
	missing, err := d.missing(ctx, pod)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Cannot tell whether a pod misses sidecars", "pod", key, "error", err.Error())
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	before := d.byPod[key]
	var now []string
	for name, reason := range missing {
		now = append(now, name)
		if d.bySet[name] == nil {
			d.bySet[name] = map[types.NamespacedName]string{}
		}
		if d.bySet[name][key] != reason {
			d.bySet[name][key] = reason
			d.changed[name] = true
		}
	}
	for _, name := range before {
		if _, still := missing[name]; !still {
			d.unfileLocked(name, key)
			d.changed[name] = true
		}
	}
	if len(now) == 0 {
		delete(d.byPod, key)
	} else {
		d.byPod[key] = now
	}
}

func (d *Detector) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range d.byPod[key] {
		d.unfileLocked(name, key)
		d.changed[name] = true
	}
	delete(d.byPod, key)
}

// unfileLocked removes a pod from a SidecarSet's pods that miss it, and
// the SidecarSet's map once empty: a Go map keeps the room it grew to, and
// the thousands of pods a SidecarSet once missed (an admission test, a
// rollout) would otherwise stay in memory as empty room.
func (d *Detector) unfileLocked(name string, key types.NamespacedName) {
	delete(d.bySet[name], key)
	if len(d.bySet[name]) == 0 {
		delete(d.bySet, name)
	}
}

// missing returns the SidecarSets that select the pod and that it misses,
// with the reason (match.NotInjected). Which SidecarSets apply is
// match.Applicable's answer, the pod webhook's: an inactive pod is never
// injected, and a base SidecarSet whose canary applies is replaced by it. A
// paused SidecarSet that selects the pod is reported (paused), and so is
// every selecting SidecarSet of a pod whose annotations cannot be read
// (unreadable), which the webhook would have denied. The operator's own
// pods in its namespace are never injected. A SidecarSet with only
// patchPodMetadata is never missed, but, as a canary, replaces its base.
func (d *Detector) missing(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	if pod.Namespace == d.Namespace && pod.Labels[appsv1beta1.OperatorPodLabel] == appsv1beta1.OperatorPodName {
		return nil, nil
	}
	entries := d.Registry.Candidates(pod.Namespace, pod.Labels)
	if !slices.ContainsFunc(entries, func(e *candidate.Entry) bool { return match.InjectsSomething(e.SidecarSet) }) {
		return nil, nil
	}
	ns := match.PodNamespace{Name: pod.Namespace}
	if slices.ContainsFunc(entries, func(e *candidate.Entry) bool { return match.NeedsNamespace(e.SidecarSet, pod.Namespace) }) {
		meta, err := lookup.Namespace(ctx, d.Cache, pod.Namespace)
		if err != nil {
			return nil, err
		}
		ns.Labels, ns.UID = meta.GetLabels(), meta.GetUID()
	}
	cands := make([]match.Candidate, len(entries))
	for i, e := range entries {
		cands[i] = match.Candidate{SidecarSet: e.SidecarSet, Selector: e.Selector}
	}
	a := match.Applicable(pod, ns, cands)
	out := map[string]string{}
	for i, v := range a.Verdicts {
		s := entries[i].SidecarSet
		if !v.Selects || v.Reason == match.ReasonReplacedByCanary || !match.InjectsSomething(s) {
			continue
		}
		if a.RecordedError != nil {
			out[s.Name] = match.NotInjectedUnreadable
		} else if reason := match.NotInjected(s, pod, a.Recorded.Hashes); reason != "" {
			if v.Reason == match.ReasonNamespaceReplaced || v.Reason == match.ReasonCanaryBaseReplaced {
				// Left out on purpose: said as such (not as a pod the
				// webhook missed, nor one a recreation would inject, nor
				// a name conflict with the base a canary shares its
				// sidecars' names with).
				reason = v.Reason
			}
			out[s.Name] = reason
		}
	}
	return out, nil
}
