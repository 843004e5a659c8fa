// Package fieldindex registers the cache indexes shared by the webhooks and
// the controllers, so that a reconcile touches only its own pods and
// revisions, and a pinned revision is found without listing every revision.
// (The pod webhook finds a pod's candidate SidecarSets in its own registry,
// internal/candidate, bucketed by namespace and label.)
package fieldindex

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const (
	// PodBySidecarSet indexes pods by the SidecarSets in their
	// kruise.io/sidecarset-injected-list annotation.
	PodBySidecarSet = "pod.sidecarsets"
	// RevisionBySidecarSet indexes ControllerRevisions by a bucket of the
	// kruise.io/sidecarset-name label (RevisionBucket); ListRevisions lists
	// a SidecarSet's by it.
	RevisionBySidecarSet = "controllerrevision.sidecarset"
)

// index is one field index and how it is listed.
type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
	// allNamespaces: the index is listed across namespaces (pods by
	// SidecarSet), not within one (revisions, in the operator's namespace).
	allNamespaces bool
	// atWatch: on the manager's cache the index is added when the
	// controller's watch of its type starts (Watch), not by Setup. The
	// manager waits for every informer its cache has at start before it
	// starts the webhooks; the pod informer lists every pod of the cluster
	// (5 s for 10 000) and no webhook reads it.
	atWatch bool
}

// podIndex is PodBySidecarSet.
var podIndex = index{obj: &corev1.Pod{}, field: PodBySidecarSet, extract: PodSidecarSets, allNamespaces: true, atWatch: true}

var indexes = []index{
	podIndex,
	{obj: &appsv1.ControllerRevision{}, field: RevisionBySidecarSet, extract: RevisionSidecarSet},
}

// informers is the manager's cache, seen as where its informers are.
type informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error)
}

// Setup registers every index with the manager's field indexer. On the
// manager's cache, each object is indexed under one key per value, the
// one its lists ask for, rather than under two (controller-runtime's
// IndexField files every namespaced object under its namespace's key and
// under the all-namespaces key): with 10 000 pods and 5 000 revisions the
// keys never asked for cost megabytes. Pods must then be listed by
// PodBySidecarSet across namespaces, revisions by RevisionBySidecarSet
// within a namespace. The pod index is left to the controller's watch of
// pods (Watch) on the manager's cache; a plain indexer gets every index.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range indexes {
		var err error
		if c, ok := indexer.(informers); !ok {
			err = indexer.IndexField(ctx, ix.obj, ix.field, ix.extract)
		} else if !ix.atWatch {
			err = addIndex(ctx, c, ix)
		}
		if err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
}

