package app

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestWorthReturning(t *testing.T) {
	now := time.Now()
	// quiet is a rate at which the heap would reuse a threshold's worth of
	// held pages only after more than a gap; busy, within one.
	perGap := uint64(memoryReturnGap / memoryCheckInterval)
	quiet := memoryReturnThreshold/perGap - 1
	busy := memoryReturnThreshold/perGap + 1
	for _, c := range []struct {
		name      string
		held      uint64
		allocated uint64
		last      time.Time
		want      bool
	}{
		{"little held", memoryReturnThreshold - 1, 0, time.Time{}, false},
		{"much held, quiet, never returned", memoryReturnThreshold, quiet, time.Time{}, true},
		{"much held, quiet, returned a moment ago", 4 * memoryReturnThreshold, 0, now.Add(-memoryReturnGap + time.Second), false},
		{"much held, quiet, returned a gap ago", memoryReturnThreshold, quiet, now.Add(-memoryReturnGap), true},
		{"much held, during a burst", memoryReturnThreshold, busy, time.Time{}, false},
		{"more held than a burst reuses in a gap", 64 * memoryReturnThreshold, busy, time.Time{}, true},
	} {
		if got := worthReturning(c.held, c.allocated, now, c.last); got != c.want {
			t.Errorf("%s: worthReturning = %v, want %v", c.name, got, c.want)
		}
	}
}

// The runtime's own figure moves the way the returner relies on: memory
// freed by a collection is held until returned, and FreeOSMemory returns it.
// The runtime's background scavenger may return some of it first (it did,
// on a loaded machine, between the collection and the reading): what it
// returned meanwhile counts as freed and returned, not as lost.
func TestHeapFree_ReturnedByFreeOSMemory(t *testing.T) {
	returned := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var before uint64 // what was returned once the 64 MiB were allocated
	func() {
		keep := make([][]byte, 64)
		for i := range keep {
			keep[i] = make([]byte, 1<<20)
		}
		before = returned()
		runtime.KeepAlive(keep)
	}()
	runtime.GC()
	held, _ := heapFigures()
	scavenged := max(returned(), before) - before
	if held+scavenged < 32<<20 {
		t.Fatalf("after freeing 64 MiB the heap holds %d free bytes and returned %d, want at least 32 MiB in all", held, scavenged)
	}
	debug.FreeOSMemory()
	if held, _ := heapFigures(); held >= 8<<20 {
		t.Fatalf("after the return the heap still holds %d free bytes", held)
	}
}
