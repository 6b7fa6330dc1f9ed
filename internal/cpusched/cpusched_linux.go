package cpusched

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/samples"
)

// PinThread binds the calling OS thread to one CPU. The caller must have
// called runtime.LockOSThread.
func PinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// PinThreadFor binds the calling OS thread to cpu for a while: unpin puts
// its affinity back and reports whether it could, and only then may the
// caller unlock the thread (a pinned thread must not return to the Go
// runtime's pool).
func PinThreadFor(cpu int) (unpin func() bool, err error) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("read the thread's affinity: %w", err)
	}
	if err := PinThread(cpu); err != nil {
		return nil, err
	}
	return func() bool { return unix.SchedSetaffinity(0, &orig) == nil }, nil
}

// AvoidCPU takes cpu from the affinity of every thread of this process,
// so that none of them runs where a child's loop is measured (threads
// created later inherit it from their creator); restore gives each back
// the set it had, and a thread created since then the CPUs it would have
// inherited. Threads that appear meanwhile are caught by listing again
// until none is new.
func AvoidCPU(cpu int) (restore func(), err error) {
	orig := map[int]unix.CPUSet{}
	restore = func() {
		var all unix.CPUSet // what a thread created later had inherited
		for _, set := range orig {
			for c := range 8 * int(unsafe.Sizeof(set)) {
				if set.IsSet(c) {
					all.Set(c)
				}
			}
		}
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			set, ok := orig[tid]
			if !ok {
				set = all
			}
			_ = unix.SchedSetaffinity(tid, &set) // a thread that ended needs nothing
		}
	}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return restore, err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if _, seen := orig[tid]; err != nil || seen {
				continue
			}
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &set); err != nil {
				continue // it ended
			}
			orig[tid], fresh = set, fresh+1
			set.Clear(cpu)
			if set.Count() == 0 {
				return restore, fmt.Errorf("thread %d may run on CPU %d only", tid, cpu)
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return restore, fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if fresh == 0 {
			return restore, nil
		}
	}
}

// Apply sets the calling thread's scheduling policy. SCHED_FIFO needs
// CAP_SYS_NICE (or an RLIMIT_RTPRIO allowance); the error says so.
func Apply(s Sched) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr}
	switch s.Policy {
	case Other:
		attr.Policy = unix.SCHED_NORMAL
	case FIFO:
		attr.Policy = unix.SCHED_FIFO
		attr.Priority = uint32(s.Priority)
	}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("set scheduling policy %s: needs CAP_SYS_NICE (run as root or grant it): %w", s, os.ErrPermission)
		}
		return fmt.Errorf("set scheduling policy %s: %w", s, err)
	}
	return nil
}

// Tid returns the calling thread's id (for telemetry of the thread).
func Tid() int { return unix.Gettid() }

// SetTimerSlack sets the calling thread's timer slack (PR_SET_TIMERSLACK).
// SCHED_OTHER threads default to 50 µs: the kernel may fire their sleeps
// that late to batch wake-ups, which a pacing thread cannot afford.
func SetTimerSlack(d time.Duration) error {
	if d < 1 {
		d = 1 // 0 would mean "back to the default"
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d), 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_TIMERSLACK: %w", err)
	}
	return nil
}

// threadUsage reads the calling thread's totals so far (WallNS unset). It
// does not allocate.
func threadUsage() (samples.ThreadUsage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return samples.ThreadUsage{}, err
	}
	return samples.ThreadUsage{CPUNS: ru.Utime.Nano() + ru.Stime.Nano(), Voluntary: ru.Nvcsw, Involuntary: ru.Nivcsw}, nil
}
