package setup

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
// for minutes, in the measurements twice the live heap. MemoryReturner
// hands them back once they are many: every memoryCheckInterval it reads
// how much of the heap is free and not yet returned, and past
// memoryReturnThreshold (and at most once per memoryReturnGap) it returns
// it all (debug.FreeOSMemory: one garbage collection and the scavenge).
const (
	memoryCheckInterval   = 10 * time.Second
	memoryReturnThreshold = 48 << 20
	memoryReturnGap       = time.Minute
)

// heapFreeMetric is the heap memory that is free and still held (not
// returned to the system).
const heapFreeMetric = "/memory/classes/heap/free:bytes"

// MemoryReturner returns the heap's free pages to the system after a
// burst. It runs on every replica.
type MemoryReturner struct{}

// NeedLeaderElection is false: every replica has its own heap.
func (MemoryReturner) NeedLeaderElection() bool { return false }

// Start checks until the context ends.
func (MemoryReturner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("memory")
	var last time.Time
	tick := time.NewTicker(memoryCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			held := heapFree()
			if !worthReturning(held, now, last) {
				continue
			}
			debug.FreeOSMemory()
			last = now
			log.Info("Returned the heap's free memory to the system", "bytes", held, "took", time.Since(now).String())
		}
	}
}

// worthReturning says whether held free bytes are to be returned now, the
// last return having been at last.
func worthReturning(held uint64, now, last time.Time) bool {
	return held >= memoryReturnThreshold && now.Sub(last) >= memoryReturnGap
}

// heapFree reads heapFreeMetric.
func heapFree() uint64 {
	sample := []metrics.Sample{{Name: heapFreeMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
