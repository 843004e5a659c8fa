package app

import (
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
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

// TestShippedMemoryLimit keeps the Deployment's memory limit above what the
// manager needs at the largest scale make bench-scale has measured: twice
// the live heap, for the collector's headroom, plus 64 MiB for the binary's
// mapped pages and what the soft limit does not count. The bench prints
// its figures as markdown tables and writes no file; the recorded run is
// docs/benchmarks.md's table of the manager at rest by number of pods (10 000
// pods and 5 000 SidecarSets: 62.6 MiB of live heap), so
// the live heap is read from there, and a new recorded run that needs more
// fails this test until the limit follows. The 256 MiB shipped before was
// below it.
func TestShippedMemoryLimit(t *testing.T) {
	pods, liveHeapMiB := recordedLiveHeap(t, "../../../docs/benchmarks.md")
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

// recordedLiveHeap reads the live heap at the largest number of pods from
// docs/benchmarks.md's table of make bench-scale's figures: the markdown table
// whose first column is "pods" and which has a "live heap" column.
func recordedLiveHeap(t *testing.T, readme string) (pods int, mib float64) {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	cells := func(line string) []string {
		fields := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		return fields
	}
	column := -1
	for line := range strings.SplitSeq(string(raw), "\n") {
		if !strings.HasPrefix(line, "|") {
			column = -1
			continue
		}
		row := cells(line)
		if column < 0 {
			if row[0] == "pods" {
				column = slices.Index(row, "live heap")
			}
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(row[0], " ", ""))
		if err != nil || column >= len(row) {
			continue // the separator row
		}
		heap, ok := strings.CutSuffix(row[column], " MiB")
		v, err := strconv.ParseFloat(heap, 64)
		if !ok || err != nil {
			t.Fatalf("%s: live heap %q at %d pods is not a MiB figure", readme, row[column], n)
		}
		if n > pods {
			pods, mib = n, v
		}
	}
	if pods == 0 {
		t.Fatalf("%s has no table of make bench-scale's live heap by number of pods", readme)
	}
	return pods, mib
}
