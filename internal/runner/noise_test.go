package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
)

const noiseArms = `name: noise
emulate: netns
traffic: {group: 239.68.0.1:7620, interval: 1ms, count: 200}
timestamps: software
rounds: 2
defaults:
  responder: {cpu: 1}
arms:
  - name: plain
  - name: noisy
    noise: {for: 200ms}
`

// runNoise runs noiseArms on the emulated topology with the native
// programs found in nativeDir.
func runNoise(t *testing.T, nativeDir string) (*Result, string, error) {
	return runNoiseSrc(t, nativeDir, noiseArms)
}

func runNoiseSrc(t *testing.T, nativeDir, src string) (*Result, string, error) {
	t.Helper()
	t.Setenv(native.EnvDir, nativeDir)
	dir := t.TempDir()
	res, log, err := runYAML(t, dir, "noise.yaml", src)
	if perr := journal.CheckPending(filepath.Join(dir, "state")); perr != nil {
		t.Errorf("journal: %v", perr)
	}
	return res, log, err
}

// TestRunNoiseWindow: the arm with noise: {for: 200ms} runs rig noise on
// the responder CPU through the responder's agent before each round's
// probes; every round of it keeps noise.json, the other arm's none, and
// tables.md has the Platform noise table with the arm's two windows.
func TestRunNoiseWindow(t *testing.T) {
	testbin.Integration(t)
	res, log, err := runNoise(t, testbin.Native(t))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	for k := range 2 {
		b, err := os.ReadFile(filepath.Join(rundir.RoundDir(res.Dir, "noisy", k), rundir.NoiseFile))
		if err != nil {
			t.Fatal(err)
		}
		var n rundir.Noise
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatal(err)
		}
		if n.CPU != 1 || len(n.Gaps) != 4 || n.DurationNS < 190e6 || n.Floor.Reads == 0 || n.Counter.CalibratedBy != "CLOCK_MONOTONIC_RAW" {
			t.Errorf("round %d: noise.json %+v", k, n)
		}
		if _, err := os.Stat(filepath.Join(rundir.RoundDir(res.Dir, "plain", k), rundir.NoiseFile)); err == nil {
			t.Errorf("round %d: the arm without noise has noise.json", k)
		}
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	if err != nil || !strings.Contains(string(md), "## Platform noise") || !strings.Contains(string(md), "| noisy | 2 | 0.") {
		t.Errorf("tables.md lacks the noise table (%v):\n%s", err, md)
	}
	_, table, _ := strings.Cut(string(md), "## Platform noise")
	t.Logf("the noise table:%s", table[:strings.Index(table+"\n## ", "\n## ")])
}

// TestRunNoiseFanout: with two responders, the noise arm's window runs
// on each responder's CPU through its own agent before each round's
// probes; each round keeps noise.json (responder 0, CPU 0) and
// noise-1.json (responder 1, CPU 1), and the Platform noise table has a
// row per arm and responder, with a responder column.
func TestRunNoiseFanout(t *testing.T) {
	testbin.Integration(t)
	src := strings.Replace(noiseArms, "defaults:\n  responder: {cpu: 1}\n", `responders: 2
defaults:
  responders:
    responder: {responder: {cpu: 0}}
    responder1: {responder: {cpu: 1}}
`, 1)
	res, log, err := runNoiseSrc(t, testbin.Native(t), src)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	for k := range 2 {
		for id, cpu := range []int{0, 1} {
			b, err := os.ReadFile(filepath.Join(rundir.RoundDir(res.Dir, "noisy", k), rundir.NoiseFileOf(uint32(id))))
			if err != nil {
				t.Fatal(err)
			}
			var n rundir.Noise
			if err := json.Unmarshal(b, &n); err != nil {
				t.Fatal(err)
			}
			if n.CPU != cpu || len(n.Gaps) != 4 || n.DurationNS < 190e6 {
				t.Errorf("round %d responder %d: %+v", k, id, n)
			}
			if _, err := os.Stat(filepath.Join(rundir.RoundDir(res.Dir, "plain", k), rundir.NoiseFileOf(uint32(id)))); err == nil {
				t.Errorf("round %d: the arm without noise has a window of responder %d", k, id)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	for _, want := range []string{"| arm | responder | windows | seconds |", "| noisy | responder | 2 | 0.", "| noisy | responder1 | 2 | 0."} {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("tables.md lacks %q (%v):\n%s", want, err, md)
		}
	}
}

// TestRunNoiseWindowFails: a window that cannot run (no native program)
// stops the run at that round, and the run's tables say why.
func TestRunNoiseWindowFails(t *testing.T) {
	testbin.Integration(t)
	res, log, err := runNoise(t, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "noise window: rig noise exited") || !strings.Contains(err.Error(), "rig-noise-native is missing") {
		t.Fatalf("run: %v, want the noise window's failure\n%s", err, log)
	}
	if res == nil {
		t.Fatalf("no run directory: %v", err)
	}
	md, rerr := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	if rerr != nil || !strings.Contains(string(md), "noise window: rig noise exited") {
		t.Errorf("tables.md does not say the window failed (%v):\n%s", rerr, md)
	}
}
