package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
)

// noiseRun runs `rig noise ARGS --format json` with the native program
// found in dir and returns its result and stderr.
func noiseRun(t *testing.T, dir string, args ...string) (*rundir.Noise, string) {
	t.Helper()
	cmd := exec.Command(testbin.Rig(t), append([]string{"noise", "--format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rig noise %v: %v\n%s", args, err, stderr.String())
	}
	var r rundir.Noise
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("rig noise %v: %v\n%s", args, err, out)
	}
	// rig's own threads keep off the CPU they measure.
	for i := 0; r.Telemetry != nil && i < len(r.Telemetry.Threads); i++ {
		if th := r.Telemetry.Threads[i]; th.PID == cmd.Process.Pid {
			t.Errorf("rig noise %v: its own thread %d (%s) ran on the measured CPU", args, th.TID, th.Comm)
		}
	}
	return &r, stderr.String()
}

// checkNoise checks what every noise result promises.
func checkNoise(t *testing.T, what string, r *rundir.Noise, forNS int64) {
	t.Helper()
	if len(r.Gaps) != 4 || r.DurationNS < forNS*99/100 || r.Interrupted != "" || r.Floor.TypicalNS <= 0 || r.Floor.TickNS <= 0 || r.Counter.HzCalibrated <= 0 {
		t.Fatalf("%s: %+v", what, r)
	}
	var hist uint64
	for _, b := range r.Histogram {
		hist += b.Count
	}
	if hist != r.Gaps[0].Count {
		t.Errorf("%s: the histogram holds %d gaps, %d are above %d ns", what, hist, r.Gaps[0].Count, r.Gaps[0].AboveNS)
	}
	for i, g := range r.Gaps {
		if i > 0 && g.Count > r.Gaps[i-1].Count {
			t.Errorf("%s: %d gaps above %d ns but %d above %d ns", what, r.Gaps[i-1].Count, r.Gaps[i-1].AboveNS, g.Count, g.AboveNS)
		}
		if g.Count > 0 && r.LongestNS <= g.AboveNS {
			t.Errorf("%s: the longest gap %d ns is not above %d ns, which %d gaps are", what, r.LongestNS, g.AboveNS, g.Count)
		}
	}
	// osnoise runs where the kernel has it, and says why not elsewhere.
	if (r.OSNoise == nil) == (r.OSNoiseMissing == "") || r.Telemetry == nil {
		t.Errorf("%s: osnoise %+v (missing: %q), telemetry %v (missing: %q)", what, r.OSNoise, r.OSNoiseMissing, r.Telemetry != nil, r.TelemetryMissing)
	}
	for _, g := range r.Longest {
		if g.Who == "" || g.StartNS < r.StartNS || g.StartNS > r.EndNS {
			t.Errorf("%s: longest gap %+v outside the window or unexplained", what, g)
		}
	}
}

// TestNoiseProbe: rig noise --cpu 1 --for 2s, with the program as built
// and under ASan and UBSan, gives counts that shrink with the threshold, a
// longest gap above every threshold hit, a floor, a histogram that sums to
// the gaps, telemetry of the window and osnoise or why not; --format md
// states the same.
func TestNoiseProbe(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(journal.EnvDir, t.TempDir())
	dir := testbin.Native(t)
	for _, build := range []string{"", "san"} {
		r, stderr := noiseRun(t, filepath.Join(dir, build), "--cpu", "1", "--for", "2s")
		checkNoise(t, "rig noise "+build, r, 2e9)
		if stderr != "" {
			t.Errorf("%s: stderr %s", build, stderr)
		}
	}
	cmd := exec.Command(testbin.Rig(t), "noise", "--cpu", "1", "--for", "200ms")
	cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
	out, err := cmd.CombinedOutput()
	for _, want := range []string{"rig noise: CPU 1 (other), 0.2", "| 100 µs | ", "detection floor: ", "counter: ", "osnoise: ", "rule: "} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("--format md: %v, lacks %q:\n%s", err, want, out)
		}
	}
}

