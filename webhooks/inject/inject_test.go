package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/test/golden"
)

// goldenDir holds the injection cases: <case>.yaml is the input and
// <case>.yaml.injected the expected result.
const goldenDir = "testdata/inject"

// refreshGolden rewrites the expected files instead of comparing them.
var refreshGolden = golden.Refresh

// testNow is the injection time of every case.
var testNow = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// goldenCase is the input file of a golden case.
type goldenCase struct {
	// Namespace is the pod's namespace; its name defaults to the pod's.
	Namespace Namespace `json:"namespace"`
	Options   struct {
		SortContainersByName bool `json:"sortContainersByName"`
	} `json:"options"`
	// Rand is the Partial coin.
	Rand float64 `json:"rand"`
	// Pod is the admitted pod, unless PodJSON gives it as raw JSON (with
	// fields the Go types do not know).
	Pod     *corev1.Pod `json:"pod"`
	PodJSON string      `json:"podJSON"`
	// Survives maps JSON pointers into the patched raw pod to the values
	// they must hold: fields unknown to the Go types survive the patch.
	Survives map[string]any `json:"survives"`
	// SidecarSets are the candidates, in cache (not name) order.
	SidecarSets []goldenSidecarSet `json:"sidecarSets"`
	// Whitelist is the patchPodMetadata whitelist document in force, with
	// the SidecarSetPatchPodMetadataDefaultsAllowed gate off; without one,
	// there is no whitelist and the gate is on (every key is allowed).
	Whitelist string `json:"whitelist"`
}

// goldenSidecarSet is a candidate of a golden case.
type goldenSidecarSet struct {
	// SidecarSet is the live object (defaulted by the harness).
	SidecarSet appsv1beta1.SidecarSet `json:"sidecarSet"`
	// History is the older spec recorded by the pinned ControllerRevision.
	History *appsv1beta1.SidecarSet `json:"history"`
	// PinnedError is the lookup error of the pinned revision: "NotFound"
	// or any other message.
	PinnedError string `json:"pinnedError"`
}

// loadedCase is a golden case turned into an Input.
type loadedCase struct {
	name  string
	input Input
	raw   []byte // the pod's JSON as admitted
	spec  goldenCase
}

func loadCases(tb testing.TB) []loadedCase {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no golden cases in %s", goldenDir)
	}
	cases := make([]loadedCase, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		c, err := parseCase(strings.TrimSuffix(filepath.Base(p), ".yaml"), data)
		if err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		cases = append(cases, c)
	}
	return cases
}

func parseCase(name string, data []byte) (loadedCase, error) {
	var gc goldenCase
	if err := yaml.UnmarshalStrict(data, &gc); err != nil {
		return loadedCase{}, err
	}
	lc := loadedCase{name: name, spec: gc}
	pod := gc.Pod
	if gc.PodJSON != "" {
		lc.raw = []byte(gc.PodJSON)
		pod = &corev1.Pod{}
		if err := json.Unmarshal(lc.raw, pod); err != nil {
			return loadedCase{}, fmt.Errorf("podJSON: %w", err)
		}
	}
	if pod == nil {
		return loadedCase{}, errors.New("no pod")
	}
	if lc.raw == nil {
		raw, err := json.Marshal(pod)
		if err != nil {
			return loadedCase{}, err
		}
		lc.raw = raw
	}
	cands := make([]Candidate, 0, len(gc.SidecarSets))
	for i := range gc.SidecarSets {
		c, err := candidate(&gc.SidecarSets[i])
		if err != nil {
			return loadedCase{}, fmt.Errorf("sidecarSets[%d]: %w", i, err)
		}
		cands = append(cands, c)
	}
	whitelist := anyKey
	if gc.Whitelist != "" {
		w, err := policy.ParseWhitelist(gc.Whitelist)
		if err != nil {
			return loadedCase{}, fmt.Errorf("whitelist: %w", err)
		}
		whitelist = podmeta.Whitelist{Snapshot: &policy.Snapshot{Whitelist: w, Present: true}}
	}
	lc.input = Input{
		Pod:        pod,
		Namespace:  gc.Namespace,
		Candidates: cands,
		Now:        testNow,
		Rand:       gc.Rand,
		Options:    Options{SortContainersByName: gc.Options.SortContainersByName},
		Whitelist:  whitelist,
	}
	return lc, nil
}

