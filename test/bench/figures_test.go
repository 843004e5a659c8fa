package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The committed figures are a file writeScaleFigures wrote: every field
// known, byte for byte as the bench writes them.
func TestScaleFigures_CommittedFile(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("scale-figures.json")
	if err != nil {
		t.Fatal(err)
	}
	var f scaleFigures
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("scale-figures.json: %v", err)
	}
	if f.Pods == 0 || f.LiveHeapMiB == 0 {
		t.Errorf("scale-figures.json: %+v, want the pods and the live heap", f)
	}
	path := filepath.Join(t.TempDir(), "figures.json")
	if err := writeScaleFigures(path, f); err != nil {
		t.Fatal(err)
	}
	if written, _ := os.ReadFile(path); !bytes.Equal(written, raw) {
		t.Errorf("scale-figures.json is not as the bench writes it:\n%s\nwant\n%s", raw, written)
	}
}

// The figures are the largest size's, its live heap growth from the size
// before, rounded as the docs print them.
func TestFiguresOf(t *testing.T) {
	t.Parallel()
	idle := func(heap float64) idleFigures {
		return idleFigures{anon: 122.6, file: 47.2, heap: heap, cpu: 480 * time.Millisecond, window: 30 * time.Second}
	}
	runs := []sizeRun{
		{pods: 3000, idle: idle(43.21)},
		{pods: 10000, idle: idle(62.64), calls: 0.06, rollouts: []rolloutRun{{maxUnavailable: "100%",
			rounds: []rolloutRound{{ours: 234567 * time.Millisecond, floor: 271234 * time.Millisecond, writesPerPod: 1.004}}}}},
	}
	got := figuresOf(scaleOptions{sidecarSets: 5000}, idle(34.3), runs)
	want := scaleFigures{SidecarSets: 5000, Pods: 10000, RSSMiB: 170, RSSAnonMiB: 123, RSSFileMiB: 47, LiveHeapMiB: 62.6,
		LiveHeapGrowthPer1000PodsMiB: 2.78, CPUAtRestPercent: 1.6, APIRequestsPerReconcile: 0.1,
		Rollouts: []scaleRolloutFigures{{MaxUnavailable: "100%", Seconds: 234.6, FloorSeconds: 271.2, PodWritesPerPod: 1}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}
