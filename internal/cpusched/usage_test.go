package cpusched

import (
	"runtime"
	"testing"
	"time"
)

var sink []*[64]byte

// TestMeter: a thread that spins shows CPU time close to its wall time, one
// that sleeps shows voluntary switches and little CPU; the meter does not
// allocate beyond its result.
func TestMeter(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Spin until the thread has had 50 ms of CPU (bounded): on a loaded
	// machine that takes longer than 50 ms of wall time, and the meter must
	// still show CPU time no larger than the wall time and at least what
	// getrusage counted along the way.
	m := StartMeter()
	start, _ := threadUsage()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if u, _ := threadUsage(); u.CPUNS-start.CPUNS >= int64(50*time.Millisecond) {
			break
		}
	}
	spin := m.Stop()
	if spin == nil {
		t.Fatal("no figures for a spinning thread")
	}
	if spin.CPUNS < int64(50*time.Millisecond) || spin.CPUNS > spin.WallNS+int64(5*time.Millisecond) {
		t.Errorf("spinning for 50 ms of CPU: %+v, want CPU time ≥ 50 ms and ≤ the wall time", spin)
	}
	m = StartMeter()
	for i := 0; i < 10; i++ {
		time.Sleep(2 * time.Millisecond) // the workload measured: sleeps
	}
	sleep := m.Stop()
	if sleep == nil || sleep.Voluntary < 10 || sleep.CPUNS > sleep.WallNS/2 {
		t.Errorf("sleeping 10 × 2 ms: %+v, want ≥ 10 voluntary switches and little CPU", sleep)
	}
	if got := sleep.OnCPU(); got < 0 || got > 0.5 {
		t.Errorf("OnCPU %.2f for a sleeping thread", got)
	}
	// The process's heap allocations over the span: the meter's own
	// result is not counted, the 100 made are. (The test binary's other
	// goroutines may allocate now and then: a spinning span is not held
	// to exactly 0.)
	if spin.HeapAllocs == nil {
		t.Fatal("no heap allocation count")
	}
	if *spin.HeapAllocs >= 20 {
		t.Errorf("spinning: heap allocations %d, want about none", *spin.HeapAllocs)
	}
	m = StartMeter()
	for i := 0; i < 100; i++ {
		sink = append(sink, new([64]byte))
	}
	alloc := m.Stop()
	if alloc == nil || alloc.HeapAllocs == nil || *alloc.HeapAllocs < 100 {
		t.Errorf("100 allocations: %+v, want HeapAllocs ≥ 100", alloc)
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = threadUsage() }); a != 0 {
		t.Errorf("threadUsage allocates %.0f times", a)
	}
}
