package match

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func applicableSet(name, app string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name + "-c", Image: "busybox"}}},
		},
	}
	appsv1beta1.SetDefaults(s)
	return s
}

func TestApplicable(t *testing.T) {
	t.Parallel()
	paused := applicableSet("paused", "web")
	paused.Spec.InjectionStrategy.Paused = true
	pausedOtherApp := applicableSet("paused-other-app", "api")
	pausedOtherApp.Spec.InjectionStrategy.Paused = true
	otherNs := applicableSet("other-ns", "web")
	otherNs.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("other")
	badNs := applicableSet("bad-ns", "web")
	badNs.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}
	withNsLabels := func(s *appsv1beta1.SidecarSet, l map[string]string) *appsv1beta1.SidecarSet {
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: l}
		return s
	}
	noSelector := applicableSet("no-selector", "web")
	noSelector.Spec.Selector = nil
	badSelector := applicableSet("bad-selector", "web")
	badSelector.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	canary := func(name, base string) *appsv1beta1.SidecarSet {
		s := applicableSet(name, "web")
		s.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: base}
		return s
	}
	notCanary := canary("not-canary", "base")
	notCanary.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] = "True"
	pausedCanary := canary("paused-canary", "base")
	pausedCanary.Spec.InjectionStrategy.Paused = true

	applies := Verdict{Selects: true}
	pausedVerdict := func(selects bool) Verdict {
		return Verdict{Reason: ReasonInjectionPaused, Message: "spec.injectionStrategy.paused is true", Selects: selects}
	}
	notSelected := Verdict{Reason: ReasonPodNotSelected, Message: "its selector does not match the pod's labels"}
	replaced := func(by string) Verdict {
		return Verdict{Reason: ReasonReplacedByCanary, Selects: true,
			Message: `canary SidecarSet "` + by + `" also matches the pod and is injected instead`}
	}
	const corrupt = `{"a":`
	pinned := func(s *appsv1beta1.SidecarSet, record string) *appsv1beta1.SidecarSet {
		s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("default")
		s.Annotations = map[string]string{appsv1beta1.NamespaceUIDsAnnotation: record}
		return s
	}
	withUID := func(s *appsv1beta1.SidecarSet, uid string) *appsv1beta1.SidecarSet {
		s.UID = types.UID(uid)
		return s
	}
	pinnedCanary := func(name, base, baseUID string) *appsv1beta1.SidecarSet {
		s := canary(name, base)
		s.Annotations[appsv1beta1.CanaryBaseUIDAnnotation] = baseUID
		return s
	}
	namespaceReplaced := Verdict{Reason: ReasonNamespaceReplaced, Selects: true,
		Message: `namespace "default" was deleted and created again since the SidecarSet was written (UID ns-1 then, ns-2 now): ` +
			`it applies there only once someone allowed to create pods there writes it again`}

	tests := []struct {
		name string
		sets []*appsv1beta1.SidecarSet
		// compiled gives the candidates spec.selector compiled, as the
		// registry keeps it.
		compiled    bool
		ns          PodNamespace
		inactive    bool
		annotations map[string]string
		want        []Verdict
		wantState   podstate.State
		wantErr     string
	}{
		{
			name: "paused, other namespace, other labels and nil selector do not apply, each with its reason",
			sets: []*appsv1beta1.SidecarSet{applicableSet("match", "web"), paused, pausedOtherApp, otherNs,
				applicableSet("other-app", "api"), noSelector},
			want: []Verdict{applies, pausedVerdict(true), pausedVerdict(false),
				{Reason: ReasonNamespaceNotSelected, Message: `it does not select namespace "default"`},
				notSelected, notSelected},
		},
		{
			name:     "the same verdicts from compiled selectors",
			sets:     []*appsv1beta1.SidecarSet{applicableSet("match", "web"), paused, applicableSet("other-app", "api"), noSelector},
			compiled: true,
			want:     []Verdict{applies, pausedVerdict(true), notSelected, notSelected},
		},
		{
			name: "namespace labels not read: only the SidecarSets that need them and select the pod are unknown",
			sets: []*appsv1beta1.SidecarSet{
				applicableSet("no-namespace-selector", "web"),
				withNsLabels(applicableSet("needs-labels", "web"), map[string]string{"team": "a"}),
				withNsLabels(applicableSet("needs-labels-other-app", "api"), map[string]string{"team": "a"}),
				withNsLabels(applicableSet("by-name", "web"), map[string]string{NamespaceNameLabel: "default"}),
			},
			ns: PodNamespace{LabelsError: errors.New("the cache does not have it")},
			want: []Verdict{applies,
				{Reason: ReasonNamespaceLabelsUnknown, Message: `its namespaceSelector cannot be evaluated: the labels of namespace "default" could not be read: the cache does not have it`},
				notSelected, applies},
		},
		{
			name: "a namespaceSelector matches the namespace's labels",
			sets: []*appsv1beta1.SidecarSet{withNsLabels(applicableSet("prod-ns", "web"), map[string]string{"env": "prod"})},
			ns:   PodNamespace{Name: "shop", Labels: map[string]string{"env": "prod"}},
			want: []Verdict{applies},
		},
		{
			name: "an invalid namespaceSelector selects nothing, as in OpenKruise",
			sets: []*appsv1beta1.SidecarSet{badNs},
			want: []Verdict{{Reason: ReasonInvalidNamespaceSelector,
				Message: `its namespace selection cannot be evaluated: invalid namespaceSelector: "Bogus" is not a valid label selector operator`}},
		},
		{
			name: "an invalid selector selects no pod and blocks none (OpenKruise denies the pod)",
			sets: []*appsv1beta1.SidecarSet{applicableSet("fine", "web"), badSelector},
			want: []Verdict{applies, {Reason: ReasonInvalidSelector,
				Message: `its selector cannot be evaluated, so it selects no pod: invalid selector: "Bogus" is not a valid label selector operator`}},
		},
		{
			name: "a canary that applies replaces its base",
			sets: []*appsv1beta1.SidecarSet{applicableSet("base", "web"), canary("canary", "base")},
			want: []Verdict{replaced("canary"), applies},
		},
		{
			name: "a canary replaces the base it was written for",
			sets: []*appsv1beta1.SidecarSet{withUID(applicableSet("base", "web"), "base-1"), pinnedCanary("canary", "base", "base-1")},
			want: []Verdict{replaced("canary"), applies},
		},
		{
			name: "a canary does not replace a base created again since it was written: the base applies, the canary is left out",
			sets: []*appsv1beta1.SidecarSet{withUID(applicableSet("base", "web"), "base-2"), pinnedCanary("canary", "base", "base-1")},
			want: []Verdict{applies, {Reason: ReasonCanaryBaseReplaced, Selects: true,
				Message: `its base "base" was deleted and created again since the canary was written (UID base-1 then, base-2 now): ` +
					`the canary is left out, and the base applies, until the canary is written again`}},
		},
		{
			name: "a canary that records no base (OpenKruise's) replaces its base by name",
			sets: []*appsv1beta1.SidecarSet{withUID(applicableSet("base", "web"), "base-2"), canary("canary", "base")},
			want: []Verdict{replaced("canary"), applies},
		},
		{
			name: "a SidecarSet applies in the namespace it was written for",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned", "web"), `{"default":"ns-1"}`)},
			ns:   PodNamespace{UID: "ns-1"},
			want: []Verdict{applies},
		},
		{
			name: "a SidecarSet does not apply in a namespace of the same name created again since it was written",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned", "web"), `{"default":"ns-1"}`), applicableSet("unpinned", "web")},
			ns:   PodNamespace{UID: "ns-2"},
			want: []Verdict{namespaceReplaced, applies},
		},
		{
			name: "a namespace that did not exist when the SidecarSet was written, or no record (OpenKruise's), is matched by name",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned-other", "web"), `{"other":"ns-9"}`),
				withNsLabels(applicableSet("by-name", "web"), map[string]string{NamespaceNameLabel: "default"})},
			ns:   PodNamespace{UID: "ns-2"},
			want: []Verdict{applies, applies},
		},
		{
			name: "a namespace whose UID the caller does not know (the plugin's offline state) is matched by name",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned", "web"), `{"default":"ns-1"}`)},
			want: []Verdict{applies},
		},
		{
			name: "a namespace that could not be read leaves a SidecarSet recording its UID undecided",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned", "web"), `{"default":"ns-1"}`)},
			ns:   PodNamespace{LabelsError: errors.New("the cache does not have it")},
			want: []Verdict{{Reason: ReasonNamespaceLabelsUnknown,
				Message: `whether namespace "default" is the one it was written for cannot be told: the namespace could not be read: the cache does not have it`}},
		},
		{
			name: "a record that cannot be read matches no namespace",
			sets: []*appsv1beta1.SidecarSet{pinned(applicableSet("pinned", "web"), `{"default":`)},
			ns:   PodNamespace{UID: "ns-1"},
			want: []Verdict{{Reason: ReasonNamespaceReplaced, Selects: true,
				Message: "its record of the namespaces it was written for cannot be read (annotation sidecarset-operator.dev/namespace-uids: " +
					"unexpected end of JSON input): write the SidecarSet again"}},
		},
		{
			name: "a paused canary replaces nothing",
			sets: []*appsv1beta1.SidecarSet{applicableSet("base", "web"), pausedCanary},
			want: []Verdict{applies, pausedVerdict(true)},
		},
		{
			name: "a paused base whose canary applies is said paused",
			sets: []*appsv1beta1.SidecarSet{func() *appsv1beta1.SidecarSet {
				s := applicableSet("base", "web")
				s.Spec.InjectionStrategy.Paused = true
				return s
			}(),
				canary("canary", "base")},
			want: []Verdict{pausedVerdict(true), applies},
		},
		{
			name: "a canary annotation other than exactly true is not a canary",
			sets: []*appsv1beta1.SidecarSet{applicableSet("base", "web"), notCanary},
			want: []Verdict{applies, applies},
		},
		{
			name: "a canary naming itself as base replaces nothing",
			sets: []*appsv1beta1.SidecarSet{canary("self", "self")},
			want: []Verdict{applies},
		},
		{
			name: "two canaries of one base: the base is replaced once, by the first",
			sets: []*appsv1beta1.SidecarSet{canary("canary-1", "base"), canary("canary-2", "base"), applicableSet("base", "web")},
			want: []Verdict{applies, applies, replaced("canary-1")},
		},
		{
			name:     "an inactive pod gets nothing",
			sets:     []*appsv1beta1.SidecarSet{applicableSet("match", "web"), applicableSet("other-app", "api")},
			inactive: true,
			want: []Verdict{{Reason: ReasonPodInactive, Message: "the pod has terminated or is being deleted"},
				{Reason: ReasonPodInactive, Message: "the pod has terminated or is being deleted"}},
		},
		{
			name: "the recorded state is decoded when a SidecarSet selects the pod",
			sets: []*appsv1beta1.SidecarSet{applicableSet("match", "web")},
			annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: `{"match":"h"}`,
				appsv1beta1.SidecarSetListAnnotation: "match", appsv1beta1.InPlaceUpdateStateAnnotation: "{not json"},
			want: []Verdict{applies},
			wantState: podstate.State{Hashes: podstate.Hashes{"match": {Hash: "h", SidecarSetName: "match"}},
				HashesWithoutImage: podstate.Hashes{}, Injected: []string{"match"}},
		},
		{
			name:        "a corrupt hash annotation is an error when a SidecarSet selects the pod, a paused one included",
			sets:        []*appsv1beta1.SidecarSet{paused},
			annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: corrupt},
			want:        []Verdict{pausedVerdict(true)},
			wantErr:     "malformed annotation kruise.io/sidecarset-hash: neither a map of hash entries nor a map of hashes: unexpected end of JSON input",
		},
		{
			name:        "a corrupt hash annotation is nobody's business when no SidecarSet selects the pod",
			sets:        []*appsv1beta1.SidecarSet{applicableSet("other-app", "api")},
			annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: corrupt},
			want:        []Verdict{notSelected},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default",
				Labels: map[string]string{"app": "web"}, Annotations: tc.annotations}}
			if tc.inactive {
				pod.Status.Phase = corev1.PodSucceeded
			}
			cands := make([]Candidate, len(tc.sets))
			for i, s := range tc.sets {
				cands[i] = Candidate{SidecarSet: s}
				if sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector); tc.compiled && err == nil && !IsEmpty(s.Spec.Selector) {
					cands[i].Selector = sel
				} else if tc.compiled {
					cands[i].Selector = labels.Nothing()
				}
			}
			got := Applicable(pod, tc.ns, cands)
			if diff := cmp.Diff(tc.want, got.Verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" {
				if got.RecordedError == nil || got.RecordedError.Error() != tc.wantErr {
					t.Fatalf("recorded error = %v, want %q", got.RecordedError, tc.wantErr)
				}
				return
			}
			if got.RecordedError != nil {
				t.Fatalf("recorded error = %v", got.RecordedError)
			}
			if diff := cmp.Diff(tc.wantState, got.Recorded, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("recorded state (-want +got):\n%s", diff)
			}
		})
	}
}
