package inject

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// fuzzCorpusDir holds the seed corpus of FuzzInject, one file per golden
// case (REFRESH_GOLDEN=true rewrites it).
const fuzzCorpusDir = "testdata/fuzz/FuzzInject"

// fuzzSeed is the fuzzed part of a golden case's pod.
type fuzzSeed struct {
	caseName                        string
	labels, annotations, containers []byte
}

func seedOf(tb testing.TB, lc loadedCase) fuzzSeed {
	tb.Helper()
	marshal := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return data
	}
	p := lc.input.Pod
	return fuzzSeed{caseName: lc.name, labels: marshal(p.Labels), annotations: marshal(p.Annotations), containers: marshal(p.Spec.Containers)}
}

// corpusFile encodes a seed in the go test fuzz v1 format.
func (s fuzzSeed) corpusFile() []byte {
	return fmt.Appendf(nil, "go test fuzz v1\nstring(%q)\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\n",
		s.caseName, s.labels, s.annotations, s.containers)
}

// TestFuzzInject_SeedCorpusIsCurrent keeps testdata/fuzz/FuzzInject in step
// with the golden inputs.
func TestFuzzInject_SeedCorpusIsCurrent(t *testing.T) {
	t.Parallel()
	cases := loadCases(t)
	want := map[string]bool{}
	for _, lc := range cases {
		path := filepath.Join(fuzzCorpusDir, lc.name)
		want[lc.name] = true
		content := seedOf(t, lc).corpusFile()
		if refreshGolden {
			if err := os.MkdirAll(fuzzCorpusDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (REFRESH_GOLDEN=true writes it)", err)
			continue
		}
		if diff := cmp.Diff(string(content), string(got)); diff != "" {
			t.Errorf("%s is stale (-want +got; REFRESH_GOLDEN=true rewrites it):\n%s", path, diff)
		}
	}
	entries, err := os.ReadDir(fuzzCorpusDir)
	if err != nil && !refreshGolden {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] && !refreshGolden {
			t.Errorf("stale seed %s: no golden case %s.yaml", filepath.Join(fuzzCorpusDir, e.Name()), e.Name())
		}
	}
}

// FuzzInject injects golden cases whose pod labels, annotations and
// containers are fuzzed, and checks that injection never panics, leaves the
// pod's own containers untouched, returns a patch that applies to the pod
// and gives Output.Pod, and is idempotent.
func FuzzInject(f *testing.F) {
	cases := loadCases(f)
	for _, lc := range cases {
		s := seedOf(f, lc)
		f.Add(s.caseName, s.labels, s.annotations, s.containers)
	}
	f.Fuzz(func(t *testing.T, caseName string, labels, annotations, containers []byte) {
		i := slices.IndexFunc(cases, func(lc loadedCase) bool { return lc.name == caseName })
		if i < 0 {
			i = len(caseName) % len(cases)
		}
		in := cases[i].input
		pod := in.Pod.DeepCopy()
		var l, a map[string]string
		if json.Unmarshal(labels, &l) == nil {
			pod.Labels = l
		}
		if json.Unmarshal(annotations, &a) == nil {
			pod.Annotations = a
		}
		var cs []corev1.Container
		if json.Unmarshal(containers, &cs) == nil {
			pod.Spec.Containers = cs
		}
		in.Pod = pod
		raw, err := json.Marshal(pod)
		if err != nil {
			// The API server sends the webhook pods as JSON: a pod that does
			// not marshal never reaches the injector.
			t.Skip("the fuzzed pod does not marshal to JSON, so it cannot be an admission input")
		}
		before := pod.DeepCopy()
		out, err := Inject(in)
		if diff := cmp.Diff(before, pod); diff != "" {
			t.Fatalf("Inject modified its input (-before +after):\n%s", diff)
		}
		assertPatchOnlySame(t, in, out, err)
		if err != nil {
			return
		}
		assertOwnContainersUntouched(t, "containers", pod.Spec.Containers, out.Pod.Spec.Containers)
		assertOwnContainersUntouched(t, "initContainers", pod.Spec.InitContainers, out.Pod.Spec.InitContainers)
		assertSamePod(t, applyPatch(t, raw, out.Patch), out.Pod)
		assertIdempotent(t, in, out.Pod)
	})
}

// assertPatchOnlySame checks that the webhook's PatchOnly decides the same,
// without the injected pod.
func assertPatchOnlySame(t *testing.T, in Input, want Output, wantErr error) {
	t.Helper()
	in.PatchOnly = true
	got, err := Inject(in)
	if got.Pod != nil {
		t.Fatalf("PatchOnly returned a pod")
	}
	got.Pod = want.Pod
	if diff := cmp.Diff(want, got); diff != "" || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("PatchOnly decides otherwise (error %v, want %v; -without +with):\n%s", err, wantErr, diff)
	}
}

// assertOwnContainersUntouched checks that the pod's containers are a
// contiguous, unchanged run of the injected list, and that injection added
// no duplicate name.
func assertOwnContainersUntouched(t *testing.T, what string, own, injected []corev1.Container) {
	t.Helper()
	found := false
	for k := 0; k+len(own) <= len(injected) && !found; k++ {
		found = cmp.Equal(own, injected[k:k+len(own)])
	}
	if !found && len(own) > 0 {
		t.Fatalf("the pod's %s are not kept as they were, in order:\nown: %v\ninjected: %v",
			what, containerNames(own), containerNames(injected))
	}
	seen := map[string]int{}
	for _, c := range own {
		seen[c.Name]++
	}
	counts := map[string]int{}
	for _, c := range injected {
		counts[c.Name]++
		if counts[c.Name] > 1 && counts[c.Name] > seen[c.Name] {
			t.Fatalf("injection duplicated the %s name %q: %v", what, c.Name, containerNames(injected))
		}
	}
}
