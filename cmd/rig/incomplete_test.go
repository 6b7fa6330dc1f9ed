package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
)

// findProc returns the pid of a process whose command line contains every
// part, or 0.
func findProc(parts ...string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		all := true
		for _, p := range parts {
			all = all && strings.Contains(cmd, p)
		}
		if all {
			return pid
		}
	}
	return 0
}

// waitSending waits until the rig send of group that runs once round0 (a
// glob) names a file — the next round's — has sent n requests (its
// namespace's UDP datagrams since it was found); the test fails after 90 s,
// with log.
func waitSending(t *testing.T, round0, group string, n int, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for sent, base := 0, -1; base < 0 || sent < base+n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the round after %s did not send %d requests:\n%s", round0, n, log)
		}
		m, _ := filepath.Glob(round0)
		if pid := findProc("send", group); len(m) > 0 && pid != 0 {
			if sent, _ = netlabtest.UDPSent(pid); base < 0 {
				base = sent
			}
		}
	}
}

// TestRoundsCutShort runs a scenario twice on the emulated topology: once
// interrupted with SIGINT during its second round, once with the
// responder killed (-9) during it. The round cut short is left out of the
// tables (not reported as 2 000 lost requests beside the full rounds),
// listed as a problem with its counts, the report says the run was
// interrupted, and `rig report` exits 3.
func TestRoundsCutShort(t *testing.T) {
	testbin.Integration(t)
	for i, c := range []struct {
		name, group string
		cut         func(t *testing.T, cmd *exec.Cmd, group string)
		why         string
	}{
		{"sigint", "239.44.0.7:7407", func(t *testing.T, cmd *exec.Cmd, group string) {
			cmd.Process.Signal(syscall.SIGINT)
		}, "the sender stopped early (interrupted"},
		{"responder-killed", "239.44.0.8:7408", func(t *testing.T, cmd *exec.Cmd, group string) {
			pid := findProc("respond", group)
			if pid == 0 {
				t.Fatal("no rig respond process found")
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}, "responder.samples is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			scen := filepath.Join(dir, "cut.yaml")
			os.WriteFile(scen, []byte(`name: cut`+strconv.Itoa(i)+`
emulate: netns
traffic: {group: `+c.group+`, interval: 1ms, count: 3000}
timestamps: software
rounds: 3
arms:
  - name: base
`), 0o644)
			results := filepath.Join(dir, "results")
			cmd := exec.Command(testbin.Rig(t), "run", "--results", results, scen)
			cmd.Env = append(os.Environ(), journal.EnvDir+"="+filepath.Join(dir, "state"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Cut round 1 once 300 of its 3000 requests are out.
			waitSending(t, filepath.Join(results, "cut*", "arms", "base", "round-0", "sender.samples"), c.group, 300, &stderr)
			c.cut(t, cmd, c.group)
			if err := cmd.Wait(); err == nil {
				t.Errorf("rig run exit 0 after its round was cut:\n%s", stderr.String())
			}
			runs, _ := filepath.Glob(filepath.Join(results, "cut*"))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			rep, err := analysis.Run(runs[0], analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := rep.Arm("base")
			if len(a.Rounds) != 1 || a.Rounds[0] != 0 {
				t.Errorf("rounds analysed %v, want only the finished round 0", a.Rounds)
			}
			if mr := a.Metrics[analysis.RTT]; mr == nil || mr.Summary.Lost != 0 || mr.Summary.NotSent != 0 {
				t.Errorf("rtt summary of the finished rounds: %+v", mr)
			}
			if len(a.Accounting) != 2 || len(a.Accounting[1].LeftOut) == 0 || !strings.Contains(strings.Join(a.Accounting[1].LeftOut, "; "), c.why) {
				t.Errorf("round 1 accounting %+v, want it left out: %s", a.Accounting, c.why)
			}
			if rep.Interrupted == "" || !hasProblem(rep.Problems, "the run was interrupted") || !hasProblem(rep.Problems, `arm "base" round 1: left out of every statistic`) {
				t.Errorf("problems %q", rep.Problems)
			}
			m, _ := rundir.ReadManifest(runs[0])
			t.Logf("manifest: interrupted %q; round 1: %+v", m.Interrupted, a.Accounting[1])
			md, _ := os.ReadFile(filepath.Join(runs[0], "tables.md"))
			if !bytes.Contains(md, []byte("**The run was interrupted**")) || !bytes.Contains(md, []byte("left out of every table**: base round 1")) {
				t.Errorf("tables.md written by rig run does not say what happened:\n%s", md)
			}
			if code, _ := runRig(t, nil, "report", runs[0]); code != 3 {
				t.Errorf("rig report: exit %d, want 3", code)
			}
		})
	}
}

func hasProblem(ps []string, s string) bool {
	for _, p := range ps {
		if strings.Contains(p, s) {
			return true
		}
	}
	return false
}
