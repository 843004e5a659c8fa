package fieldindex

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// recordingCache is the part of the manager's cache Setup uses: it keeps
// the indexers added to each informer.
type recordingCache struct {
	client.FieldIndexer
	added map[string]toolscache.Indexers // by object type
}

type recordingInformer struct {
	ctrlcache.Informer
	into toolscache.Indexers
}

func (i recordingInformer) AddIndexers(indexers toolscache.Indexers) error {
	maps.Copy(i.into, indexers)
	return nil
}

func (c *recordingCache) GetInformer(_ context.Context, obj client.Object, _ ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	kind := map[bool]string{true: "pod", false: "revision"}[isPod(obj)]
	if c.added[kind] == nil {
		c.added[kind] = toolscache.Indexers{}
	}
	return recordingInformer{into: c.added[kind]}, nil
}

func isPod(obj client.Object) bool { _, ok := obj.(*corev1.Pod); return ok }

// startRecorder is the Kind source a Watch starts: it records the pod
// indexes present on the cache when it is started.
type startRecorder struct {
	source.SyncingSource
	cache      *recordingCache
	atStart    []string
	startCalls int
}

func (s *startRecorder) Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.startCalls++
	s.atStart = slices.Sorted(maps.Keys(s.cache.added["pod"]))
	return nil
}

// The manager waits for every informer its cache has at start before it
// starts the webhooks: Setup must not start the pod informer (listing every
// pod of the cluster); the controller's watch of pods adds the pod index
// before its source starts, so before its workers list by it.
func TestSetup_LeavesThePodInformerToTheControllersWatch(t *testing.T) {
	t.Parallel()
	c := &recordingCache{added: map[string]toolscache.Indexers{}}
	if err := Setup(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.added["pod"]; ok {
		t.Fatalf("Setup got the pod informer (indexes %v); the manager would wait for every pod before serving", slices.Collect(maps.Keys(c.added["pod"])))
	}
	src := &startRecorder{cache: c}
	w := indexedWatch{SyncingSource: src, cache: c, obj: &corev1.Pod{}}
	if err := w.Start(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if src.startCalls != 1 || !slices.Equal(src.atStart, []string{"field:" + PodBySidecarSet}) {
		t.Errorf("the pod source started %d times with the pod indexes %v; want once with [field:%s]", src.startCalls, src.atStart, PodBySidecarSet)
	}
	// A watch of another type adds no index.
	other := indexedWatch{SyncingSource: &startRecorder{cache: c}, cache: c, obj: &appsv1.ControllerRevision{}}
	if err := other.Start(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if len(c.added["revision"]) != 1 {
		t.Errorf("revision indexes after a revision watch: %v", slices.Collect(maps.Keys(c.added["revision"])))
	}
}

// On the manager's cache each object is filed under the one key its lists
// ask for: pods under the all-namespaces key of each SidecarSet they carry,
// revisions under their namespace's key of their SidecarSet's bucket.
func TestSetup_OneKeyPerValueOnTheManagersCache(t *testing.T) {
	t.Parallel()
	c := &recordingCache{added: map[string]toolscache.Indexers{}}
	if err := Setup(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := (indexedWatch{SyncingSource: &startRecorder{cache: c}, cache: c, obj: &corev1.Pod{}}).Start(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "p",
		Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: "a,b"}}}
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-system", Name: "s-1",
		Labels: map[string]string{appsv1beta1.SidecarSetNameLabel: "s"}}}
	for _, tc := range []struct {
		kind, index string
		obj         client.Object
		want        []string
	}{
		{"pod", "field:" + PodBySidecarSet, pod, []string{"__all_namespaces/a", "__all_namespaces/b"}},
		{"revision", "field:" + RevisionBySidecarSet, rev, []string{"kruise-system/" + RevisionBucket("s")}},
		{"revision", "field:" + RevisionBySidecarSet, &appsv1.ControllerRevision{}, []string{}},
	} {
		f := c.added[tc.kind][tc.index]
		if f == nil {
			t.Fatalf("no %s index on the %s informer: %v", tc.index, tc.kind, c.added)
		}
		got, err := f(tc.obj)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s keys of %s: %q, %v; want %q", tc.index, tc.obj.GetName(), got, err, tc.want)
		}
	}
}

// A plain field indexer (the kubectl plugin's) gets every index through
// IndexField, with the extractors.
type fieldRecorder map[string]client.IndexerFunc

func (r fieldRecorder) IndexField(_ context.Context, _ client.Object, field string, extract client.IndexerFunc) error {
	r[field] = extract
	return nil
}

func TestSetup_PlainIndexerGetsEveryField(t *testing.T) {
	t.Parallel()
	r := fieldRecorder{}
	if err := Setup(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if r[PodBySidecarSet] == nil || r[RevisionBySidecarSet] == nil || len(r) != 2 {
		t.Errorf("indexed fields %v", r)
	}
}

// A SidecarSet's revisions are listed apart from those of a SidecarSet
// whose name falls in the same bucket, and from another namespace's.
func TestListRevisions_OnlyTheSidecarSetsOwn(t *testing.T) {
	t.Parallel()
	a, b := "a", ""
	for i := 0; b == ""; i++ {
		if n := fmt.Sprintf("b-%d", i); RevisionBucket(n) == RevisionBucket(a) {
			b = n
		}
	}
	rev := func(ns, name, set string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{appsv1beta1.SidecarSetNameLabel: set}}}
	}
	c := fake.NewClientBuilder().WithIndex(&appsv1.ControllerRevision{}, RevisionBySidecarSet, RevisionSidecarSet).
		WithObjects(rev("kruise-system", "a-1", a), rev("kruise-system", "a-2", a), rev("kruise-system", "b-1", b),
			rev("other", "a-3", a), &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-system", Name: "unlabelled"}}).Build()
	got, err := ListRevisions(t.Context(), c, "kruise-system", a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a-1", "a-2"}) {
		t.Errorf("listed %q for %s (sharing its bucket with %s), want a-1 and a-2", names, a, b)
	}
}

// podInformerCache is a manager's cache holding one pod informer.
type podInformerCache struct {
	informer toolscache.SharedIndexInformer
}

func (c podInformerCache) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return c.informer, nil
}

// A SidecarSet's pods are read from the pod informer as it holds them: its
// own pods only, the cached pointers themselves, nothing copied.
func TestCachedPods_TheCachedPodsThemselves(t *testing.T) {
	t.Parallel()
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Pod{}, 0, CacheIndexers(&corev1.Pod{}))
	pod := func(ns, name, list string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: list}}}
	}
	mine := []*corev1.Pod{pod("a", "web-1", "agent"), pod("b", "web-2", "agent,proxy")}
	for _, p := range append(slices.Clone(mine), pod("a", "db-1", "proxy"), pod("a", "plain", "")) {
		if err := informer.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := CachedPods(podInformerCache{informer})(t.Context(), "agent")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(got) != len(mine) || got[0] != mine[0] || got[1] != mine[1] {
		t.Errorf("the agent's pods: %v, want the cached pods %v themselves", got, mine)
	}
}
