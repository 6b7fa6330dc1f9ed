package cpusched

import (
	"context"
	"runtime"
	"runtime/debug"

	"github.com/rig-project/rig/internal/samples"
)

// Thread is where and how a probe's measuring thread runs.
type Thread struct {
	CPU   int   // the CPU it is pinned to; -1: not pinned
	Sched Sched // its scheduling policy (the zero value: other)
}

// RunLocked runs a probe's measuring loop on a goroutine locked to its own
// OS thread, pinned and scheduled as th says, and waits for it. When ctx is
// done first it calls stop (nil: the loop watches ctx itself) and still
// waits for the loop to return, so whatever the loop recorded is complete
// when RunLocked returns. A failure to pin or schedule the thread is the
// loop's error (the loop does not run).
//
// The thread is never unlocked: it is pinned and may be real-time, and
// such a thread must not go back to the Go scheduler's pool, so the
// runtime discards it when the goroutine ends.
//
// It returns the loop's error and why the loop stopped, as a sample file's
// footer records it (samples.Footer.Stopped): samples.StoppedFailed and
// the error when the loop failed, else samples.StoppedInterrupted and
// ctx's cause when ctx ended it, else "".
func RunLocked(ctx context.Context, th Thread, loop func() error, stop func()) (stopped string, err error) {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- th.run(loop)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		if stop != nil {
			stop()
		}
		err = <-done
	}
	switch {
	case err != nil:
		stopped = samples.StoppedFailed + err.Error()
	case ctx.Err() != nil:
		stopped = samples.StoppedInterrupted + context.Cause(ctx).Error()
	}
	return stopped, err
}

// run places the calling (locked) thread and runs loop on it.
func (th Thread) run(loop func() error) error {
	if th.CPU >= 0 {
		if err := PinThread(th.CPU); err != nil {
			return err
		}
	}
	if err := Apply(th.Sched); err != nil {
		return err
	}
	return loop()
}

// TuneRuntime sets the Go runtime up for a process whose measuring thread
// runs now, and returns the function that puts it back: at least two Ps
// (EnsureProcs: the locked thread, and the rest) and the garbage collector
// off (a collection stops the measured loop; the probes preallocate what
// they record, so the heap does not grow with the round).
//
// rig's probe commands call it around a probe's Run. The probe packages
// leave the runtime alone, so a program or a test that embeds one decides
// for itself; to measure as rig does, it calls TuneRuntime too.
func TuneRuntime() (restore func()) {
	procs := EnsureProcs(2)
	gc := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(gc)
		procs()
	}
}
