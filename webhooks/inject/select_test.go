package inject

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func names(cands []*Candidate) []string {
	var out []string
	for _, c := range cands {
		out = append(out, c.SidecarSet.Name)
	}
	return out
}

func TestOrderCandidates_SortsByNameAndKeepsEachOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []Candidate
		want    []string
		wantErr string
	}{
		{
			name: "candidates in cache order are sorted by name",
			in: []Candidate{candidateOf(newSidecarSet("c", "x")), candidateOf(newSidecarSet("a", "x")),
				candidateOf(newSidecarSet("b", "x"))},
			want: []string{"a", "b", "c"},
		},
		{
			name: "a SidecarSet listed twice is kept once",
			in: []Candidate{candidateOf(newSidecarSet("b", "x")), candidateOf(newSidecarSet("a", "x")),
				candidateOf(newSidecarSet("b", "x"))},
			want: []string{"a", "b"},
		},
		{
			name:    "a candidate without SidecarSet is an error",
			in:      []Candidate{candidateOf(newSidecarSet("a", "x")), {}},
			wantErr: "candidate 1 has no SidecarSet",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := orderCandidates(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMatchCandidates_SplitsByVerdict checks only how injection splits
// match.Applicable's verdicts; the verdicts are tested in api/match.
func TestMatchCandidates_SplitsByVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
		wantSkips   []Skip
		wantUnknown []string
		wantErr     string
	}{
		{
			name: "applying, skipped and unknown SidecarSets are told apart",
			want: []string{"match"},
			wantSkips: []Skip{{SidecarSet: "other-app", Reason: ReasonPodNotSelected,
				Message: "its selector does not match the pod's labels"}},
			wantUnknown: []string{"needs-labels"},
		},
		{
			name:        "a corrupt hash annotation is the error that denies the pod",
			annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: "[1]"},
			want:        []string{"match"},
			wantSkips: []Skip{{SidecarSet: "other-app", Reason: ReasonPodNotSelected,
				Message: "its selector does not match the pod's labels"}},
			wantUnknown: []string{"needs-labels"},
			wantErr: "pod malformed annotation kruise.io/sidecarset-hash: neither a map of hash entries nor a map of hashes: " +
				"json: cannot unmarshal array into Go value of type map[string]string; fix or remove it to create the pod",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cands []*Candidate
			for _, s := range []*appsv1beta1.SidecarSet{newSidecarSet("match", "web", "a"), newSidecarSet("other-app", "api", "a"),
				withNamespaceSelector(newSidecarSet("needs-labels", "web", "a"), map[string]string{"team": "a"})} {
				c := candidateOf(s)
				cands = append(cands, &c)
			}
			pod := newPod("web", "web")
			pod.Annotations = tc.annotations
			got, skips, unknown, _, err := matchCandidates(cands, pod, Namespace{LabelsError: errors.New("not in the cache")})
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("matched (-want +got):\n%s", diff)
			}
			var undecided []*Candidate
			for _, u := range unknown {
				undecided = append(undecided, u.c)
			}
			if diff := cmp.Diff(tc.wantUnknown, names(undecided)); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, skips); diff != "" {
				t.Errorf("skips (-want +got):\n%s", diff)
			}
			if gotErr := fmt.Sprint(err); tc.wantErr != "" && gotErr != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestChooseVersion_RevisionPinning(t *testing.T) {
	t.Parallel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "agent-abc")
	type setup struct {
		policy         appsv1beta1.SidecarSetInjectRevisionPolicy
		revisionName   *string
		customVersion  *string
		paused         bool
		selector       *metav1.LabelSelector
		partition      *intstr.IntOrString
		pinnedError    error
		noPinned       bool
		pinnedRevision string
	}
	tests := []struct {
		name        string
		setup       setup
		podLabels   map[string]string
		coin        float64
		wantHistory bool
		wantRev     string
		wantErr     string
		wantIs      error
	}{
		{name: "no pin injects the live spec", setup: setup{noPinned: true}, wantRev: "agent-live"},
		{name: "policy Always injects the pinned revision", setup: setup{policy: "Always", revisionName: new("agent-abc")},
			wantHistory: true, wantRev: "agent-abc"},
		{name: "a pinned revision without name records the restored latestRevision",
			setup:       setup{policy: "Always", customVersion: new("v1"), pinnedRevision: "-"},
			wantHistory: true, wantRev: "agent-restored"},
		{name: "updateStrategy.paused injects the pinned revision even with Partial 0%",
			setup:       setup{policy: "Partial", revisionName: new("agent-abc"), paused: true, partition: new(intstr.FromString("0%"))},
			wantHistory: true, wantRev: "agent-abc"},
		{name: "Partial with an integer partition injects the latest",
			setup:   setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromInt32(3))},
			wantRev: "agent-live"},
		{name: "Partial 0% injects the latest even for the lowest coin",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("0%"))},
			coin:  0, wantRev: "agent-live"},
		{name: "Partial 100% injects the pinned revision even for the highest coin",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("100%"))},
			coin:  0.9999, wantHistory: true, wantRev: "agent-abc"},
		{name: "Partial 50% with a coin below 0.5 injects the pinned revision",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("50%"))},
			coin:  0.49, wantHistory: true, wantRev: "agent-abc"},
		{name: "Partial 50% with a coin of 0.5 injects the latest",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("50%"))},
			coin:  0.5, wantRev: "agent-live"},
		{name: "Partial with a pod outside updateStrategy.selector injects the pinned revision",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"),
				selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}},
			wantHistory: true, wantRev: "agent-abc"},
		{name: "Partial with a pod inside updateStrategy.selector injects the latest",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"),
				selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}},
			podLabels: map[string]string{"canary": "true"}, wantRev: "agent-live"},
		{name: "Partial with an invalid updateStrategy.selector denies the pod",
			setup: setup{policy: "Partial", revisionName: new("agent-abc"),
				selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}},
			wantErr: `SidecarSet "agent": updateStrategy.selector: invalid selector: "Bogus" is not a valid label selector operator`},
		{name: "Partial with a malformed percentage denies the pod",
			setup:   setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("half"))},
			wantErr: `SidecarSet "agent": updateStrategy.partition "half": "half" is neither an integer nor a percentage (N%)`},
		{name: "Partial with a bare number as partition denies the pod, as the CRD and the rollout refuse it",
			setup:   setup{policy: "Partial", revisionName: new("agent-abc"), partition: new(intstr.FromString("50"))},
			wantErr: `SidecarSet "agent": updateStrategy.partition "50": "50" is neither an integer nor a percentage (N%)`},
		{name: "a missing revisionName denies the pod, naming SidecarSet and revision",
			setup: setup{policy: "Always", revisionName: new("agent-abc"), pinnedError: notFound},
			wantErr: `SidecarSet "agent": injectionStrategy.revision revisionName "agent-abc" not found; ` +
				`pods matching it cannot be created until it exists or the pin is removed`,
			wantIs: notFound},
		{name: "a missing customVersion denies the pod, naming it",
			setup: setup{policy: "Partial", customVersion: new("v1"), pinnedError: notFound},
			wantErr: `SidecarSet "agent": injectionStrategy.revision customVersion "v1" not found; ` +
				`pods matching it cannot be created until it exists or the pin is removed`,
			wantIs: notFound},
		{name: "another lookup error denies the pod with the cause",
			setup: setup{policy: "Always", revisionName: new("agent-abc"), pinnedError: errors.New("cache not synced")},
			wantErr: `SidecarSet "agent": injectionStrategy.revision revisionName "agent-abc" cannot be resolved ` +
				`(cache not synced); pods matching it cannot be created until it can or the pin is removed`},
		{name: "a pin the shell did not resolve denies the pod",
			setup:   setup{policy: "Always", revisionName: new("agent-abc"), noPinned: true},
			wantErr: `SidecarSet "agent": injectionStrategy.revision revisionName "agent-abc" was not resolved; pods matching it cannot be created until it is`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live := newSidecarSet("agent", "web", "agent")
			live.Status.LatestRevision = "agent-live"
			us := &live.Spec.UpdateStrategy
			us.Paused, us.Selector = tc.setup.paused, tc.setup.selector
			if tc.setup.partition != nil {
				us.Partition = tc.setup.partition
			}
			if tc.setup.revisionName != nil || tc.setup.customVersion != nil {
				live.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{
					RevisionName: tc.setup.revisionName, CustomVersion: tc.setup.customVersion, Policy: tc.setup.policy,
				}
			}
			c := candidateOf(live)
			c.PinnedError = tc.setup.pinnedError
			restored := live.DeepCopy()
			restored.Spec.Containers[0].Image = "agent:0.9"
			restored.Status.LatestRevision = "agent-restored"
			if !tc.setup.noPinned && tc.setup.pinnedError == nil {
				rev := "agent-abc"
				if tc.setup.pinnedRevision == "-" {
					rev = ""
				}
				c.Pinned = &Pinned{SidecarSet: restored, Hashes: appsv1beta1.Hashes{Hash: "old"}, RevisionName: rev}
			}
			labels := map[string]string{"app": "web"}
			maps.Copy(labels, tc.podLabels)
			got, err := chooseVersion(&c, labels, tc.coin)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("error does not wrap %v", tc.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotHistory := got.set == restored; gotHistory != tc.wantHistory {
				t.Errorf("pinned revision chosen = %v, want %v", gotHistory, tc.wantHistory)
			}
			if got.controllerRevision != tc.wantRev {
				t.Errorf("controllerRevision = %q, want %q", got.controllerRevision, tc.wantRev)
			}
			if got.name != "agent" {
				t.Errorf("name = %q, want agent", got.name)
			}
		})
	}
}

