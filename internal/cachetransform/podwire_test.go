package cachetransform

import (
	"bytes"
	"context"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// protobufInfo is client-go's protobuf serializer, the API server's too.
func protobufInfo(tb testing.TB) runtime.SerializerInfo {
	tb.Helper()
	info, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		tb.Fatal("no protobuf serializer")
	}
	return info
}

func encodePod(tb testing.TB, pod *corev1.Pod) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := clientgoscheme.Codecs.EncoderForVersion(protobufInfo(tb).Serializer, corev1.SchemeGroupVersion)
	if err := enc.Encode(pod, &b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func decodePod(tb testing.TB, data []byte) *corev1.Pod {
	tb.Helper()
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		tb.Fatalf("decoding the pod: %v", err)
	}
	return obj.(*corev1.Pod)
}

// A pod filtered on the wire and trimmed is the pod trimmed: the filters
// keep every field Trim reads, over random pods (every field of the Pod
// filled at random, with and without each optional one).
func TestFilterPod_TrimSeesTheSamePod(t *testing.T) {
	t.Parallel()
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(20261129), clientgoscheme.Codecs).NilChance(0.2).NumElements(1, 3)
	full, filtered := 0, 0
	for i := range 300 {
		pod := &corev1.Pod{}
		f.Fill(pod)
		pod.APIVersion, pod.Kind = "v1", "Pod"
		if i%2 == 0 {
			// The conditions and states Trim keeps, with values it reads.
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}})
		}
		data := encodePod(t, pod)
		out, ok := filterPodObject(nil, data)
		if !ok {
			t.Fatalf("pod %d: not filtered", i)
		}
		full, filtered = full+len(data), filtered+len(out)
		c := NewPodCache()
		want, err := c.Trim(decodePod(t, data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Trim(decodePod(t, out))
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("pod %d: trimmed after the filter differs (-without +with):\n%s", i, cmp.Diff(want, got))
		}
	}
	t.Logf("random pods: %d bytes, %d filtered", full, filtered)
}

// A pod as a Deployment's controller, the scheduler, a kubelet and the
// operator write it: the filter drops what Trim does not keep (the
// managedFields, volumes, environment, probes, tolerations, addresses).
func TestFilterPod_DropsWhatTrimDoesNotKeep(t *testing.T) {
	t.Parallel()
	pod := realisticPod()
	out, ok := filterPodObject(nil, encodePod(t, pod))
	if !ok {
		t.Fatal("not filtered")
	}
	got := decodePod(t, out)
	want := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u1", ResourceVersion: "42",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha256:1", Ready: true}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("filtered pod (-want +got):\n%s", diff)
	}
}

// BenchmarkPodWatchEvent decodes a pod of a watch event as client-go does,
// without the filter and after it.
func BenchmarkPodWatchEvent(b *testing.B) {
	data := encodePod(b, realisticPod())
	for _, filter := range []bool{false, true} {
		b.Run(map[bool]string{false: "decoded", true: "filtered,decoded"}[filter], func(b *testing.B) {
			b.ReportAllocs()
			var scratch []byte // reused, as a stream reuses it
			for b.Loop() {
				in := data
				if filter {
					scratch, _ = filterPodObject(scratch[:0], data)
					in = scratch
				}
				if _, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(in, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func realisticPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u1", ResourceVersion: "42",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:spec":{}}`, 50))}}},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}}}}}},
			Containers: []corev1.Container{{Name: "app", Image: "app:1",
				Env:            []corev1.EnvVar{{Name: "A", Value: "1"}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.168.0.1",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha256:1", ContainerID: "containerd://1", Ready: true}}},
	}
}

// A client whose transport filters pod watches receives, through the
// protobuf watch stream, the pods filtered and every other event as it
// was; other requests, and a JSON watch, go untouched.
func TestFilterPodWatches_Stream(t *testing.T) {
	t.Parallel()
	info := protobufInfo(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{NodeName: "n", Tolerations: []corev1.Toleration{{Key: "k"}}}}
	// A smaller pod after it: the stream reuses its buffers, and the
	// first pod's bytes must not leak into the second.
	smaller := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default", ResourceVersion: "9"}}
	status := &metav1.Status{Status: metav1.StatusFailure, Message: "too old", Reason: metav1.StatusReasonExpired, Code: http.StatusGone}
	var watches []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		watches = append(watches, req.URL.String())
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		enc := streaming.NewEncoder(info.StreamSerializer.NewFrameWriter(w), info.StreamSerializer.Serializer)
		embedded := clientgoscheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
		for _, e := range []struct {
			typ watch.EventType
			obj runtime.Object
		}{{watch.Added, pod}, {watch.Modified, pod}, {watch.Modified, smaller}, {watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "8"}}}, {watch.Error, status}} {
			raw, err := runtime.Encode(embedded, e.obj)
			if err != nil {
				t.Error(err)
				return
			}
			if err := enc.Encode(&metav1.WatchEvent{Type: string(e.typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
				t.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}}
	cfg.Wrap(FilterPodWatches)
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ns := range []string{"", "default"} {
		w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []watch.Event
		for e := range w.ResultChan() {
			got = append(got, e)
		}
		filtered := pod.DeepCopy()
		filtered.ManagedFields, filtered.Spec.Tolerations = nil, nil
		want := []watch.Event{{Type: watch.Added, Object: filtered}, {Type: watch.Modified, Object: filtered}, {Type: watch.Modified, Object: smaller},
			{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "8"}}}, {Type: watch.Error, Object: status}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("namespace %q: events (-want +got):\n%s", ns, diff)
		}
	}
	if len(watches) != 2 {
		t.Errorf("watches: %v", watches)
	}
}

func TestIsPodWatch(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"/api/v1/pods?watch=true":                        true,
		"/api/v1/namespaces/ns/pods?watch=1":             true,
		"/prefix/api/v1/namespaces/ns/pods?watch=true":   true,
		"/api/v1/pods":                                   false,
		"/api/v1/namespaces/ns/pods/web-0?watch=true":    false,
		"/api/v1/configmaps?watch=true":                  false,
		"/apis/apps/v1/namespaces/ns/pods?watch=true":    false,
		"/api/v1/namespaces/ns/pods?watch=false":         false,
		"/api/v1/namespaces/pods/configmaps?watch=true":  false,
		"/api/v1/namespaces/ns/pods/eviction?watch=true": false,
	} {
		req := httptest.NewRequest(http.MethodGet, url, nil)
		if got := isPodWatch(req); got != want {
			t.Errorf("%s: %v, want %v", url, got, want)
		}
	}
}
