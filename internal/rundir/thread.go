package rundir

import "fmt"

// ThreadUsage is one thread's CPU use over a wall-clock span
// (getrusage RUSAGE_THREAD): how much of the span it ran, and how often
// it gave the CPU up by blocking (voluntary) or had it taken (involuntary:
// preempted by another task, or by the Go runtime's own threads).
type ThreadUsage struct {
	WallNS      int64 `json:"wall_ns"`
	CPUNS       int64 `json:"cpu_ns"` // user + system
	Voluntary   int64 `json:"voluntary_switches"`
	Involuntary int64 `json:"involuntary_switches"`
	// HeapAllocs counts the heap allocations the whole process made over
	// the span (runtime.MemStats.Mallocs, exact: reading it flushes every
	// P's allocation cache); nil in files that predate it. The hot paths do
	// not allocate, so it stays 0 unless another goroutine did.
	HeapAllocs *uint64 `json:"heap_allocs,omitempty"`
}

// OnCPU is the share of the span the thread ran (0..1; 0 without a span).
func (u ThreadUsage) OnCPU() float64 {
	if u.WallNS <= 0 {
		return 0
	}
	return float64(u.CPUNS) / float64(u.WallNS)
}

// PerSecond converts a count over the span into a rate (0 without a span).
func (u ThreadUsage) PerSecond(n int64) float64 {
	if u.WallNS <= 0 {
		return 0
	}
	return float64(n) / (float64(u.WallNS) / 1e9)
}

// String is the one-line form the summaries print, e.g. "on CPU 99.2 %,
// preempted 212/s, blocked 0/s over 8.0 s".
func (u ThreadUsage) String() string {
	return fmt.Sprintf("on CPU %.1f %%, preempted %.0f/s, blocked %.0f/s over %.1f s (getrusage RUSAGE_THREAD)",
		100*u.OnCPU(), u.PerSecond(u.Involuntary), u.PerSecond(u.Voluntary), float64(u.WallNS)/1e9)
}