func withNamespaceSelector(s *appsv1beta1.SidecarSet, labels map[string]string) *appsv1beta1.SidecarSet {
	s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels}
	return s
}

// The shell hands over the selector the registry compiled once per
// SidecarSet change; the pod is matched with it, not with spec.selector
// compiled again.
func TestMatchCandidates_UsesTheCompiledSelector(t *testing.T) {
	t.Parallel()
	compiled, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}})
	if err != nil {
		t.Fatal(err)
	}
	c := candidateOf(newSidecarSet("agent", "web", "a"))
	c.Selector = compiled
	got, skips, _, _, err := matchCandidates([]*Candidate{&c}, newPod("web", "web"), Namespace{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("matched %v, want none", names(got))
	}
	want := []Skip{{SidecarSet: "agent", Reason: ReasonPodNotSelected, Message: "its selector does not match the pod's labels"}}
	if diff := cmp.Diff(want, skips); diff != "" {
		t.Errorf("skips (-want +got):\n%s", diff)
	}
}

func TestInject_Identity(t *testing.T) {
	t.Parallel()
	pinned := func(name, record string) *appsv1beta1.SidecarSet {
		s := newSidecarSet(name, "web", name+"-c")
		s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("default")
		s.Annotations = map[string]string{appsv1beta1.NamespaceUIDsAnnotation: record}
		return s
	}
	base := newSidecarSet("mesh", "web", "proxy")
	base.UID = "base-2"
	canary := newSidecarSet("mesh-canary", "web", "proxy")
	canary.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true",
		appsv1beta1.SidecarSetBaseAnnotation: "mesh", appsv1beta1.CanaryBaseUIDAnnotation: "base-1"}
	tests := []struct {
		name         string
		in           Input
		wantInjected []string
		wantSkipped  []Skip
		wantWarnings []string
		wantErr      string
	}{
		{
			name: "a SidecarSet is injected in the namespace it was written for",
			in: Input{Pod: newPod("web", "web"), Namespace: Namespace{UID: "ns-1"},
				Candidates: []Candidate{candidateOf(pinned("team-a", `{"default":"ns-1"}`))}},
			wantInjected: []string{"team-a"},
		},
		{
			name: "a SidecarSet is not injected in a namespace of the same name created again, and the user is told",
			in: Input{Pod: newPod("web", "web"), Namespace: Namespace{UID: "ns-2"},
				Candidates: []Candidate{candidateOf(pinned("team-a", `{"default":"ns-1"}`))}},
			wantSkipped: []Skip{{SidecarSet: "team-a", Reason: ReasonNamespaceReplaced,
				Message: `namespace "default" was deleted and created again since the SidecarSet was written (UID ns-1 then, ns-2 now): ` +
					`it applies there only once someone allowed to create pods there writes it again`}},
			wantWarnings: []string{`SidecarSet "team-a" is not injected: namespace "default" was deleted and created again since the SidecarSet ` +
				`was written (UID ns-1 then, ns-2 now): it applies there only once someone allowed to create pods there writes it again`},
		},
		{
			name: "a required SidecarSet recording the namespace's UID denies the pod when the namespace cannot be read",
			in: Input{Pod: newPod("web", "web"), Namespace: Namespace{LabelsError: errors.New("timeout")},
				Candidates: []Candidate{candidateOf(pinned("team-a", `{"default":"ns-1"}`))}},
			wantErr: `SidecarSet "team-a": whether namespace "default" is the one it was written for cannot be told: the namespace could not be read: timeout`,
		},
		{
			name: "a canary of a base created again is left out and the base injected, and the user is told",
			in:   Input{Pod: newPod("web", "web"), Candidates: []Candidate{candidateOf(base), candidateOf(canary)}},
			wantSkipped: []Skip{{SidecarSet: "mesh-canary", Reason: ReasonCanaryBaseReplaced,
				Message: `its base "mesh" was deleted and created again since the canary was written (UID base-1 then, base-2 now): ` +
					`the canary is left out, and the base applies, until the canary is written again`}},
			wantInjected: []string{"mesh"},
			wantWarnings: []string{`SidecarSet "mesh-canary" is not injected: its base "mesh" was deleted and created again since the canary ` +
				`was written (UID base-1 then, base-2 now): the canary is left out, and the base applies, until the canary is written again`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Now = testNow
			out, err := Inject(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantInjected, out.Injected); diff != "" {
				t.Errorf("injected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, out.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, out.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
