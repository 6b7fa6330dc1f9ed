package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/testbin"
)

func TestRankCPUsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--rank-cpus", "2-5"},        // the list must be --rank-cpus=LIST
		{"check", "--rank-cpus=x"},             // not a list
		{"check", "--rank-cpus", "--cpu", "1"}, // both
		{"check", "--rank-cpus=4095"},          // not online
	} {
		if code := run(args); code != 2 {
			t.Errorf("rig %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// TestRankCPUsCLI: `rig check --rank-cpus` with stress-ng pinned to CPU 0
// ranks CPU 1 quietest and runs the checks there, and the reverse.
func TestRankCPUsCLI(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	rig := testbin.Rig(t)
	for busy, want := range map[int]int{0: 1, 1: 0} {
		p, err := load.Start(load.Spec{Args: "--cpu 1", CPUs: []int{busy}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(rig, "check", "--rank-cpus", "--window", "1s", "--json").Output()
		if err := p.Stop(context.Background(), 3*time.Second); err != nil {
			t.Fatal(err)
		}
		var r check.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if r.Ranking != nil && r.Ranking.Chosen != want {
			testbin.BusyElsewhere(t, r.Ranking, want)
		}
		if r.Ranking == nil || r.Ranking.Chosen != want || r.CPU != want || fmt.Sprint(r.Ranking.Candidates) != "[0 1]" {
			t.Fatalf("stress-ng on CPU %d: report CPU %d, ranking %+v", busy, r.CPU, r.Ranking)
		}
	}
	if testbin.StressNGRuns() {
		t.Error("stress-ng left running")
	}
}
