package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrCPUBusy says that a CPU lock is held the other way (see LockCPU).
var ErrCPUBusy = errors.New("CPU in use by another rig loop")

// CPUBusyError names the CPU and the processes that hold its lock.
type CPUBusyError struct {
	CPU     int
	Alone   bool     // the lock was asked for alone (rig noise)
	Holders []string // "pid 123 (rig respond --cpu 1 …)"; empty when /proc/locks did not say
}

func (e *CPUBusyError) Error() string {
	who := "another rig process"
	if len(e.Holders) > 0 {
		who = strings.Join(e.Holders, ", ")
	}
	if e.Alone {
		return fmt.Sprintf("CPU %d: %s runs a measuring loop there (a responder spins on it): the noise probe cannot share its CPU; stop it or measure another CPU", e.CPU, who)
	}
	return fmt.Sprintf("CPU %d: %s measures its noise (rig noise): a loop started there would be measured as noise; wait for it or pick another CPU", e.CPU, who)
}

// Is makes a *CPUBusyError match ErrCPUBusy.
func (e *CPUBusyError) Is(target error) bool { return target == ErrCPUBusy }

// LockCPU takes rig's claim on one CPU, an flock on cpu-N.lock in dir (a
// journal base directory, created if needed), and returns its release.
// Measuring loops (rig respond) share it, so that responders may share a
// CPU; rig noise holds it alone (alone), because its loop and a busy loop
// on one CPU measure each other. It never waits: a lock held the other way
// is a *CPUBusyError naming its holders. The kernel drops it when its
// holder dies.
func LockCPU(dir string, cpu int, alone bool) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, permissionHint(fmt.Errorf("journal directory: %w", err))
	}
	f, err := os.OpenFile(filepath.Join(dir, "cpu-"+strconv.Itoa(cpu)+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, permissionHint(err)
	}
	how := syscall.LOCK_SH
	if alone {
		how = syscall.LOCK_EX
	}
	if err := flockNB(f, how); err != nil {
		defer f.Close() // not taken: nothing to release
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &CPUBusyError{CPU: cpu, Alone: alone, Holders: lockHolders(f)}
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// lockHolders names the processes /proc/locks lists as holding an flock
// on f (not those waiting for one), this process left out.
func lockHolders(f *os.File) []string {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return nil
	}
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// "1: FLOCK  ADVISORY  READ 1234 00:1e:5678 0 EOF"; waiters have "->" after the number.
		fl := strings.Fields(line)
		if len(fl) < 6 || fl[1] != "FLOCK" || fl[5] != id || fl[4] == strconv.Itoa(os.Getpid()) {
			continue
		}
		who := "pid " + fl[4]
		if cmd, err := os.ReadFile("/proc/" + fl[4] + "/cmdline"); err == nil && len(cmd) > 0 {
			c := string(bytes.TrimRight(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), " "))
			if len(c) > 120 {
				c = c[:120] + "…"
			}
			who += " (" + c + ")"
		}
		out = append(out, who)
	}
	return out
}
