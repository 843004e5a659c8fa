package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/api/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestDetectorMissing(t *testing.T) {
	t.Parallel()
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	set := func(name, app string, mutate ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name + "-c", Image: "busybox"}}},
			},
		}
		for _, m := range mutate {
			m(s)
		}
		appsv1beta1.SetDefaults(s)
		return s
	}
	paused := func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true }
	canaryOf := func(base string) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) {
			s.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: base}
		}
	}
	pinnedTo := func(uid string) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) {
			s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("shop")
			s.Annotations = map[string]string{appsv1beta1.NamespaceUIDsAnnotation: `{"shop":"` + uid + `"}`}
		}
	}
	baseUID := func(uid string) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) { s.UID = types.UID(uid) }
	}
	canaryOfUID := func(base, uid string) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) {
			canaryOf(base)(s)
			s.Annotations[appsv1beta1.CanaryBaseUIDAnnotation] = uid
		}
	}
	metadataOnly := func(s *appsv1beta1.SidecarSet) {
		s.Spec.Containers = nil
		s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"}}}
	}
	type podOpt func(*corev1.Pod)
	pod := func(opts ...podOpt) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"},
				CreationTimestamp: metav1.NewTime(created.Add(time.Hour))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	carrying := func(names ...string) podOpt {
		return func(p *corev1.Pod) {
			for _, n := range names {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n + "-c", Image: "busybox"})
			}
		}
	}
	annotated := func(key, value string) podOpt {
		return func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[key] = value
		}
	}
	recorded := func(names string) podOpt { return annotated(appsv1beta1.SidecarSetListAnnotation, names) }
	hashOf := func(name string) podOpt {
		return annotated(appsv1beta1.SidecarSetHashAnnotation, `{"`+name+`":{"hash":"h","sidecarSetName":"`+name+`"}}`)
	}
	corrupt := annotated(appsv1beta1.SidecarSetHashAnnotation, `{"agent":`)

	tests := []struct {
		name string
		sets []*appsv1beta1.SidecarSet
		pod  *corev1.Pod
		// namespaceUID is the UID of namespace shop in the cache.
		namespaceUID string
		want         map[string]string
	}{
		{
			name:         "a SidecarSet written for the pod's namespace reports a pod it missed",
			sets:         []*appsv1beta1.SidecarSet{set("agent", "web", pinnedTo("ns-1"))},
			pod:          pod(),
			namespaceUID: "ns-1",
			want:         map[string]string{"agent": match.NotInjectedAtAdmission},
		},
		{
			name:         "a SidecarSet written for a namespace of the same name deleted since reports its pods as left out for that",
			sets:         []*appsv1beta1.SidecarSet{set("agent", "web", pinnedTo("ns-1"))},
			pod:          pod(),
			namespaceUID: "ns-2",
			want:         map[string]string{"agent": match.NotInjectedNamespaceReplaced},
		},
		{
			name:         "a pod older than the SidecarSet in a namespace created again is reported for the namespace, not for a recreation",
			sets:         []*appsv1beta1.SidecarSet{set("agent", "web", pinnedTo("ns-1"))},
			pod:          pod(func(p *corev1.Pod) { p.CreationTimestamp = created }),
			namespaceUID: "ns-2",
			want:         map[string]string{"agent": match.NotInjectedNamespaceReplaced},
		},
		{
			name: "a canary of a base created again is reported left out, not as a name conflict with the base's sidecar of the same name",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web", baseUID("base-2")), set("agent-canary", "web", canaryOfUID("agent", "base-1"),
				func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Name = "agent-c" })},
			pod:  pod(carrying("agent"), hashOf("agent"), recorded("agent")),
			want: map[string]string{"agent-canary": match.NotInjectedCanaryBaseReplaced},
		},
		{
			name: "a canary of a base created again is reported left out, and the base is expected",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web", baseUID("base-2")), set("agent-canary", "web", canaryOfUID("agent", "base-1"))},
			pod:  pod(),
			want: map[string]string{"agent": match.NotInjectedAtAdmission, "agent-canary": match.NotInjectedCanaryBaseReplaced},
		},
		{
			name: "a pod carrying the sidecars its hash entry lists misses nothing",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod:  pod(carrying("agent"), hashOf("agent"), recorded("agent")),
		},
		{
			name: "a pod created after the SidecarSet without its sidecars was admitted without it",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod:  pod(),
			want: map[string]string{"agent": match.NotInjectedAtAdmission},
		},
		{
			name: "a pod created before the SidecarSet is reported so",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod:  pod(func(p *corev1.Pod) { p.CreationTimestamp = created }),
			want: map[string]string{"agent": match.NotInjectedCreatedBefore},
		},
		{
			name: "a SidecarSet that does not select the pod is not reported",
			sets: []*appsv1beta1.SidecarSet{set("agent", "api")},
			pod:  pod(),
		},
		{
			name: "an inactive pod misses nothing",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod:  pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		},
		{
			name: "the operator's own pod in its namespace misses nothing",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod: pod(func(p *corev1.Pod) {
				p.Namespace = "operator-system"
				p.Labels[appsv1beta1.OperatorPodLabel] = appsv1beta1.OperatorPodName
			}),
		},
		{
			name: "a paused SidecarSet's pod is reported paused",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web", paused)},
			pod:  pod(),
			want: map[string]string{"agent": match.NotInjectedPaused},
		},
		{
			name: "a base replaced by its canary is not reported, the canary is",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web"), set("agent-canary", "web", canaryOf("agent"))},
			pod:  pod(),
			want: map[string]string{"agent-canary": match.NotInjectedAtAdmission},
		},
		{
			name: "a paused canary replaces nothing",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web"), set("agent-canary", "web", canaryOf("agent"), paused)},
			pod:  pod(),
			want: map[string]string{"agent": match.NotInjectedAtAdmission, "agent-canary": match.NotInjectedPaused},
		},
		{
			name: "a canary with only patchPodMetadata replaces its base, as in the pod webhook",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web"), set("agent-canary", "web", canaryOf("agent"), metadataOnly)},
			pod:  pod(),
		},
		{
			name: "a SidecarSet with only patchPodMetadata never leaves a pod without sidecars",
			sets: []*appsv1beta1.SidecarSet{set("meta", "web", metadataOnly)},
			pod:  pod(),
		},
		{
			name: "a pod whose hash annotation is corrupt is reported unreadable, not guessed (the pod webhook denies such a pod)",
			sets: []*appsv1beta1.SidecarSet{set("agent", "web")},
			pod:  pod(carrying("agent"), corrupt, recorded("agent")),
			want: map[string]string{"agent": match.NotInjectedUnreadable},
		},
		{
			name: "a corrupt hash annotation does not matter to the SidecarSets that do not select the pod",
			sets: []*appsv1beta1.SidecarSet{set("agent", "api")},
			pod:  pod(corrupt),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := candidate.NewRegistry()
			for _, s := range tc.sets {
				if err := reg.Upsert(s); err != nil {
					t.Fatal(err)
				}
			}
			d := &Detector{Registry: reg, Namespace: "operator-system"}
			if tc.namespaceUID != "" {
				scheme := runtime.NewScheme()
				utilruntime.Must(clientgoscheme.AddToScheme(scheme))
				d.Cache = readerCache{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Namespace{
					ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: types.UID(tc.namespaceUID)}}).Build()}
			}
			got, err := d.missing(t.Context(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("missing SidecarSets (-want +got):\n%s", diff)
			}
		})
	}
}

// readerCache is a cache whose reads are the reader's; only reads are
// used.
type readerCache struct {
	cache.Cache
	Reader client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// A SidecarSet no pod misses any more holds no map: an empty one would
// keep the room it grew to.
func TestDetector_ForgetsEmptiedSidecarSets(t *testing.T) {
	t.Parallel()
	d := &Detector{bySet: map[string]map[types.NamespacedName]string{}, byPod: map[types.NamespacedName][]string{}, changed: map[string]bool{}}
	pods := []types.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}
	d.bySet["s"] = map[types.NamespacedName]string{}
	for _, p := range pods {
		d.bySet["s"][p] = "reason"
		d.byPod[p] = []string{"s"}
	}
	d.forget(pods[0])
	if len(d.bySet["s"]) != 1 {
		t.Fatalf("after one of two pods went: %v", d.bySet)
	}
	d.forget(pods[1])
	if _, held := d.bySet["s"]; held || !d.changed["s"] {
		t.Errorf("after the last pod went: bySet %v (want no entry for s), changed %v", d.bySet, d.changed)
	}
}
