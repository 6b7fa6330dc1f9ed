package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestQuietestPinsTheUnloadedCPU runs an emulated scenario whose arm says
// responder.cpu: quietest while stress-ng (started by the test, not by the
// arm) loads one CPU: every round ranks the CPUs, runs on the other one,
// keeps cpu-rank.json, and the report shows the ranking; the other way
// round too. require-check runs rig check through the agent on the CPU a
// ranking picks.
func TestQuietestPinsTheUnloadedCPU(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	for busy, want := range map[int]int{0: 1, 1: 0} {
		t.Run(fmt.Sprintf("stress-on-%d", busy), func(t *testing.T) {
			res, log := runBesideStress(t, busy, `name: quiet
emulate: netns
traffic: {group: 239.67.0.1:7610, interval: 1ms, count: 300}
timestamps: software
rounds: 2
require-check: true
arms:
  - name: quietest
    responder: {cpu: {quietest: allowed, window: 700ms}}
`)
			for r := 0; r < 2; r++ {
				rd := rundir.RoundDir(res.Dir, "quietest", r)
				b, err := os.ReadFile(filepath.Join(rd, rundir.CPURank))
				if err != nil {
					t.Fatal(err)
				}
				var rk rundir.Ranking
				if err := json.Unmarshal(b, &rk); err != nil || len(rk.CPUs) != 2 {
					t.Fatalf("round %d ranking: %v %+v", r, err, rk)
				}
				if rk.Chosen != want {
					testbin.BusyElsewhere(t, &rk, want)
					t.Fatalf("round %d: chose CPU %d with stress-ng on CPU %d: %+v", r, rk.Chosen, busy, rk.CPUs)
				}
				f, err := samples.ReadFile(filepath.Join(rd, samples.FileName(samples.RoleResponder)))
				if err != nil {
					t.Fatal(err)
				}
				if got := f.Header.Settings["cpu"]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("round %d: responder ran on CPU %v, want %d (settings %v)", r, got, want, f.Header.Settings)
				}
				var tel struct {
					CPUs []int `json:"cpus"`
				}
				b, err = os.ReadFile(filepath.Join(rd, rundir.Telemetry))
				if err == nil {
					err = json.Unmarshal(b, &tel)
				}
				if err != nil || fmt.Sprint(tel.CPUs) != fmt.Sprintf("[%d]", want) {
					t.Errorf("round %d: telemetry on %v, want CPU %d: %v", r, tel.CPUs, want, err)
				}
			}
			// After the rankings: a machine busy elsewhere skips the test there.
			if !strings.Contains(log, fmt.Sprintf("rig check: responder CPU %d", want)) {
				t.Errorf("require-check did not check CPU %d:\n%s", want, log)
			}
			rep, err := os.ReadFile(filepath.Join(res.Dir, "report.md"))
			if err != nil || !bytes.Contains(rep, []byte(fmt.Sprintf("round 0: CPU %d", want))) || !bytes.Contains(rep, []byte("Responder CPU chosen by ranking")) {
				t.Errorf("report.md lacks the ranking: %v", err)
			}
		})
	}
}

// TestQuietestFanout runs an emulated fan-out whose arm says
// responder.cpu: quietest for both responders while stress-ng (started
// by the test) loads CPU 0: the responders share this machine, so one
// ranking gives responder (id 0) the quiet CPU 1 and responder1 CPU 0,
// each round keeps each responder's ranking, each responder ran where
// its ranking says, and the report shows both picks.
func TestQuietestFanout(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	res, log := runBesideStress(t, 0, `name: quiet-fanout
emulate: netns
responders: 2
traffic: {group: 239.67.0.2:7611, interval: 1ms, count: 300}
timestamps: software
rounds: 2
require-check: true
arms:
  - name: quietest
    responder: {cpu: {quietest: allowed, window: 700ms}}
`)
	for _, want := range []string{"rig check: responder CPU 1", "rig check: responder CPU 0"} {
		if !strings.Contains(log, want) {
			t.Errorf("require-check did not say %q:\n%s", want, log)
		}
	}
	for r := 0; r < 2; r++ {
		rd := rundir.RoundDir(res.Dir, "quietest", r)
		for id, want := range []int{1, 0} {
			b, err := os.ReadFile(filepath.Join(rd, rundir.CPURankFile(uint32(id))))
			if err != nil {
				t.Fatal(err)
			}
			var rk rundir.Ranking
			if err := json.Unmarshal(b, &rk); err != nil || len(rk.CPUs) != 2 || !strings.Contains(strings.Join(rk.Notes, " "), "ranked once for the responders responder, responder1") {
				t.Fatalf("round %d responder %d ranking: %v %+v", r, id, err, rk)
			}
			if rk.Chosen != want {
				testbin.BusyElsewhere(t, &rk, 1)
				t.Fatalf("round %d responder %d: CPU %d, want %d: %+v", r, id, rk.Chosen, want, rk.CPUs)
			}
			f, err := samples.ReadFile(filepath.Join(rd, samples.ResponderFileName(uint32(id))))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Header.Settings["cpu"]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("round %d responder %d ran on CPU %v, want %d", r, id, got, want)
			}
		}
	}
	rep, err := os.ReadFile(filepath.Join(res.Dir, "report.md"))
	if err != nil || !bytes.Contains(rep, []byte("round 0: CPU 1 (")) || !bytes.Contains(rep, []byte("rank 2: CPU 1 went to the other responders there")) {
		t.Errorf("report.md lacks each responder's pick: %v", err)
	}
}

// runBesideStress runs the scenario src while stress-ng, started by the
// test (not by an arm), loads CPU busy, and checks that the load is gone
// and the journal closed after it; it returns the run and its log.
func runBesideStress(t *testing.T, busy int, src string) (*Result, string) {
	t.Helper()
	testbin.Integration(t)
	t.Cleanup(func() {
		if testbin.StressNGRuns() {
			t.Error("stress-ng left running")
		}
	})
	p, err := load.Start(load.Spec{Args: "--cpu 1", CPUs: []int{busy}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 3*time.Second)
	dir := t.TempDir()
	res, log, err := runYAML(t, dir, "q.yaml", src)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	if err := p.Stop(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := journal.CheckPending(filepath.Join(dir, "state")); err != nil {
		t.Errorf("journal: %v", err)
	}
	return res, log
}
