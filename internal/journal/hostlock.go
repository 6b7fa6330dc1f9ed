package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/owner"
)

// Files of the host lock in the journal base directory: host.lock (the
// flock: exclusive for a lone holder, shared by a run's processes; its
// content is the holder record, for messages), host.guard (a short
// exclusive flock around reading and writing the record) and
// run-<id>.lock (shared by the processes of a live run, so that another
// run can tell whether the recorded one still holds).
const (
	hostLockName  = "host.lock"
	hostGuardName = "host.guard"
)

// Holder says who holds the host lock.
type Holder struct {
	owner.Process
	// RunID is the run the holder belongs to ("" for a lone holder).
	RunID string `json:"run_id,omitempty"`
}

// Self returns the calling process as a Holder of run runID ("" for none).
func Self(runID string) Holder { return Holder{Process: owner.Self(), RunID: runID} }

// LockedError says that another process holds the host lock.
type LockedError struct {
	Dir    string
	Holder Holder // zero when the record could not be read
}

func (e *LockedError) Error() string {
	h := e.Holder
	path := filepath.Join(e.Dir, hostLockName)
	if h.PID <= 0 {
		return fmt.Sprintf("%v: it holds the host lock (%s): wait for it to finish, or stop it with kill -INT (rig puts back what it changed on the way out)", ErrLocked, path)
	}
	who := h.Process.String()
	if h.RunID != "" {
		who = "run " + h.RunID + ", " + who
	}
	return fmt.Sprintf("%v: %s holds the host lock (%s): wait for it to finish, or stop it with kill -INT %d (rig puts back what it changed on the way out)",
		ErrLocked, who, path, h.PID)
}

// Is makes a *LockedError match ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// HostLock is a held host lock: one per machine (per journal base
// directory), held by every rig process that changes the host. Unlock it
// when the last change is undone.
//
// Contract:
//
//   - A process holds the host lock from before its first change until its
//     last change is undone (or, with `rig nicctl set --keep`, until it
//     exits leaving a pending journal that blocks everyone else). A process
//     that changes the host only now and then (a hand-run probe that turns
//     on its NIC's timestamping in its own journal lane) takes it around
//     each change and unlocks once that change is undone.
//   - The processes of one run share it: `rig run` on its own machine and
//     every agent of the run, whether it reaches the machine locally, in a
//     network namespace or over ssh (each agent locks the machine it runs
//     on), and the probes of the run (their --run-id). They pass the same
//     non-empty RunID and never exclude each other; the lock is held until
//     the last of them unlocks or dies.
//   - A process outside a run (RunID ""): `rig nicctl set`, `rig restore`,
//     a hand-run probe, holds it alone.
//   - LockHost never waits. When another holder has the lock it returns a
//     *LockedError (matching ErrLocked) that names the holder — pid, command
//     line, run id, since when — and what to do.
//   - The kernel drops a flock when its process dies, even by kill -9: a
//     dead holder never blocks anyone. What it left changed is then in its
//     journal, and CheckPending stops the next changer until `rig restore`.
//   - Journal (Open) and the host lock are separate: the journal's lock keeps
//     one lane's file whole, the host lock keeps other changers off the host.
type HostLock struct {
	dir    string
	lock   *os.File
	run    *os.File // run-<id>.lock, shared, for a run member
	holder Holder
}

