package cachetransform

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	toolscache "k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/test/heap"
)

// scaleSetJSON is one of the scale bench's SidecarSets that select no pod,
// as the API server holds it once the controller has written its hashes,
// authority and status (managed fields are dropped by the cache).
func scaleSetJSON(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{
"annotations":{"kruise.io/sidecarset-hash":"x8x5268d4b7d944b46fb7z9674z48554bfzd4524v472x7c5wxvw996%07d",
"kruise.io/sidecarset-hash-without-image":"49v285b5w48d9x266zx8zvdzfb874v6248w67xbwv4vx246vzz6d495bz2%07d",
"sidecarset-operator.dev/authority":"inject-privileged,inject-secrets,inject-all-namespaces"},
"creationTimestamp":"2026-11-27T10:36:16Z","generation":1,"labels":{"sidecarset-bench-scale":"true"},
"name":"scale-%04d","resourceVersion":"%d","uid":"a71fb955-83a2-4958-8c65-%012d"},
"spec":{"containers":[{"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"idle","podInjectPolicy":"BeforeAppContainer",
"resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
"upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"injectionStrategy":{},"revisionHistoryLimit":10,
"selector":{"matchLabels":{"app":"idle-%04d"}},"updateStrategy":{"maxUnavailable":1,"partition":0,"type":"NotUpdate"}},
"status":{"collisionCount":0,"conditions":[{"lastTransitionTime":"2026-11-27T10:36:16Z","message":"no matched pod to upgrade",
"observedGeneration":1,"reason":"RolloutComplete","status":"True","type":"Updated"}],"latestRevision":"scale-%04d-5759c%05d",
"matchedPods":0,"observedGeneration":1,"readyPods":0,"updatedPods":0}}`, i, i, i, 1000+i, i, i, i, i)
}

// scaleRevisionJSON is that SidecarSet's ControllerRevision.
func scaleRevisionJSON(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"ControllerRevision","data":{"spec":{"$patch":"replace",
"containers":[{"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"idle","podInjectPolicy":"BeforeAppContainer","resources":{},
"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
"upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}},
"metadata":{"annotations":{"kruise.io/sidecarset-hash":"x8x5268d4b7d944b46fb7z9674z48554bfzd4524v472x7c5wxvw996%07d",
"kruise.io/sidecarset-hash-without-image":"49v285b5w48d9x266zx8zvdzfb874v6248w67xbwv4vx246vzz6d495bz2%07d",
"sidecarset-operator.dev/authority":"inject-privileged,inject-secrets,inject-all-namespaces"},
"creationTimestamp":"2026-11-27T10:36:16Z","labels":{"controller.kubernetes.io/hash":"5759c%05d","kruise.io/sidecarset-name":"scale-%04d",
"sidecarset-bench-scale":"true"},"name":"scale-%04d-5759c%05d","namespace":"kruise-system",
"ownerReferences":[{"apiVersion":"apps.kruise.io/v1beta1","blockOwnerDeletion":true,"controller":true,"kind":"SidecarSet",
"name":"scale-%04d","uid":"a71fb955-83a2-4958-8c65-%012d"}],"resourceVersion":"%d","uid":"b3d74442-ecd3-4adc-bccc-%012d"},"revision":1}`,
		i, i, i, i, i, i, i, i, 1000+i, i)
}

// setFootprint is the live heap, in bytes per SidecarSet, that n
// SidecarSets of the scale bench selecting no pod and their revisions
// cost in the manager's caches, as it builds them (the transform, the
// revisions' index).
func setFootprint(t *testing.T, n int) float64 {
	t.Helper()
	sets := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	revs := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, withNamespaceIndex(fieldindex.CacheIndexers(&appsv1.ControllerRevision{})))
	in := NewInterner()
	before := heap.Live()
	for i := range n {
		s := &appsv1beta1.SidecarSet{}
		if err := json.Unmarshal(scaleSetJSON(i), s); err != nil {
			t.Fatal(err)
		}
		r := &appsv1.ControllerRevision{}
		if err := json.Unmarshal(scaleRevisionJSON(i), r); err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct {
			obj   any
			store toolscache.Indexer
		}{{s, sets}, {r, revs}} {
			obj, err := in.Transform(o.obj)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.store.Add(obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	after := heap.Live()
	// The manager keeps them, and the interner's tables, for its lifetime.
	runtime.KeepAlive(sets)
	runtime.KeepAlive(revs)
	runtime.KeepAlive(in)
	return float64(after-before) / float64(n)
}

// TestSidecarSetFootprint is not parallel: it measures the live heap.
func TestSidecarSetFootprint(t *testing.T) {
	perSet := setFootprint(t, 5000)
	t.Logf("%.0f bytes per SidecarSet with its revision", perSet)
	if perSet > maxBytesPerSet {
		t.Errorf("a SidecarSet with its revision costs the caches %.0f bytes, more than %d", perSet, maxBytesPerSet)
	}
}

// BenchmarkInterner_Transform is the transform of one SidecarSet event and
// of its revision's: the scale bench's, decoded beforehand, each interned
// in turn while the stores hold the last version of every object.
func BenchmarkInterner_Transform(b *testing.B) {
	const n = 5000
	objs := make([]any, 0, 2*n)
	for i := range n {
		s, r := &appsv1beta1.SidecarSet{}, &appsv1.ControllerRevision{}
		if err := json.Unmarshal(scaleSetJSON(i), s); err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(scaleRevisionJSON(i), r); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, s, r)
	}
	in := NewInterner()
	store := make([]any, len(objs))
	i := 0
	for b.Loop() {
		k := i % len(objs)
		obj, err := in.Transform(objs[k])
		if err != nil {
			b.Fatal(err)
		}
		store[k] = obj
		i++
	}
	runtime.KeepAlive(store)
}

// maxBytesPerSet bounds what a SidecarSet of the scale bench and its
// revision cost the caches, the interner's tables included, with equal
// data, sidecars and labels shared (the bench's SidecarSets are stamped from
// one template) and the revisions indexed by a bucket of their SidecarSet's
// name (fieldindex.RevisionBucket). The test logs the figure.
const maxBytesPerSet = 3300
