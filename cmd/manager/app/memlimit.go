package app

import (
	"github.com/KimMachineGun/automemlimit/memlimit"
)

// MemoryLimitRatio is the share of the container's memory limit the Go heap
// may grow to before the garbage collector works harder. The rest is for
// what the runtime's soft limit does not count: the binary's mapped pages
// (about 45 MiB, charged to the container when they are read in) and the
// kernel's buffers.
const MemoryLimitRatio = 0.85

// SetMemoryLimit gives the Go runtime a soft memory limit below the
// container's (provider: memlimit.FromCgroup in the manager). Without it the
// heap may grow to twice its live size between collections, so a manager
// whose live heap is well within its limit can still be OOM-killed. An
// explicit GOMEMLIMIT, or AUTOMEMLIMIT (a ratio, or off), in the
// environment wins. It returns the limit in force, math.MaxInt64 when the
// container has none.
func SetMemoryLimit(provider memlimit.Provider) (int64, error) {
	return memlimit.Set(memlimit.WithRatio(MemoryLimitRatio), memlimit.WithProvider(provider))
}
