// Package heap measures the live heap for the footprint tests, which bound
// what the caches keep per pod or per SidecarSet.
package heap

import "runtime"

// Live returns the bytes allocated and still reachable after two garbage
// collections (the second sweeps what the first's finalizers released).
func Live() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
