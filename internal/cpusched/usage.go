package cpusched

import (
	"runtime"
	"time"

	"github.com/rig-project/rig/internal/samples"
)

// Meter measures the calling thread's CPU use over a span of wall time
// (getrusage RUSAGE_THREAD): CPU time, and how often it gave the CPU up —
// voluntarily when it blocked (a wait, a sleep), involuntarily when the
// scheduler took the CPU from it. For a thread that should own its CPU,
// the involuntary switches count the interruptions. The caller is locked
// to its OS thread (runtime.LockOSThread), or the figures are some other
// thread's. It also counts the process's heap allocations over the span
// (runtime.ReadMemStats at start and stop: two brief stops of the world,
// outside the span's loop).
type Meter struct {
	start  time.Time
	at     samples.ThreadUsage // the reading at start (WallNS unused)
	err    error
	allocs uint64
}

// StartMeter starts measuring the calling thread.
func StartMeter() Meter {
	u, err := threadUsage()
	return Meter{start: time.Now(), at: u, err: err, allocs: mallocs()}
}

// mallocs is the process's heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// Stop returns the thread's usage since StartMeter, as a sample file
// records it, or nil when the kernel gave no figures (getrusage failed).
// It must run on the thread StartMeter ran on.
func (m Meter) Stop() *samples.ThreadUsage {
	u, err := threadUsage()
	if err != nil || m.err != nil {
		return nil
	}
	n := mallocs() - m.allocs // before allocating the result
	allocs := n
	return &samples.ThreadUsage{WallNS: time.Since(m.start).Nanoseconds(), CPUNS: u.CPUNS - m.at.CPUNS,
		Voluntary: u.Voluntary - m.at.Voluntary, Involuntary: u.Involuntary - m.at.Involuntary, HeapAllocs: &allocs}
}