// TestNoiseSeesInterference: a SCHED_FIFO helper pinned to the CPU that
// wakes every 10 ms and spins 200 µs shows as gaps above 100 µs, at least
// one per burst it logged inside the window (bursts that fell into one
// longer gap count once), about 100 a second, and telemetry names it.
// Lower bounds only: the hypervisor adds stalls of its own.
func TestNoiseSeesInterference(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(journal.EnvDir, t.TempDir())
	dir := testbin.Native(t)
	ifr := exec.Command(filepath.Join(dir, "rig-interfere"), "--cpu", "1", "--fifo", "50", "--period-us", "10000", "--spin-us", "200")
	out, _ := ifr.StdoutPipe()
	ifr.Stderr = os.Stderr
	if err := ifr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { ifr.Process.Kill(); ifr.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("rig-interfere: %q", lines.Text())
	}
	// The loop runs SCHED_FIFO below the helper: the helper's bursts still
	// preempt it, and a loaded machine's other work cannot make gaps that
	// swallow bursts beyond the longest gaps the result keeps.
	r, _ := noiseRun(t, dir, "--cpu", "1", "--for", "2s", "--sched", "fifo:10")
	ifr.Process.Signal(syscall.SIGTERM)
	var bursts [][2]int64
	for lines.Scan() {
		var b [2]int64
		if f := strings.Fields(lines.Text()); len(f) == 2 {
			b[0], b[1] = atoi64(t, f[0]), atoi64(t, f[1])
			bursts = append(bursts, b)
		}
	}
	ifr.Wait()
	checkNoise(t, "with interference", r, 2e9)
	in, swallowed := 0, 0
	end := r.StartMonoNS + r.DurationNS
	for _, b := range bursts {
		if b[0] >= r.StartMonoNS && b[1] <= end {
			in++
		}
	}
	for _, g := range r.Longest {
		n := 0
		for _, b := range bursts {
			if b[0] <= g.StartMonoNS+int64(g.NS) && b[1] >= g.StartMonoNS {
				n++
			}
		}
		swallowed += max(0, n-1)
	}
	above := r.Gaps[3]
	t.Logf("%d bursts in the window (%d of them inside one longer gap), %d gaps above 100 µs (%.0f/s), longest %d ns", in, swallowed, above.Count, above.PerSec, r.LongestNS)
	if in-swallowed < 50 {
		t.Fatalf("only %d of the helper's bursts stood alone in the 2 s window (%d in it): the test proves nothing", in-swallowed, in)
	}
	if above.Count < uint64(in-swallowed) || above.PerSec < 25 {
		t.Errorf("%d gaps above 100 µs (%.1f/s) for %d bursts of 200 µs every 10 ms", above.Count, above.PerSec, in-swallowed)
	}
	named := false
	for _, g := range r.Longest {
		named = named || strings.Contains(g.Who, "rig-interfere")
	}
	if !named {
		t.Errorf("no longest gap names rig-interfere: %+v", r.Longest)
	}
}

func atoi64(t *testing.T, s string) int64 {
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("rig-interfere printed %q", s)
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

// TestNoiseRefuses: a CPU that does not exist, a bad --for or --sched, a
// missing program (saying how to build it) and a CPU a rig responder's
// loop claims are refused with exit 2 before anything runs; and a
// responder refuses a CPU rig noise measures.
func TestNoiseRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(journal.EnvDir, dir)
	// A stand-in program: reaching it means a refusal came too late.
	os.WriteFile(filepath.Join(dir, native.NoiseProgram), []byte("#!/bin/sh\necho 'refused the stand-in ran' >&3\n"), 0o755)
	t.Setenv(native.EnvDir, dir)
	if code, _, stderr := rigIn(t, "noise", "--cpu", "4095"); code != 2 || !strings.Contains(stderr, "CPU 4095 does not exist or is offline") {
		t.Errorf("CPU 4095: exit %d, %s", code, stderr)
	}
	if code, _, stderr := rigIn(t, "noise", "--cpu", "0", "--for", "0s"); code != 2 || !strings.Contains(stderr, "--for 0s: want 1ms to 24h") {
		t.Errorf("--for 0s: exit %d, %s", code, stderr)
	}
	if code, _, stderr := rigIn(t, "noise"); code != 2 || !strings.Contains(stderr, "--cpu is required") {
		t.Errorf("no --cpu: exit %d, %s", code, stderr)
	}
	if code, _, stderr := rigIn(t, "noise", "--cpu", "0", "--sched", "rr:5"); code != 2 || !strings.Contains(stderr, "rr:5") {
		t.Errorf("--sched rr:5: exit %d, %s", code, stderr)
	}
	t.Setenv(native.EnvDir, t.TempDir())
	if code, _, stderr := rigIn(t, "noise", "--cpu", "0"); code != 2 || !strings.Contains(stderr, "the native program rig-noise-native is missing") || !strings.Contains(stderr, "make build") {
		t.Errorf("no program: exit %d, %s", code, stderr)
	}
	t.Setenv(native.EnvDir, dir)
	unlock, err := journal.LockCPU(dir, 0, false) // what rig respond --cpu 0 holds
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := rigIn(t, "noise", "--cpu", "0")
	unlock()
	if code != 2 || !strings.Contains(stderr, "CPU 0: another rig process runs a measuring loop there") {
		t.Errorf("beside a responder: exit %d, %s", code, stderr)
	}
	unlock, err = journal.LockCPU(dir, 0, true) // what rig noise --cpu 0 holds
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, stderr = rigIn(t, "respond", "--iface", "lo", "--cpu", "0", "--run-id", "a11ce", "--timestamps", "software")
	if code != 2 || !strings.Contains(stderr, "CPU 0: another rig process measures its noise") {
		t.Errorf("rig respond where rig noise measures: exit %d, %s", code, stderr)
	}
}
