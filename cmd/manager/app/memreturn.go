package app

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// After a burst (a rollout of thousands of pods, their events decoded
// and patched), the Go heap keeps the pages it no longer uses: its
// background scavenger hands them back to the system slowly (about 1% of
// a CPU), so the container's resident memory stays near the burst's peak
// for minutes, up to twice the live heap. MemoryReturner
// hands them back once the burst is over: every memoryCheckInterval it
// reads how much of the heap is free and not yet returned, and how much
// the heap allocated since the last check. Past memoryReturnThreshold
// held free, when at that allocation rate the held pages would still be
// unused after memoryReturnGap, it returns them all (debug.FreeOSMemory:
// one garbage collection, then the scavenge with the heap's lock held:
// 0.1-1.0 s in all on two busy cores).
//
// During a burst the rate is high and it does nothing: the heap reuses the
// pages within seconds, and a return would only stall the webhooks. The
// check is frequent and the threshold low so that the return comes within
// seconds of the burst's end: a rarer check past a higher threshold can
// take its last chance minutes before the end of a long rollout and none at
// rest, leaving tens of MiB held.
const (
	memoryCheckInterval   = 2 * time.Second
	memoryReturnThreshold = 16 << 20
	memoryReturnGap       = 20 * time.Second
)

// The runtime's figures the returner reads: the heap memory that is free
// and still held (not returned to the system), and the bytes the heap
// allocated since the program started.
const (
	heapFreeMetric   = "/memory/classes/heap/free:bytes"
	heapAllocsMetric = "/gc/heap/allocs:bytes"
)

// MemoryReturner returns the heap's free pages to the system after a
// burst. It runs on every replica.
type MemoryReturner struct{}

// NeedLeaderElection is false: every replica has its own heap.
func (MemoryReturner) NeedLeaderElection() bool { return false }

// Start checks until the context ends.
func (MemoryReturner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("memory")
	var last time.Time
	_, allocs := heapFigures()
	tick := time.NewTicker(memoryCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			held, total := heapFigures()
			allocated := total - allocs
			allocs = total
			if !worthReturning(held, allocated, now, last) {
				continue
			}
			debug.FreeOSMemory()
			last = now
			log.Info("Returned the heap's free memory to the system", "bytes", held, "took", time.Since(now).String())
		}
	}
}

// worthReturning says whether held free bytes are to be returned now, the
// heap having allocated allocated bytes over the last memoryCheckInterval
// and the last return having been at last: much is held, the last return
// is a gap old, and at that rate the heap would not reuse what is held
// within a gap.
func worthReturning(held, allocated uint64, now, last time.Time) bool {
	if held < memoryReturnThreshold || now.Sub(last) < memoryReturnGap {
		return false
	}
	return allocated*uint64(memoryReturnGap/memoryCheckInterval) < held
}

// heapFigures reads heapFreeMetric and heapAllocsMetric.
func heapFigures() (held, allocs uint64) {
	sample := []metrics.Sample{{Name: heapFreeMetric}, {Name: heapAllocsMetric}}
	metrics.Read(sample)
	value := func(s metrics.Sample) uint64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s.Value.Uint64()
	}
	return value(sample[0]), value(sample[1])
}
