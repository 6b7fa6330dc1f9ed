package nicctl

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/testbin"
)

var (
	rigOnce sync.Once
	rigPath string
	rigErr  error
	rigDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if rigDir != "" {
		os.RemoveAll(rigDir)
	}
	os.Exit(code)
}

// buildRig builds cmd/rig once per test binary.
func buildRig(t *testing.T) string {
	t.Helper()
	rigOnce.Do(func() {
		rigDir, rigErr = os.MkdirTemp("", "rig-nicctl-test")
		if rigErr != nil {
			return
		}
		rigPath = filepath.Join(rigDir, "rig")
		out, err := exec.Command("go", "build", "-o", rigPath, "github.com/rig-project/rig/cmd/rig").CombinedOutput()
		if err != nil {
			rigErr = err
			rigPath = string(out)
		}
	})
	if rigErr != nil {
		t.Fatalf("go build cmd/rig: %v\n%s", rigErr, rigPath)
	}
	return rigPath
}

func rigCmd(bin, root, state string, args ...string) *exec.Cmd {
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), "RIG_HOST_ROOT="+root, "RIG_STATE_DIR="+state)
	return c
}

// TestKill9ThenRestore kills `rig nicctl set` after it has changed two IRQs
// (the second one not yet recorded as effective) and checks that
// `rig restore` puts the fake tree back byte for byte.
func TestKill9ThenRestore(t *testing.T) {
	bin := buildRig(t)
	fs := buildTree(t, "interrupts.mixed", mixedNICs)
	state := t.TempDir()
	before := snapshot(t, fs.Root)

	cmd := rigCmd(bin, fs.Root, state, "nicctl", "set", "ens5", "--irq-cpu-per-queue", "1,2,3")
	cmd.Env = append(cmd.Env, "RIG_TEST_PAUSE_AFTER_APPLY=3")
	killAtPause(t, cmd)
	mid := snapshot(t, fs.Root)
	if d := diffSnap(before, mid); len(d) != 3 {
		t.Fatalf("expected 3 changed IRQ files at the kill, got %d:\n%s", len(d), strings.Join(d, "\n"))
	}

	// Any host-changing command now refuses.
	out, err := rigCmd(bin, fs.Root, state, "nicctl", "set", "ens5", "--irq-cpus", "0").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("run `rig restore`")) {
		t.Fatalf("set with a pending journal: %v\n%s", err, out)
	}

	out, err = rigCmd(bin, fs.Root, state, "restore").CombinedOutput()
	if err != nil {
		t.Fatalf("rig restore: %v\n%s", err, out)
	}
	if n := bytes.Count(out, []byte("restored sysfs /proc/irq/")); n != 3 {
		t.Fatalf("restore reported %d values:\n%s", n, out)
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("fake tree differs after restore:\n%s", strings.Join(d, "\n"))
	}
	out, err = rigCmd(bin, fs.Root, state, "restore").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("nothing to restore")) {
		t.Fatalf("second restore: %v\n%s", err, out)
	}
}

// TestSetHoldsThenUndoesOnSIGTERM checks the normal path: hold until
// SIGTERM, then unwind in the same process.
func TestSetHoldsThenUndoesOnSIGTERM(t *testing.T) {
	bin := buildRig(t)
	fs := buildTree(t, "interrupts.mixed", mixedNICs)
	state := t.TempDir()
	before := snapshot(t, fs.Root)
	cmd := rigCmd(bin, fs.Root, state, "nicctl", "set", "eth1", "--irq-cpus", "3")
	var out syncBuf
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "holding until") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no hold:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, _ := fs.ReadString("/proc/irq/121/smp_affinity_list"); v != "3" {
		t.Fatalf("IRQ 121 not moved while held: %q", v)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rig after SIGTERM: %v\n%s", err, out.String())
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("tree differs after SIGTERM:\n%s\n%s", strings.Join(d, "\n"), out.String())
	}
	if !strings.Contains(out.String(), "restored sysfs /proc/irq/124/smp_affinity_list = 0-3") {
		t.Fatalf("no restore report:\n%s", out.String())
	}
}

// syncBuf is a bytes.Buffer safe for the exec copy goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// killAtPause starts cmd (with RIG_TEST_PAUSE_AFTER_APPLY set), waits
// for its "rig: test pause" line — the change applied, nothing undone —
// and kills it with SIGKILL there.
func killAtPause(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testbin.KillAtPause(t, cmd, stderr, 30*time.Second)
}
