package journal

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockCPU: measuring loops share a CPU's lock, rig noise holds it
// alone; either refuses the other with a *CPUBusyError, and a release
// lets the other in.
func TestLockCPU(t *testing.T) {
	dir := t.TempDir()
	r1, err := LockCPU(dir, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := LockCPU(dir, 3, false)
	if err != nil {
		t.Fatalf("two responders on one CPU: %v", err)
	}
	var busy *CPUBusyError
	if _, err := LockCPU(dir, 3, true); !errors.As(err, &busy) || !errors.Is(err, ErrCPUBusy) || !busy.Alone || !strings.Contains(err.Error(), "CPU 3: another rig process runs a measuring loop") {
		t.Fatalf("noise beside responders: %v", err)
	}
	if u, err := LockCPU(dir, 4, true); err != nil {
		t.Fatalf("another CPU: %v", err)
	} else {
		u()
	}
	r1()
	r2()
	noise, err := LockCPU(dir, 3, true)
	if err != nil {
		t.Fatalf("after the responders left: %v", err)
	}
	if _, err := LockCPU(dir, 3, false); !errors.As(err, &busy) || busy.Alone || !strings.Contains(err.Error(), "measures its noise") {
		t.Fatalf("responder while noise measures: %v", err)
	}
	noise()
}

// TestLockCPUNamesHolder: the refusal names the process that holds the
// lock, read from /proc/locks.
func TestLockCPUNamesHolder(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed (util-linux)")
	}
	dir := t.TempDir()
	cmd := exec.Command("flock", "--shared", filepath.Join(dir, "cpu-2.lock"), "sh", "-c", "echo held; read x")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "held\n" {
		t.Fatalf("flock: %q, %v", l, err)
	}
	_, err := LockCPU(dir, 2, true)
	if !errors.Is(err, ErrCPUBusy) || !strings.Contains(err.Error(), "(flock --shared "+dir) {
		t.Fatalf("%v: want the holder named", err)
	}
}
