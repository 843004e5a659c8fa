package app

import (
	"encoding/json"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestSetMemoryLimit(t *testing.T) {
	previous := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(previous) })
	// Unset, whatever the caller's environment says; t.Setenv restores it.
	for _, name := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(name, "")
		_ = os.Unsetenv(name)
	}

	t.Run("a container limit leaves room for what the Go runtime does not count", func(t *testing.T) {
		limit := uint64(512 << 20)
		got, err := SetMemoryLimit(memlimit.Limit(limit))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(float64(limit) * MemoryLimitRatio)
		if got != want || debug.SetMemoryLimit(-1) != want {
			t.Fatalf("soft limit %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), want)
		}
	})

	t.Run("an explicit GOMEMLIMIT wins", func(t *testing.T) {
		debug.SetMemoryLimit(300 << 20)
		t.Setenv("GOMEMLIMIT", "300MiB")
		got, err := SetMemoryLimit(memlimit.Limit(512 << 20))
		if err != nil {
			t.Fatal(err)
		}
		if got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
			t.Fatalf("soft limit %d, want the GOMEMLIMIT of 300MiB kept", got)
		}
	})

	t.Run("no container limit sets none", func(t *testing.T) {
		debug.SetMemoryLimit(previous)
		got, err := SetMemoryLimit(func() (uint64, error) { return 0, memlimit.ErrNoLimit })
		if err != nil {
			t.Fatal(err)
		}
		if got != math.MaxInt64 {
			t.Fatalf("soft limit %d without a container limit, want none", got)
		}
	})
}

// scaleFigures is the file make bench-scale writes the manager's figures to
// at its largest size (test/bench's scaleFigures), committed with the run
// docs/benchmarks.md quotes.
const scaleFigures = "../../../test/bench/scale-figures.json"

// TestShippedMemoryLimit keeps the Deployment's memory limit above what the
// manager needs at the largest scale make bench-scale has recorded: twice
// the live heap, for the collector's headroom, plus 64 MiB for the binary's
// mapped pages and what the soft limit does not count. A recorded run that
// needs more fails this test until the limit follows.
func TestShippedMemoryLimit(t *testing.T) {
	pods, liveHeapMiB := recordedLiveHeap(t, scaleFigures)
	liveHeapAtScale := int64(liveHeapMiB * (1 << 20))
	raw, err := os.ReadFile("../../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(raw), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			limit := c.Resources.Limits.Memory()
			if limit.IsZero() {
				t.Fatalf("container %s has no memory limit", c.Name)
			}
			if want := int64(2*liveHeapAtScale + 64<<20); limit.Value() < want {
				t.Errorf("container %s: memory limit %s, want at least %d MiB (live heap %.1f MiB at %d pods)",
					c.Name, limit, want>>20, liveHeapMiB, pods)
			}
		}
		return
	}
	t.Fatal("no Deployment in config/manager/manager.yaml")
}

// recordedLiveHeap reads the number of pods and the live heap make
// bench-scale recorded.
func recordedLiveHeap(t *testing.T, path string) (pods int, mib float64) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var figures struct {
		Pods        int     `json:"pods"`
		LiveHeapMiB float64 `json:"liveHeapMiB"`
	}
	if err := json.Unmarshal(raw, &figures); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if figures.Pods <= 0 || figures.LiveHeapMiB <= 0 {
		t.Fatalf("%s: %d pods, live heap %.1f MiB: want both", path, figures.Pods, figures.LiveHeapMiB)
	}
	return figures.Pods, figures.LiveHeapMiB
}
