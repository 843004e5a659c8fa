package cachetransform

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/test/heap"
)

// scalePodJSON is a pod of the scale bench as the API server holds it once
// injected and running on a kwok node: a Deployment's pod with its app
// container, the rollout's agent and one more SidecarSet's sidecar.
func scalePodJSON(i int) []byte {
	pod := fmt.Sprintf(`{"metadata":{"name":"scale-app-7f9c8d6b5-%05d","generateName":"scale-app-7f9c8d6b5-","namespace":"scale-%03d",
"uid":"0c7a1d2e-3f4b-4c5d-8e9f-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-24T10:00:00Z",
"labels":{"app":"scale-app","shard":"%d","sidecarset-bench.dev/scale":"true","pod-template-hash":"7f9c8d6b5"},
"annotations":{"kruise.io/sidecarset-hash":"{\"extra-07\":{\"updateTimestamp\":\"2026-11-24T10:@INJECTED@\",\"hash\":\"8b7x4d9v2wz6f4c2\",\"sidecarSetName\":\"scale-0007\",\"sidecarList\":[\"extra-07\"],\"controllerRevision\":\"scale-0007-5d8f7c6b9\"},\"scale-rollout\":{\"updateTimestamp\":\"2026-11-24T10:@INJECTED@\",\"hash\":\"w6z2f8x4c9d7v5b2\",\"sidecarSetName\":\"scale-rollout\",\"sidecarList\":[\"agent\"],\"controllerRevision\":\"scale-rollout-6c9f8b7d5\"}}",
"kruise.io/sidecarset-hash-without-image":"{\"extra-07\":{\"updateTimestamp\":\"2026-11-24T10:@INJECTED@\",\"hash\":\"4c9x2w8v6b7d5f2z\",\"sidecarSetName\":\"scale-0007\",\"sidecarList\":[\"extra-07\"]},\"scale-rollout\":{\"updateTimestamp\":\"2026-11-24T10:@INJECTED@\",\"hash\":\"v8b6x2w4c9z7d5f2\",\"sidecarSetName\":\"scale-rollout\",\"sidecarList\":[\"agent\"]}}",
"kruise.io/sidecarset-injected-list":"scale-0007,scale-rollout",
"sidecarset-operator.dev/reach":"{\"scale-0007\":\"\",\"scale-rollout\":\"\"}"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"scale-app-7f9c8d6b5","uid":"9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d","controller":true,"blockOwnerDeletion":true}]},
"spec":{"containers":[
{"name":"app","image":"nginx:1.25","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},
{"name":"agent","image":"busybox:1.1","resources":{},"resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"},{"resourceName":"memory","restartPolicy":"NotRequired"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},
{"name":"extra-07","image":"busybox:1.36","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"kwok-node-%d","schedulerName":"default-scheduler"},
"status":{"phase":"Running","conditions":[
{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-24T10:@STARTED@"},
{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-24T10:@STARTED@"},
{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-24T10:@STARTED@"},
{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-24T10:@INJECTED@"}],
"hostIP":"10.0.0.%d","podIP":"10.0.%d.%d","startTime":"2026-11-24T10:@STARTED@",
"containerStatuses":[
{"name":"agent","state":{"running":{"startedAt":"2026-11-24T10:@STARTED@"}},"lastState":{},"ready":true,"restartCount":0,"image":"busybox:1.1","imageID":"docker-pullable://busybox@sha256:4be429a5fbb2e71ae7958bfa558bc637cf3a61baf40a708cb8fff532b39e52d0","started":true},
{"name":"app","state":{"running":{"startedAt":"2026-11-24T10:@STARTED@"}},"lastState":{},"ready":true,"restartCount":0,"image":"nginx:1.25","imageID":"docker-pullable://nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31","started":true},
{"name":"extra-07","state":{"running":{"startedAt":"2026-11-24T10:@STARTED@"}},"lastState":{},"ready":true,"restartCount":0,"image":"busybox:1.36","imageID":"docker-pullable://busybox@sha256:4be429a5fbb2e71ae7958bfa558bc637cf3a61baf40a708cb8fff532b39e52d0","started":true}],
"qosClass":"BestEffort"}}`, i, i%100, i, 1000+i, i%50, i%100, i%100, i/250, i%250)
	pod = strings.ReplaceAll(pod, "@INJECTED@", injectedAt(i))
	return []byte(strings.ReplaceAll(pod, "@STARTED@", injectedAt(i+100))) // a second later
}

// injectedAt is the minute and second the i-th pod was injected at: the
// bench creates about 100 pods a second, and a pod's SidecarSet state, its
// containers' start and its conditions record the second.
func injectedAt(i int) string {
	return fmt.Sprintf("%02d:%02dZ", i/100/60, i/100%60)
}