// LockHost takes the host lock in dir (a journal base directory, created if
// needed) for h. See the contract above. A directory this process may not
// create or write is an error matching os.ErrPermission that says to run
// as root.
func LockHost(dir string, h Holder) (*HostLock, error) {
	if h.RunID != "" && !validRunID(h.RunID) {
		return nil, fmt.Errorf("journal: run id %q: want letters, digits, '-' and '_'", h.RunID)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, permissionHint(fmt.Errorf("journal directory: %w", err))
	}
	unguard, err := guard(dir)
	if err != nil {
		return nil, err
	}
	defer unguard()
	lock, err := os.OpenFile(filepath.Join(dir, hostLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, permissionHint(err)
	}
	l := &HostLock{dir: dir, lock: lock, holder: h}
	fail := func(err error) (*HostLock, error) {
		l.close() // the lock error is the one to report; nothing was written
		return nil, err
	}
	how := syscall.LOCK_EX
	if h.RunID != "" {
		how = syscall.LOCK_SH
	}
	if err := flockNB(lock, how); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fail(&LockedError{Dir: dir, Holder: readHolder(lock)})
		}
		return fail(fmt.Errorf("lock %s: %w", lock.Name(), err))
	}
	rec := readHolder(lock)
	if h.RunID == "" {
		return l, l.writeHolder()
	}
	if rec.RunID != "" && rec.RunID != h.RunID && runAlive(dir, rec.RunID) {
		return fail(&LockedError{Dir: dir, Holder: rec})
	}
	run, err := os.OpenFile(runLockPath(dir, h.RunID), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(err)
	}
	l.run = run
	if err := flockNB(run, syscall.LOCK_SH); err != nil {
		return fail(fmt.Errorf("lock %s: %w", run.Name(), err))
	}
	if rec.RunID == h.RunID {
		return l, nil // joined: the record names the run's first process
	}
	if rec.RunID != "" {
		// A dead run's leftover; one that stays is harmless (no process
		// shares it, so runAlive says dead) and is tried again next time.
		_ = os.Remove(runLockPath(dir, rec.RunID))
	}
	return l, l.writeHolder()
}

// Unlock releases the lock. A run's last process removes its run file.
func (l *HostLock) Unlock() error {
	if l == nil || l.lock == nil {
		return nil
	}
	unguard, err := guard(l.dir)
	if err == nil {
		defer unguard()
	}
	if l.run != nil {
		// Last one out (no one else shares it) removes the run's file.
		// One that stays is a dead run's leftover, which the next
		// LockHost removes.
		if flockNB(l.run, syscall.LOCK_EX) == nil {
			_ = os.Remove(l.run.Name())
		}
	}
	return l.close()
}

func (l *HostLock) close() error {
	var errs []error
	if l.run != nil {
		errs = append(errs, l.run.Close())
		l.run = nil
	}
	if l.lock != nil {
		errs = append(errs, l.lock.Close())
		l.lock = nil
	}
	return errors.Join(errs...)
}

func (l *HostLock) writeHolder() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	// On a failed write the lock is released (close) and the write error
	// returned: the holder record is what failed.
	if err := l.lock.Truncate(0); err != nil {
		l.close()
		return err
	}
	if _, err := l.lock.WriteAt(append(b, '\n'), 0); err != nil {
		l.close()
		return err
	}
	return nil
}

// readHolder reads the record; an empty or foreign content gives a zero
// Holder (the message then names no one).
func readHolder(f *os.File) Holder {
	var h Holder
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)        // io.EOF for a record shorter than b; n says what was read
	_ = json.Unmarshal(b[:n], &h) // empty or foreign: the zero Holder, as documented
	return h
}

// runAlive reports whether a process of run id still shares its run file.
func runAlive(dir, id string) bool {
	f, err := os.OpenFile(runLockPath(dir, id), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close() // only probed with flock, never written
	return errors.Is(flockNB(f, syscall.LOCK_EX), syscall.EWOULDBLOCK)
}

func runLockPath(dir, id string) string { return filepath.Join(dir, "run-"+id+".lock") }

func validRunID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// guard serialises the check-and-record of LockHost and Unlock across
// processes. It is held for microseconds; the bounded wait only guards
// against a holder stopped in the middle (SIGSTOP).
func guard(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, hostGuardName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, permissionHint(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := flockNB(f, syscall.LOCK_EX)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the flock; the file holds nothing
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close() // not taken: nothing to release
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func flockNB(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// permissionHint adds what to do to a permission error: rig keeps its
// journal and lock below a directory only root may write.
func permissionHint(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: changing host settings needs root: run it as root (sudo), or set %s to a directory you may write for a fake host root", err, EnvDir)
	}
	return err
}
