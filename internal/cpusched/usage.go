package cpusched

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/samples"
)

// Usage is the CPU use of the calling thread (getrusage RUSAGE_THREAD):
// CPU time, and how often it gave the CPU up — Voluntary when it blocked
// (a wait, a sleep), Involuntary when the scheduler took the CPU from it
// (another task woke with a better claim, or its slice ended). For a
// thread that should own its CPU, Involuntary counts the interruptions.
type Usage struct {
	CPU         time.Duration // user + system
	Voluntary   int64
	Involuntary int64
}

// ThreadUsage returns the calling thread's usage so far. The caller is
// locked to its OS thread (runtime.LockOSThread), or the figures are some
// other thread's. It does not allocate.
func ThreadUsage() (Usage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return Usage{}, err
	}
	return Usage{
		CPU:         time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		Voluntary:   ru.Nvcsw,
		Involuntary: ru.Nivcsw,
	}, nil
}

// Sub returns u − v: the usage between two readings.
func (u Usage) Sub(v Usage) Usage {
	return Usage{CPU: u.CPU - v.CPU, Voluntary: u.Voluntary - v.Voluntary, Involuntary: u.Involuntary - v.Involuntary}
}

// Meter measures the calling thread's usage over a span of wall time.
type Meter struct {
	start time.Time
	usage Usage
	err   error
}

// StartMeter starts measuring the calling (locked) thread.
func StartMeter() Meter {
	u, err := ThreadUsage()
	return Meter{start: time.Now(), usage: u, err: err}
}

// Stop returns the thread's usage since StartMeter, as a sample file
// records it, or nil when the kernel gave no figures (getrusage failed).
// It must run on the thread StartMeter ran on.
func (m Meter) Stop() *samples.ThreadUsage {
	u, err := ThreadUsage()
	if err != nil || m.err != nil {
		return nil
	}
	d := u.Sub(m.usage)
	return &samples.ThreadUsage{WallNS: time.Since(m.start).Nanoseconds(), CPUNS: d.CPU.Nanoseconds(),
		Voluntary: d.Voluntary, Involuntary: d.Involuntary}
}