// addIndex adds ix to its informer, without waiting for the informer to
// sync (the cache may already be started).
func addIndex(ctx context.Context, c informers, ix index) error {
	informer, err := c.GetInformer(ctx, ix.obj, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return informer.AddIndexers(toolscache.Indexers{ix.name(): ix.keys})
}

// Watch is a controller's watch of obj's type through the manager's cache
// (a Kind source) that, when the controller starts it, first adds the
// indexes Setup left to it: the controller's workers, which list by them,
// start only after its sources started and synced.
func Watch(c ctrlcache.Cache, obj client.Object, h handler.EventHandler, predicates ...predicate.Predicate) source.SyncingSource {
	return indexedWatch{SyncingSource: source.Kind(c, obj, h, predicates...), cache: c, obj: obj}
}

type indexedWatch struct {
	source.SyncingSource
	cache informers
	obj   client.Object
}

func (w indexedWatch) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	for _, ix := range indexesOf(w.obj) {
		if !ix.atWatch {
			continue
		}
		if err := addIndex(ctx, w.cache, ix); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return w.SyncingSource.Start(ctx, q)
}

// CacheIndexers are the indexes Setup adds to the manager's informer of
// obj's type (the footprint tests build the same stores).
func CacheIndexers(obj client.Object) toolscache.Indexers {
	out := toolscache.Indexers{}
	for _, ix := range indexesOf(obj) {
		out[ix.name()] = ix.keys
	}
	return out
}

// indexesOf are the indexes of obj's type.
func indexesOf(obj client.Object) []index {
	var out []index
	for _, ix := range indexes {
		if reflect.TypeOf(ix.obj) == reflect.TypeOf(obj) {
			out = append(out, ix)
		}
	}
	return out
}

// name is the index's name in an informer's indexers, the one
// controller-runtime's cache reader looks up for a field.
func (ix index) name() string { return "field:" + ix.field }

// keys are an object's index keys, as controller-runtime's cache reader
// looks them up: "<namespace>/<value>" for a list within a namespace,
// "__all_namespaces/<value>" for one across namespaces.
func (ix index) keys(obj any) ([]string, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	values := ix.extract(o)
	keys := make([]string, len(values))
	for i, v := range values {
		keys[i] = ix.key(o.GetNamespace(), v)
	}
	return keys, nil
}

// key is the index key of one value of an object in a namespace.
func (ix index) key(namespace, value string) string {
	if ix.allNamespaces {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}

// PodSidecarSets is the PodBySidecarSet extractor: the SidecarSets a pod's
// injected-list names.
func PodSidecarSets(o client.Object) []string {
	return podstate.DecodeInjectedList(o.GetAnnotations()[appsv1beta1.SidecarSetListAnnotation])
}

// RevisionSidecarSet is the RevisionBySidecarSet extractor: the bucket of
// the SidecarSet a ControllerRevision's kruise.io/sidecarset-name label
// names.
func RevisionSidecarSet(o client.Object) []string {
	if name := o.GetLabels()[appsv1beta1.SidecarSetNameLabel]; name != "" {
		return []string{RevisionBucket(name)}
	}
	return nil
}

// revisionBuckets is how many buckets the revisions are filed in.
const revisionBuckets = 1024

// RevisionBucket is the index value of a SidecarSet's revisions: one of
// revisionBuckets, by a hash of its name. client-go files each index value's
// objects in a set of its own, a Go map of at least 300 bytes: with one
// value per SidecarSet, 5 000 SidecarSets cost 1.6 MiB of sets holding one
// revision each. A bucket holds the revisions of a few SidecarSets, which
// ListRevisions tells apart by their label before they are copied.
func RevisionBucket(sidecarSet string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(sidecarSet))
	return strconv.FormatUint(uint64(h.Sum32()%revisionBuckets), 16)
}

// ListRevisions lists the ControllerRevisions of the namespace labelled with
// the SidecarSet's name, through the RevisionBySidecarSet index.
func ListRevisions(ctx context.Context, reader client.Reader, namespace, sidecarSet string) ([]appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace),
		client.MatchingFields{RevisionBySidecarSet: RevisionBucket(sidecarSet)},
		client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: sidecarSet}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Pods lists the pods whose injected-list names a SidecarSet.
type Pods func(ctx context.Context, sidecarSet string) ([]*corev1.Pod, error)

// CachedPods lists them from the cache's pod informer, through the
// PodBySidecarSet index, as the cache holds them: pointers to the cached
// pods, read-only, nothing copied. (A List into a PodList copies the struct
// of each pod, a kilobyte, at every reconcile: in a rollout of a thousand
// pods, a third of everything the manager allocated.)
func CachedPods(c informers) Pods {
	return func(ctx context.Context, sidecarSet string) ([]*corev1.Pod, error) {
		inf, err := c.GetInformer(ctx, &corev1.Pod{}, ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		indexed, ok := inf.(toolscache.SharedIndexInformer)
		if !ok {
			return nil, fmt.Errorf("the pod informer is a %T, which has no indexer", inf)
		}
		objs, err := indexed.GetIndexer().ByIndex(podIndex.name(), podIndex.key("", sidecarSet))
		if err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
		return pods, nil
	}
}

// ListedPods lists them through a reader, copied (a reader other than the
// manager's cache).
func ListedPods(reader client.Reader) Pods {
	return func(ctx context.Context, sidecarSet string) ([]*corev1.Pod, error) {
		list := &corev1.PodList{}
		if err := reader.List(ctx, list, client.MatchingFields{PodBySidecarSet: sidecarSet}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		return pods, nil
	}
}