// candidate defaults a case's SidecarSet and resolves its pinned revision
// as the admission handler does: a ControllerRevision recorded from the
// history spec, restored onto the live object.
func candidate(g *goldenSidecarSet) (Candidate, error) {
	live := g.SidecarSet.DeepCopy()
	appsv1beta1.SetDefaults(live)
	hashes, err := appsv1beta1.ComputeHashes(&live.Spec)
	if err != nil {
		return Candidate{}, err
	}
	c := Candidate{SidecarSet: live, Hashes: hashes, Resources: resources.CompileSpec(&live.Spec)}
	pin := live.Spec.InjectionStrategy.Revision
	revName := ""
	if pin != nil && pin.RevisionName != nil {
		revName = *pin.RevisionName
	}
	switch {
	case g.PinnedError == "NotFound":
		c.PinnedError = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, revName)
	case g.PinnedError != "":
		c.PinnedError = errors.New(g.PinnedError)
	case g.History != nil:
		history := g.History.DeepCopy()
		history.Name = live.Name
		appsv1beta1.SetDefaults(history)
		rev, err := revision.New(history, "kruise-system", 1, nil)
		if err != nil {
			return Candidate{}, err
		}
		if revName != "" {
			rev.Name = revName
		}
		restored, err := revision.Restore(live, rev)
		if err != nil {
			return Candidate{}, err
		}
		h, err := appsv1beta1.ComputeHashes(&restored.Spec)
		if err != nil {
			return Candidate{}, err
		}
		c.Pinned = &Pinned{SidecarSet: restored, Hashes: h, RevisionName: rev.Name, Resources: resources.CompileSpec(&restored.Spec)}
	}
	return c, nil
}

// render is the content of a <case>.yaml.injected file: the outcome as
// comments, then the injected pod.
func render(out Output, err error) ([]byte, error) {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "# Denied: %s\n", err)
		return []byte(b.String()), nil
	}
	if len(out.Injected) > 0 {
		fmt.Fprintf(&b, "# Injected: %s\n", strings.Join(out.Injected, ", "))
	}
	for _, s := range out.Skipped {
		fmt.Fprintf(&b, "# Skipped: %s (%s): %s\n", s.SidecarSet, s.Reason, s.Message)
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(&b, "# Warning: %s\n", w)
	}
	for _, op := range out.Patch {
		fmt.Fprintf(&b, "# Patch: %s %s\n", op.Operation, op.Path)
	}
	podYAML, err := podYAML(out.Pod)
	if err != nil {
		return nil, err
	}
	b.Write(podYAML)
	return []byte(b.String()), nil
}

// podYAML renders a pod without the empty creationTimestamp and status
// that every typed pod marshals.
func podYAML(pod *corev1.Pod) ([]byte, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if meta, ok := doc["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	if status, ok := doc["status"].(map[string]any); ok && len(status) == 0 {
		delete(doc, "status")
	}
	return yaml.Marshal(doc)
}

func TestInject_Golden(t *testing.T) {
	t.Parallel()
	for _, lc := range loadCases(t) {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			before := lc.input.Pod.DeepCopy()
			out, err := Inject(lc.input)
			got, rerr := render(out, err)
			if rerr != nil {
				t.Fatal(rerr)
			}
			golden.Compare(t, filepath.Join(goldenDir, lc.name+".yaml.injected"), got)
			if diff := cmp.Diff(before, lc.input.Pod); diff != "" {
				t.Errorf("Inject modified its input pod (-before +after):\n%s", diff)
			}
			if err != nil {
				return
			}
			patched := applyPatch(t, lc.raw, out.Patch)
			assertSamePod(t, patched, out.Pod)
			for ptr, want := range lc.spec.Survives {
				if diff := cmp.Diff(want, lookupPointer(t, patched, ptr)); diff != "" {
					t.Errorf("field %s of the raw pod after the patch (-want +got):\n%s", ptr, diff)
				}
			}
			assertIdempotent(t, lc.input, out.Pod)
		})
	}
}

// TestInject_GoldenFilesHaveInputs fails on an expected file left behind by
// a removed or renamed case.
func TestInject_GoldenFilesHaveInputs(t *testing.T) {
	t.Parallel()
	expected, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml.injected"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range expected {
		if _, err := os.Stat(strings.TrimSuffix(e, ".injected")); err != nil {
			t.Errorf("stale golden file %s: its input is missing (%v)", e, err)
		}
	}
}

