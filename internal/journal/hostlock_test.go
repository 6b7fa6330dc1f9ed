package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// flock conflicts between open file descriptions, so one process can play
// several holders: each LockHost opens its own.
func TestHostLockExcludes(t *testing.T) {
	dir := t.TempDir()
	solo, err := LockHost(dir, Self(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []Holder{Self(""), Self("run1")} {
		_, err := LockHost(dir, h)
		var le *LockedError
		if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
			t.Fatalf("LockHost(%q) while a lone holder has it: %v, want *LockedError", h.RunID, err)
		}
		msg := err.Error()
		for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), os.Args[0], "kill -INT " + strconv.Itoa(os.Getpid()), "host.lock"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
	}
	if err := solo.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := LockHost(dir, Self(""))
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	again.Unlock()
}

// TestHostLockRunShares: the processes of one run share the lock, exclude
// another run and a lone holder, and the lock is free once the last one
// unlocks.
func TestHostLockRunShares(t *testing.T) {
	dir := t.TempDir()
	a, err := LockHost(dir, Self("runA"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := LockHost(dir, Self("runA"))
	if err != nil {
		t.Fatalf("second process of the same run: %v", err)
	}
	for _, h := range []Holder{Self(""), Self("runB")} {
		_, err := LockHost(dir, h)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "run runA") {
			t.Errorf("LockHost(%q) during run runA: %v, want locked naming run runA", h.RunID, err)
		}
	}
	a.Unlock()
	// b still holds for runA: the first process being gone changes nothing.
	if _, err := LockHost(dir, Self("runB")); !errors.Is(err, ErrLocked) {
		t.Errorf("runB while runA's second process holds: %v", err)
	}
	b.Unlock()
	if _, err := os.Stat(runLockPath(dir, "runA")); !os.IsNotExist(err) {
		t.Errorf("run file of a finished run left: %v", err)
	}
	c, err := LockHost(dir, Self("runB"))
	if err != nil {
		t.Fatalf("runB after runA ended: %v", err)
	}
	c.Unlock()
}

// TestHostLockStaleRecord: a record naming a run none of whose processes
// hold anything (they died) does not block.
func TestHostLockStaleRecord(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, hostLockName), []byte(`{"pid":1,"run_id":"dead"}`+"\n"), 0o600)
	os.WriteFile(runLockPath(dir, "dead"), nil, 0o600)
	l, err := LockHost(dir, Self("fresh"))
	if err != nil {
		t.Fatalf("stale record blocked: %v", err)
	}
	defer l.Unlock()
	if _, err := os.Stat(runLockPath(dir, "dead")); !os.IsNotExist(err) {
		t.Errorf("dead run's file not removed: %v", err)
	}
	if _, err := LockHost(dir, Self("x/y")); err == nil || errors.Is(err, ErrLocked) {
		t.Errorf("bad run id: %v", err)
	}
}

func TestHostLockPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere")
	}
	_, err := LockHost("/proc/rig-no-such-dir", Self(""))
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "run it as root") {
		t.Errorf("LockHost in an unwritable place: %v", err)
	}
}
