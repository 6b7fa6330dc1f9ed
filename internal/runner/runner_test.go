package runner

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

const threeArms = `name: itest
emulate: netns
traffic:
  group: 239.66.0.1:7600
  interval: 1ms
  count: 600
  warmup: 2
timestamps: software
rounds: 2
order: rotate
baseline: cpu0
defaults:
  responder:
    poll: block
arms:
  - name: cpu0
    responder:
      cpu: 0
  - name: cpu1
    responder:
      cpu: 1
  - name: cpu0-stress1
    responder:
      cpu: 0
    load:
      stress-ng: --cpu 1 --cpu-method fft
      cpus: 1
`

// loadYAML writes src to dir/name and loads it as a scenario.
func loadYAML(t *testing.T, dir, name, src string) *scenario.Scenario {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runOptions runs s with the test's rig binary, on this machine's files,
// its run directory under dir/results and its journal in dir/state.
func runOptions(t *testing.T, dir string, s *scenario.Scenario, log io.Writer) Options {
	return Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"), Rig: testbin.Rig(t),
		StateDir: filepath.Join(dir, "state"), FS: hostfs.Default(), Log: log}
}

// runYAML runs the scenario src (written to dir/name) with runOptions
// and returns the run, its log and its error.
func runYAML(t *testing.T, dir, name, src string) (*Result, string, error) {
	t.Helper()
	s := loadYAML(t, dir, name, src)
	var log bytes.Buffer
	res, err := Run(context.Background(), runOptions(t, dir, s, &log))
	return res, log.String(), err
}

// TestRunThreeArms runs a 3-arm, 2-round scenario on the emulated topology
// and checks the run directory, the rotation, that stress-ng is gone and
// that no host change is left behind.
func TestRunThreeArms(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	dir := t.TempDir()
	s := loadYAML(t, dir, "itest.yaml", threeArms)
	fs := hostfs.Default()
	local, err := facts.Read(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := scenario.Validate(s, map[string]*facts.Facts{"sender": local, "responder": local}); err != nil {
		t.Fatal(err)
	}
	runLabs := func() (n int) {
		ents, _ := os.ReadDir(netlab.Dir())
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "run") {
				n++
			}
		}
		return n
	}
	labsBefore := runLabs()
	var log bytes.Buffer
	state := filepath.Join(dir, "state")
	res, err := Run(context.Background(), runOptions(t, dir, s, &log))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	m, err := rundir.ReadManifest(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Arms) != 3 || m.Rounds != 2 || len(m.Order) != 2 {
		t.Fatalf("manifest arms %d rounds %d order %v", len(m.Arms), m.Rounds, m.Order)
	}
	// rotate: round 0 starts at arm 0, round 1 at arm 1.
	if !slices.Equal(m.Order[0], []int{0, 1, 2}) || !slices.Equal(m.Order[1], []int{1, 2, 0}) {
		t.Errorf("order %v, want [[0 1 2] [1 2 0]]", m.Order)
	}
	for _, a := range []string{"cpu0", "cpu1", "cpu0-stress1"} {
		for r := 0; r < 2; r++ {
			j, err := samples.JoinDir(rundir.RoundDir(res.Dir, a, r), 0)
			if err != nil {
				t.Fatalf("arm %s round %d: %v", a, r, err)
			}
			if c := j.Counters[samples.RoleSender]; c.Sent != 600 || len(j.Roles) != 3 {
				t.Errorf("arm %s round %d: sender %+v roles %v", a, r, c, j.Roles)
			}
			tel, err := os.ReadFile(filepath.Join(rundir.RoundDir(res.Dir, a, r), rundir.Telemetry))
			if err != nil || !bytes.Contains(tel, []byte(`"threads_seen"`)) {
				t.Errorf("arm %s round %d: telemetry.json: %v\n%.300s", a, r, err, tel)
			}
		}
	}
	for _, f := range []string{"tables.md", "tables.csv", "report.json", rundir.ManifestFile, "env/responder.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	if testbin.StressNGRuns() {
		t.Error("stress-ng still running after the run")
	}
	if err := journal.CheckPending(state); err != nil {
		t.Errorf("journal left open entries: %v", err)
	}
	if after := runLabs(); after != labsBefore {
		t.Errorf("emulated topology left behind: %d run labs before, %d after", labsBefore, after)
	}
}
