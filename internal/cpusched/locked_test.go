package cpusched

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunLocked: the loop runs on a thread of its own, ctx's end calls stop
// and still waits for the loop, and the stop reason is what a sample
// file's footer records: none for a loop that ended by itself,
// "interrupted: " with ctx's cause, "failed: " with the loop's error (also
// when the error came after an interrupt).
func TestRunLocked(t *testing.T) {
	runtime.LockOSThread() // the caller's thread is its own: the loop's cannot be it
	defer runtime.UnlockOSThread()
	caller := Tid()
	var loopTid int
	stopped, err := RunLocked(context.Background(), Thread{CPU: -1}, func() error {
		loopTid = Tid()
		for range 20 {
			runtime.Gosched() // a locked goroutine comes back to its thread
			if Tid() != loopTid {
				return errors.New("the loop moved to another thread")
			}
		}
		return nil
	}, nil)
	if err != nil || stopped != "" {
		t.Fatalf("a loop that ended by itself: stopped %q, err %v", stopped, err)
	}
	if loopTid == caller {
		t.Error("the loop ran on the caller's thread")
	}

	// ctx ends while the loop runs: stop is called, RunLocked waits for
	// the loop.
	ctx, cancel := context.WithCancelCause(context.Background())
	var stop atomic.Bool
	var ended atomic.Bool
	running := make(chan struct{})
	go func() { <-running; cancel(errors.New("SIGTERM")) }()
	stopped, err = RunLocked(ctx, Thread{CPU: -1}, func() error {
		close(running)
		for !stop.Load() {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // the loop's own end takes a while (collecting what is in flight): waited for
		ended.Store(true)
		return nil
	}, func() { stop.Store(true) })
	if err != nil || stopped != "interrupted: SIGTERM" || !ended.Load() {
		t.Errorf("interrupted: stopped %q, err %v, loop ended %v", stopped, err, ended.Load())
	}

	// A loop that watches ctx itself needs no stop function.
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	stopped, err = RunLocked(ctx, Thread{CPU: -1}, func() error { <-ctx.Done(); return nil }, nil)
	if err != nil || stopped != "interrupted: context deadline exceeded" {
		t.Errorf("loop watching ctx: stopped %q, err %v", stopped, err)
	}

	boom := errors.New("recvmsg: network is down")
	stopped, err = RunLocked(context.Background(), Thread{CPU: -1}, func() error { return boom }, nil)
	if err != boom || stopped != "failed: recvmsg: network is down" {
		t.Errorf("failed: stopped %q, err %v", stopped, err)
	}
	ctx, cancel3 := context.WithCancel(context.Background())
	cancel3()
	stopped, err = RunLocked(ctx, Thread{CPU: -1}, func() error { return boom }, func() {})
	if err != boom || stopped != "failed: recvmsg: network is down" {
		t.Errorf("failed after an interrupt: stopped %q, err %v", stopped, err)
	}
}

// TestRunLockedPlaces: the loop's thread is pinned to Thread.CPU before
// the loop runs, the caller's thread is left as it was, and a thread that
// cannot be placed fails the run without running the loop.
func TestRunLockedPlaces(t *testing.T) {
	runtime.LockOSThread() // "the caller's thread": the same one before and after
	defer runtime.UnlockOSThread()
	before, err := ThreadCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := before[len(before)-1]
	var in []int
	stopped, err := RunLocked(context.Background(), Thread{CPU: cpu}, func() error {
		var err error
		in, err = ThreadCPUs()
		return err
	}, nil)
	if err != nil || stopped != "" || !slices.Equal(in, []int{cpu}) {
		t.Errorf("pinned to %d: the loop ran on CPUs %v (stopped %q, err %v)", cpu, in, stopped, err)
	}
	if after, _ := ThreadCPUs(); !slices.Equal(after, before) {
		t.Errorf("the caller's CPUs went from %v to %v", before, after)
	}
	ran := false
	stopped, err = RunLocked(context.Background(), Thread{CPU: 4096}, func() error { ran = true; return nil }, nil)
	if err == nil || ran || !strings.HasPrefix(stopped, "failed: ") {
		t.Errorf("CPU 4096: stopped %q, err %v, loop ran %v", stopped, err, ran)
	}
}

// TestTuneRuntime: while tuned the process has at least two Ps and no
// garbage collector; restore puts back what was there.
func TestTuneRuntime(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	gc := debug.SetGCPercent(70)
	defer debug.SetGCPercent(gc)
	restore := TuneRuntime()
	if p := runtime.GOMAXPROCS(0); p < 2 {
		t.Errorf("GOMAXPROCS %d while tuned, want ≥ 2", p)
	}
	if g := debug.SetGCPercent(-1); g != -1 {
		t.Errorf("GC percent %d while tuned, want -1 (off)", g)
	}
	restore()
	if p := runtime.GOMAXPROCS(0); p != 1 {
		t.Errorf("GOMAXPROCS %d after restore, want 1", p)
	}
	if g := debug.SetGCPercent(70); g != 70 {
		t.Errorf("GC percent %d after restore, want 70", g)
	}
}