// applyPatch applies a patch to raw JSON, as the API server does.
func applyPatch(tb testing.TB, raw []byte, ops []jsonpatch.Operation) []byte {
	tb.Helper()
	if len(ops) == 0 {
		return raw
	}
	data, err := json.Marshal(ops)
	if err != nil {
		tb.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(data)
	if err != nil {
		tb.Fatalf("decoding patch %s: %v", data, err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		tb.Fatalf("applying patch %s: %v", data, err)
	}
	return patched
}

// assertSamePod checks that patched JSON decodes to the expected pod.
func assertSamePod(tb testing.TB, patched []byte, want *corev1.Pod) {
	tb.Helper()
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		tb.Fatalf("patched pod: %v", err)
	}
	if diff := cmp.Diff(jsonValue(tb, want), jsonValue(tb, &got)); diff != "" {
		tb.Errorf("applying the patch does not give Output.Pod (-Output.Pod +patched):\n%s", diff)
	}
}

func jsonValue(tb testing.TB, v any) any {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// assertIdempotent injects the injected pod again: nothing may change.
func assertIdempotent(tb testing.TB, in Input, injected *corev1.Pod) {
	tb.Helper()
	in.Pod = injected
	again, err := Inject(in)
	if err != nil {
		tb.Fatalf("injecting the injected pod again: %v", err)
	}
	if len(again.Patch) != 0 {
		tb.Errorf("injecting the injected pod again patches it: %s", mustJSON(tb, again.Patch))
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

// lookupPointer evaluates a JSON pointer in a JSON document.
func lookupPointer(tb testing.TB, doc []byte, ptr string) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		tb.Fatal(err)
	}
	for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := v.(type) {
		case map[string]any:
			v = node[tok]
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(node) {
				return nil
			}
			v = node[i]
		default:
			return nil
		}
	}
	return v
}

func TestInject_Outcomes(t *testing.T) {
	t.Parallel()
	malformed := map[string]string{"kruise.io/sidecarset-hash": "not json"}
	emptySet := newSidecarSet("metadata-only", "web")
	emptySet.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{
		PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"team": "platform"},
	}}
	withAnnotations := func(p *corev1.Pod, a map[string]string) *corev1.Pod {
		p.Annotations = a
		return p
	}
	tests := []struct {
		name         string
		in           Input
		wantInjected []string
		wantSkipped  []Skip
		wantPatch    []string
		wantErr      string
	}{
		{name: "no pod is an error", in: Input{}, wantErr: "no pod to inject"},
		{
			name: "no candidate changes nothing",
			in:   Input{Pod: newPod("web", "web")},
		},
		{
			name:    "malformed SidecarSet annotations deny a pod that a SidecarSet matches",
			in:      Input{Pod: withAnnotations(newPod("web", "web"), malformed), Candidates: []Candidate{candidateOf(newSidecarSet("a", "web", "c"))}},
			wantErr: "pod malformed annotation kruise.io/sidecarset-hash: neither a map of hash entries nor a map of hashes: invalid character 'o' in literal null (expecting 'u'); fix or remove it to create the pod",
		},
		{
			name:        "malformed SidecarSet annotations do not matter when nothing matches",
			in:          Input{Pod: withAnnotations(newPod("web", "web"), malformed), Candidates: []Candidate{candidateOf(newSidecarSet("a", "api", "c"))}},
			wantSkipped: []Skip{{SidecarSet: "a", Reason: ReasonPodNotSelected, Message: "its selector does not match the pod's labels"}},
		},
		{
			name: "a version without containers only patches metadata, and is listed only if another injects",
			in: Input{Pod: newPod("web", "web"), Candidates: []Candidate{candidateOf(emptySet), candidateOf(newSidecarSet("agent", "web", "agent"))},
				Now: testNow, Whitelist: anyKey},
			wantSkipped: []Skip{{SidecarSet: "metadata-only", Reason: ReasonNothingToInject,
				Message: "the injected version has no containers; only its patchPodMetadata applies"}},
			wantInjected: []string{"agent"},
			wantPatch:    []string{"add /metadata/annotations", "add /spec/containers/0"},
		},
		{
			name: "a version without containers alone patches metadata only",
			in:   Input{Pod: newPod("web", "web"), Candidates: []Candidate{candidateOf(emptySet)}, Whitelist: anyKey},
			wantSkipped: []Skip{{SidecarSet: "metadata-only", Reason: ReasonNothingToInject,
				Message: "the injected version has no containers; only its patchPodMetadata applies"}},
			wantPatch: []string{"add /metadata/annotations"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
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
			var patch []string
			for _, op := range out.Patch {
				patch = append(patch, op.Operation+" "+op.Path)
			}
			if diff := cmp.Diff(tc.wantPatch, patch); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			raw, err := json.Marshal(tc.in.Pod)
			if err != nil {
				t.Fatal(err)
			}
			assertSamePod(t, applyPatch(t, raw, out.Patch), out.Pod)
			assertIdempotent(t, tc.in, out.Pod)
		})
	}
}
