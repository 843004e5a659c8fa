package detect

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
)

func TestMissing(t *testing.T) {
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
			reg, err := candidate.New(tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			entries := reg.Candidates(tc.pod.Namespace, tc.pod.Labels)
			ns := match.PodNamespace{Name: tc.pod.Namespace}
			if needsNamespace(tc.pod, entries) {
				ns.UID = types.UID(tc.namespaceUID)
			}
			var got map[string]string
			if !exempt(tc.pod, "operator-system") {
				got = missing(tc.pod, ns, entries)
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

func TestPodMatters(t *testing.T) {
	t.Parallel()
	injected := func(hashes podstate.Hashes) string { return hashes.Encode() }
	entry := func(hash, revision string, at int64, sidecars ...string) podstate.HashEntry {
		return podstate.HashEntry{UpdateTimestamp: metav1.Unix(at, 0), Hash: hash, SidecarSetName: "proxy", SidecarList: sidecars, ControllerRevision: revision}
	}
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "a",
			appsv1beta1.SidecarSetHashAnnotation: injected(podstate.Hashes{"proxy": entry("h1", "proxy-1", 100, "envoy")})}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "envoy"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for name, tc := range map[string]struct {
		change func(*corev1.Pod)
		want   bool
	}{
		"a status write":     {func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.1" }, false},
		"another annotation": {func(p *corev1.Pod) { p.Annotations["note"] = "b" }, false},
		"a label":            {func(p *corev1.Pod) { p.Labels["tier"] = "front" }, true},
		// An in-place upgrade: new hash, timestamp and revision, and an
		// in-place state; the same SidecarSet with the same sidecars.
		"an in-place upgrade's annotations": {func(p *corev1.Pod) {
			p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = injected(podstate.Hashes{"proxy": entry("h2", "proxy-2", 200, "envoy")})
			p.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation] = podstate.EncodeInPlaceState(map[string]*podstate.InPlaceUpdateState{
				"proxy": {Revision: "h2", UpdateTimestamp: metav1.Unix(200, 0)}})
		}, false},
		"a SidecarSet more": {func(p *corev1.Pod) {
			p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = injected(podstate.Hashes{"proxy": entry("h1", "proxy-1", 100, "envoy"),
				"log": {Hash: "l1", SidecarSetName: "log", SidecarList: []string{"fluent"}}})
		}, true},
		"a SidecarSet less": {func(p *corev1.Pod) { p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = "{}" }, true},
		"another sidecar list": {func(p *corev1.Pod) {
			p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = injected(podstate.Hashes{"proxy": entry("h1", "proxy-1", 100, "envoy", "init")})
		}, true},
		"unreadable hashes":      {func(p *corev1.Pod) { p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = "{not json" }, true},
		"the end of the pod":     {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"a container more":       {func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "x"}) }, true},
		"an init container more": {func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "x"}} }, true},
	} {
		p := base.DeepCopy()
		tc.change(p)
		if got := podMatters(base, p); got != tc.want {
			t.Errorf("%s: podMatters %v, want %v", name, got, tc.want)
		}
		// As the pod cache holds them: the SidecarSet annotations
		// compacted.
		compacted := func(pod *corev1.Pod) *corev1.Pod {
			out := pod.DeepCopy()
			out.Annotations, _ = podstate.Compact(pod.Annotations)
			return out
		}
		if got := podMatters(compacted(base), compacted(p)); got != tc.want {
			t.Errorf("%s, cached: podMatters %v, want %v", name, got, tc.want)
		}
	}
}

func TestRescanNeeded(t *testing.T) {
	t.Parallel()
	entry := func(mutate func(*appsv1beta1.SidecarSet)) *candidate.Entry {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "u1", Generation: 1,
			Annotations: map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true"}}}
		if mutate != nil {
			mutate(s)
		}
		return &candidate.Entry{SidecarSet: s}
	}
	old := entry(nil)
	for name, tc := range map[string]struct {
		old, current *candidate.Entry
		want         bool
	}{
		"a creation":              {nil, old, true},
		"a deletion":              {old, nil, true},
		"a status write":          {old, entry(func(s *appsv1beta1.SidecarSet) { s.ResourceVersion = "2"; s.Status.MatchedPods = 3 }), false},
		"a label":                 {old, entry(func(s *appsv1beta1.SidecarSet) { s.Labels = map[string]string{"team": "a"} }), false},
		"a spec change":           {old, entry(func(s *appsv1beta1.SidecarSet) { s.Generation = 2 }), true},
		"an annotation change":    {old, entry(func(s *appsv1beta1.SidecarSet) { s.Annotations = nil }), true},
		"a recreation, same name": {old, entry(func(s *appsv1beta1.SidecarSet) { s.UID = "u2" }), true},
	} {
		if got := rescanNeeded(tc.old, tc.current); got != tc.want {
			t.Errorf("%s: rescanNeeded %v, want %v", name, got, tc.want)
		}
	}
}
