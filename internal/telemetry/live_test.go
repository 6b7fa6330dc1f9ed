package telemetry

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
)

// TestSamplerNeverOnMeasuredCPU checks the sampler thread's affinity from
// the kernel's side: /proc/self/task/<tid>/status Cpus_allowed_list.
func TestSamplerNeverOnMeasuredCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	// Its NIC-counter hook, called once a sample, says how far it got.
	var calls atomic.Int64
	count := func(dst []uint64) error { dst[0] = uint64(calls.Add(1)); return nil }
	s, err := New(Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{1}, PinCPU: 0, Interval: 10 * time.Millisecond, ThreadScanEvery: -1,
		NICStats: count, NICStatNames: []string{"samples"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	tid := s.tid // the sampler's thread
	s.mu.Unlock()
	allowed, err := hostinfo.CPUsAllowed(hostfs.FS{Root: "/"}, "self/task/"+strconv.Itoa(tid))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); calls.Load() < 3 && time.Now().Before(deadline); { // two samples done
		time.Sleep(5 * time.Millisecond)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(allowed, 1) || !slices.Equal(allowed, []int{0}) {
		t.Fatalf("sampler thread %d may run on %v, want only CPU 0", tid, allowed)
	}
	if r.Samples < 2 || r.ReadErrors != 0 {
		t.Fatalf("samples %d errors %d %s", r.Samples, r.ReadErrors, r.FirstError)
	}
}

// TestStressNGSeen runs stress-ng on the measured CPU next to a fake
// responder thread and asserts the telemetry shows both.
func TestStressNGSeen(t *testing.T) {
	testbin.Integration(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("stress-ng not installed (apt-get install -y stress-ng)")
	}
	const cpu = 1
	// The fake responder: a thread on CPU 1 that sleeps 1 ms in a loop, so
	// it context-switches voluntarily and competes with stress-ng.
	var stop atomic.Bool
	tidc := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // not unlocked: the thread dies with its modified affinity
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			tidc <- -1
			return
		}
		tidc <- unix.Gettid()
		for !stop.Load() {
			time.Sleep(time.Millisecond) // the workload: a voluntary switch every 1 ms
		}
	}()
	tid := <-tidc
	defer func() { stop.Store(true); <-done }()
	if tid < 0 {
		t.Fatal("could not pin the fake responder to CPU 1")
	}
	s, err := New(Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{cpu}, PinCPU: 0, PID: os.Getpid(), TID: tid,
		Interval: 100 * time.Millisecond, ThreadScanEvery: 2, MaxSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "stress-ng", "--cpu", "1", "--cpu-method", "fft", "--taskset", strconv.Itoa(cpu), "-t", "3s", "--metrics-brief").CombinedOutput()
	r, serr := s.Stop()
	if err != nil {
		t.Fatalf("stress-ng: %v\n%s", err, out)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	var stress []rundir.ThreadSeen
	for _, th := range r.Threads {
		if strings.HasPrefix(th.Comm, "stress-ng") {
			stress = append(stress, th)
		}
	}
	if len(stress) == 0 {
		t.Fatalf("no stress-ng thread seen on CPU %d; seen: %+v", cpu, r.Threads)
	}
	if r.Thread == nil || r.Thread.Voluntary+r.Thread.Involuntary == 0 {
		t.Fatalf("responder context switches did not move: %+v", r.Thread)
	}
	var loc, irqs uint64
	for _, src := range r.Sources {
		if src.Kind == "irq" {
			irqs += src.Total
			if src.ID == "LOC" {
				loc = src.Total
			}
		}
	}
	if irqs == 0 || r.ReadErrors != 0 {
		t.Fatalf("no interrupts counted on CPU %d (errors %d %s): %+v", cpu, r.ReadErrors, r.FirstError, r.Sources)
	}
	t.Logf("%d samples over %.1fs; stress-ng threads %+v; responder ctx vol %d invol %d; LOC %d; irqs %d; threads mode %s",
		r.Samples, float64(r.End-r.Start)/1e9, stress, r.Thread.Voluntary, r.Thread.Involuntary, loc, irqs, r.ThreadsMode)
}

// TestRealBusyCountsShortLived loads the measured CPU with processes that
// each end before the next thread scan and checks the round's busy time:
// every task counted from the per-CPU counters, not from the scans.
func TestRealBusyCountsShortLived(t *testing.T) {
	testbin.Integration(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	const cpu = 1
	sp := testbin.Spin(t, cpu, false, testbin.ShortLived)
	s, err := New(Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{cpu}, PinCPU: 0, Interval: 50 * time.Millisecond, ThreadScanEvery: 5, MaxSamples: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	n := sp.Wait(t, 40)
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var named float64
	for _, th := range r.Threads {
		named += float64(th.RunNS)
	}
	t.Logf("%d children ended; busy %+v; named threads ran %.1f ms; notes %q", n, r.Busy, named/1e6, r.Notes)
	if len(r.Busy) != 1 || r.Busy[0].CPU != cpu || r.Busy[0].Share < 0.5 || r.Busy[0].Source == "" || r.ThreadsNote != "" {
		t.Fatalf("busy %+v, threads note %q", r.Busy, r.ThreadsNote)
	}
}
