package inject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// handwrittenDir holds the cases whose expected pod is written by hand from
// the manual and behavior.md, not generated (see its README.md).
const handwrittenDir = "testdata/handwritten"

// TestInject_HandWritten checks the injector against expectations written
// independently of its output.
func TestInject_HandWritten(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join(handwrittenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatalf("no hand-written cases in %s", handwrittenDir)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			lc, err := parseCase(name, data)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			expected, err := os.ReadFile(in + ".expected")
			if err != nil {
				t.Fatalf("%v (write the expected pod by hand)", err)
			}
			want := &corev1.Pod{}
			if err := yaml.UnmarshalStrict(expected, want); err != nil {
				t.Fatalf("%s.expected: %v", in, err)
			}
			out, err := Inject(lc.input)
			if err != nil {
				t.Fatalf("Inject: %v", err)
			}
			got := out.Pod.DeepCopy()
			maskHashes(t, want.Annotations)
			maskHashes(t, got.Annotations)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("injected pod (-hand-written +got):\n%s", diff)
			}
		})
	}
}

// TestInject_HandWrittenFilesHaveInputs fails on an expectation left behind
// by a removed or renamed case.
func TestInject_HandWrittenFilesHaveInputs(t *testing.T) {
	t.Parallel()
	expected, err := filepath.Glob(filepath.Join(handwrittenDir, "*.yaml.expected"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range expected {
		if _, err := os.Stat(strings.TrimSuffix(e, ".expected")); err != nil {
			t.Errorf("stale expectation %s: its input is missing (%v)", e, err)
		}
	}
}

// maskHashes replaces the hash of every entry of the two hash annotations
// with "<hash>", in place, re-encoding them: the hash values are tested
// against published vectors elsewhere; everything else in the entries is
// compared.
func maskHashes(tb testing.TB, annotations map[string]string) {
	tb.Helper()
	for _, key := range []string{appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation} {
		value, ok := annotations[key]
		if !ok {
			continue
		}
		hashes, err := podstate.DecodeHashes(value)
		if err != nil {
			tb.Fatalf("%s: %v", key, err)
		}
		for name, e := range hashes {
			e.Hash = "<hash>"
			hashes[name] = e
		}
		annotations[key] = hashes.Encode()
	}
}
