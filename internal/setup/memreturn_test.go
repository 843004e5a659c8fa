package setup

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestWorthReturning(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		held uint64
		last time.Time
		want bool
	}{
		{"little held", memoryReturnThreshold - 1, time.Time{}, false},
		{"much held, never returned", memoryReturnThreshold, time.Time{}, true},
		{"much held, returned a moment ago", 4 * memoryReturnThreshold, now.Add(-memoryReturnGap + time.Second), false},
		{"much held, returned long ago", memoryReturnThreshold, now.Add(-memoryReturnGap), true},
	} {
		if got := worthReturning(c.held, now, c.last); got != c.want {
			t.Errorf("%s: worthReturning = %v, want %v", c.name, got, c.want)
		}
	}
}

// The runtime's own figure moves the way the returner relies on: memory
// freed by a collection is held until returned, and FreeOSMemory returns it.
func TestHeapFree_ReturnedByFreeOSMemory(t *testing.T) {
	func() {
		keep := make([][]byte, 64)
		for i := range keep {
			keep[i] = make([]byte, 1<<20)
		}
		runtime.KeepAlive(keep)
	}()
	runtime.GC()
	if held := heapFree(); held < 32<<20 {
		t.Fatalf("after freeing 64 MiB the heap holds %d free bytes, want at least 32 MiB", held)
	}
	debug.FreeOSMemory()
	if held := heapFree(); held >= 8<<20 {
		t.Fatalf("after the return the heap still holds %d free bytes", held)
	}
}