// cachedPods is the pod cache as the manager builds it: the transform,
// and the namespace and injected-list indexes.
type cachedPods struct {
	indexer toolscache.Indexer
	cache   *PodCache
}

func newCachedPods() *cachedPods {
	return &cachedPods{
		indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, withNamespaceIndex(fieldindex.CacheIndexers(&corev1.Pod{}))),
		cache:   NewPodCache(),
	}
}

// put decodes a version of a pod and files it, as the informer does.
func (c *cachedPods) put(t *testing.T, raw []byte) {
	t.Helper()
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatal(err)
	}
	obj, err := c.cache.Trim(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.indexer.Update(obj); err != nil {
		t.Fatal(err)
	}
}

// podFootprint is the live heap, in bytes per pod, that n pods of the
// scale bench cost in the pod cache as the manager builds it, its tables
// of shared values included.
func podFootprint(t *testing.T, n int) float64 {
	t.Helper()
	pods := newCachedPods()
	before := heap.Live()
	for i := range n {
		pods.put(t, scalePodJSON(i))
	}
	after := heap.Live()
	// The manager keeps the cache and its tables for its lifetime: so does
	// the measure.
	runtime.KeepAlive(pods)
	return float64(after-before) / float64(n)
}

// BenchmarkPodCache_Trim is the transform of one pod event: the scale
// bench's pods, decoded beforehand, each trimmed in turn while the store
// holds the last version of every pod, as the informer's does.
func BenchmarkPodCache_Trim(b *testing.B) {
	const n = 5000
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{}
		if err := json.Unmarshal(scalePodJSON(i), pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	c := NewPodCache()
	store := make([]any, n)
	i := 0
	for b.Loop() {
		obj, err := c.Trim(pods[i%n])
		if err != nil {
			b.Fatal(err)
		}
		store[i%n] = obj
		i++
	}
	runtime.KeepAlive(store)
}

// withNamespaceIndex adds the namespace index every informer of the
// manager's cache has.
func withNamespaceIndex(indexers toolscache.Indexers) toolscache.Indexers {
	indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
	return indexers
}

// maxBytesPerPod bounds what a pod of the scale bench costs the pod cache,
// its tables of shared values included, with the pods injected, started and
// ready in the same second sharing their annotations, container statuses
// and conditions, and after rollouts (TestPodFootprint_AfterRollouts: the
// values of past pod versions are not kept). The tests log the figures; the
// operator-wide one is make bench-scale's live heap growth per 1 000 pods.
const maxBytesPerPod = 2000

// TestPodFootprint is not parallel: it measures the live heap.
func TestPodFootprint(t *testing.T) {
	perPod := podFootprint(t, 5000)
	t.Logf("%.0f bytes per pod", perPod)
	if perPod > maxBytesPerPod {
		t.Errorf("a pod costs the cache %.0f bytes, more than %d", perPod, maxBytesPerPod)
	}
}

// rolledPodJSON is the i-th pod of the scale bench at step of its rollout-th
// rollout: its containers restarted at the moment of that step, which the
// rollout reaches about 20 pods a second.
func rolledPodJSON(i, rollout, step int) []byte {
	pod := string(scalePodJSON(i))
	at := fmt.Sprintf("2026-11-24T%02d:%02d:%02dZ", 11+rollout, step*5+i/20/60, i/20%60)
	pod = strings.ReplaceAll(pod, "2026-11-24T10:"+injectedAt(i+100), at)
	return []byte(strings.ReplaceAll(pod, `"restartCount":0`, fmt.Sprintf(`"restartCount":%d`, rollout+1)))
}

// TestPodFootprint_AfterRollouts: what the pods held before their rollouts
// (container statuses, conditions) is not kept once no pod holds it. Not
// parallel: it measures the live heap.
func TestPodFootprint_AfterRollouts(t *testing.T) {
	const n, rollouts, steps = 5000, 3, 3
	pods := newCachedPods()
	before := heap.Live()
	for i := range n {
		pods.put(t, scalePodJSON(i))
	}
	for r := range rollouts {
		for s := range steps {
			for i := range n {
				pods.put(t, rolledPodJSON(i, r, s))
			}
		}
	}
	perPod := float64(heap.Live()-before) / n
	runtime.KeepAlive(pods)
	t.Logf("%.0f bytes per pod after %d rollouts of %d steps", perPod, rollouts, steps)
	if perPod > maxBytesPerPod {
		t.Errorf("a pod costs the cache %.0f bytes after its rollouts, more than %d", perPod, maxBytesPerPod)
	}
}
