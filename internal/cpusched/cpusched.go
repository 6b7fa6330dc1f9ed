// Package cpusched places the calling OS thread: CPU affinity and
// scheduling policy. Callers lock their goroutine to its OS thread first
// (runtime.LockOSThread) and never unlock it afterwards: a pinned, real-time
// thread must not go back to the Go scheduler's pool.
//
// It also holds what a measuring thread needs around that: its timer slack
// (SetTimerSlack), enough Ps for the locked threads (EnsureProcs), its own
// CPU time and context switches over a round (Meter, getrusage
// RUSAGE_THREAD), and a rescheduling point at quiet moments for blocking
// loops (Yielder).
package cpusched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// Policy is a scheduling policy.
type Policy int

const (
	Other Policy = iota // SCHED_OTHER, the default
	FIFO                // SCHED_FIFO with a priority 1..99
)

// Sched is a policy with its priority ("other", "fifo:50").
type Sched struct {
	Policy   Policy
	Priority int
}

func (s Sched) String() string {
	if s.Policy == FIFO {
		return "fifo:" + strconv.Itoa(s.Priority)
	}
	return "other"
}

// MarshalText writes String (a run's manifest records "fifo:50").
func (s Sched) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote, with ParseSched.
func (s *Sched) UnmarshalText(b []byte) error {
	v, err := ParseSched(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSched parses "other" or "fifo:N" (N in 1..99); "" is other. It is
// the one parser of a policy: the CLI, the scenario loader and the round
// all use it, so an input gets the same error everywhere.
func ParseSched(s string) (Sched, error) {
	switch {
	case s == "" || s == "other":
		return Sched{}, nil
	case strings.HasPrefix(s, "fifo:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "fifo:"))
		if err != nil || n < 1 || n > 99 {
			return Sched{}, fmt.Errorf("sched %q: the FIFO priority must be 1..99 (e.g. fifo:50)", s)
		}
		return Sched{Policy: FIFO, Priority: n}, nil
	}
	return Sched{}, fmt.Errorf("sched %q: want other or fifo:N (N 1..99)", s)
}

// CheckCPU returns an error naming the online CPUs when cpu is not one.
func CheckCPU(fs hostfs.FS, cpu int) error {
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil {
		return fmt.Errorf("reading online CPUs: %w", err)
	}
	if !cpulist.Contains(online, cpu) {
		return fmt.Errorf("CPU %d does not exist or is offline on this host (online: %s): %w",
			cpu, cpulist.Format(online), os.ErrNotExist)
	}
	return nil
}

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

// EnsureProcs raises GOMAXPROCS to at least n for the measurement and
// returns the function that restores it.
//
// Why: GOMAXPROCS defaults to the CPUs the process may use, so a rig
// process confined to one CPU (taskset, cpuset) gets one P. Its locked
// measuring threads then take turns on that P: a thread returning from a
// blocking syscall while another holds the P parks until sysmon retakes
// it, and sysmon sleeps up to 10 ms when idle; a busy loop holding the P
// is preempted every 10 ms whenever any other goroutine (signals,
// progress) is runnable. Both showed as 5–40 ms tails in rig bench rounds.
// A P is not a CPU: extra Ps cost nothing while their threads sleep.
func EnsureProcs(n int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if prev >= n {
		return func() {}
	}
	runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(prev) }
}
