package testbin

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/rundir"
)

// Integration is the one gate of the tests that build network namespaces,
// start stress-ng, need root or change host settings: it skips t under
// -short (so `go test -short ./...` and `make unit` start none of them) and
// when not root. netlabtest.New and StressNG call it; TestGate checks that
// no test file checks for root or builds namespaces on its own.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, host settings)")
	}
}

// StressNG gates t with Integration, and skips it when stress-ng is
// missing or when a stress-ng that is not the test's own runs already (the
// test could not prove that its own load was stopped).
func StressNG(t testing.TB) {
	t.Helper()
	Integration(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("stress-ng not installed (make deps installs it)")
	}
	if StressNGRuns() {
		t.Skip("a stress-ng from elsewhere is running; cannot prove the test's own load stops")
	}
}

// BusyElsewhere skips t when a ranking that should have chosen free (the
// CPU the test keeps unloaded) saw it run other work most of the time: the
// machine is busy elsewhere (other builds on a shared development
// machine), the ranking was right to see it, and the test proves nothing.
func BusyElsewhere(t testing.TB, r *rundir.Ranking, free int) {
	t.Helper()
	if c := r.Get(free); c != nil && c.RunUS > 500_000 {
		t.Skipf("CPU %d, which the test keeps free, ran %.0f µs/s of other threads (%v): the machine is busy elsewhere", free, c.RunUS, c.TopThreads)
	}
}

// StressNGRuns reports whether any stress-ng process runs on this host.
func StressNGRuns() bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "stress-ng") {
			return true
		}
	}
	return false
}

// Alive reports whether process pid runs: it exists and is no zombie
// waiting to be reaped.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	return err == nil && i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// KillAtPause waits (up to timeout) for the started cmd to print journal's
// "rig: test pause" line on stderr, then kills it with SIGKILL and reaps
// it: a kill -9 at the moment a journaled change is made and not yet
// recorded as effective. It fails t when cmd ends before the pause.
func KillAtPause(t testing.TB, cmd *exec.Cmd, stderr io.Reader, timeout time.Duration) {
	t.Helper()
	paused := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all []string
		for sc.Scan() {
			all = append(all, sc.Text())
			if strings.Contains(sc.Text(), "rig: test pause") {
				paused <- ""
			}
		}
		paused <- strings.Join(all, "\n")
	}()
	select {
	case msg := <-paused:
		if msg != "" {
			t.Fatalf("%s ended before the pause:\n%s", cmd.Path, msg)
		}
	case <-time.After(timeout):
		t.Fatalf("%s never reached the test pause", cmd.Path)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}
