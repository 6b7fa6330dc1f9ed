package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
)

// TestCPURankSummary: the summary reads every field it uses from a
// rundir.Ranking as the agent writes it, and shows the choice and the
// evidence per round.
func TestCPURankSummary(t *testing.T) {
	in := rundir.Ranking{Format: rundir.RankingFormat, Candidates: []int{0, 1}, From: "the list 0-1", Chosen: 1, WindowNS: 1e9, Scans: 5,
		RankerCPUs: []int{2}, CtxSource: "ctx", RunSource: "run", Rule: "cost of a CPU", Notes: []string{"n"},
		CPUs: []rundir.RankedCPU{
			{CPU: 1, Rank: 1, Cost: 20, Own: 10, Siblings: []int{3}, IRQs: 1, ArchIRQs: 2, Softirqs: 3, CtxSwitches: 4, RunUS: 5, Runnable: 0.5, StealPct: 0.1, TopIRQs: []string{"LOC 2/s"}},
			{CPU: 0, Rank: 2, Cost: 900000, Own: 900000, IRQs: 10, RunUS: 899000, Runnable: 1, TopThreads: []string{"stress-ng-cpu[9] 899.0 ms"}},
		}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeRank(b)
	if err != nil {
		t.Fatal(err)
	}
	c := r.CPUs[0]
	if r.Chosen != 1 || r.From != in.From || r.WindowNS != 1e9 || r.Scans != 5 || r.RankerCPUs[0] != 2 || r.CtxSource != "ctx" || r.RunSource != "run" ||
		r.Rule != in.Rule || r.Notes[0] != "n" || len(r.Candidates) != 2 ||
		c.CPU != 1 || c.Rank != 1 || c.Cost != 20 || c.Own != 10 || c.Siblings[0] != 3 || c.IRQs != 1 || c.ArchIRQs != 2 || c.Softirqs != 3 ||
		c.CtxSwitches != 4 || c.RunUS != 5 || c.Runnable != 0.5 || c.StealPct != 0.1 || c.TopIRQs[0] != "LOC 2/s" || r.CPUs[1].TopThreads[0] != "stress-ng-cpu[9] 899.0 ms" {
		t.Fatalf("decoded %+v from %s", r, b)
	}
	dir := t.TempDir()
	for k, body := range map[int][]byte{0: b, 1: []byte(`{"format":"other"}`)} {
		d := filepath.Join(dir, "round-"+string(rune('0'+k)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, rundir.CPURank), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blocks := rankBlocks(&TelemetryArm{Arm: "q", Rounds: []TelemetryRound{{K: 0, Dir: filepath.Join(dir, "round-0")}, {K: 1, Dir: filepath.Join(dir, "round-1")}, {K: 2, Dir: filepath.Join(dir, "none")}}})
	if len(blocks) != 3 || !strings.Contains(blocks[0].Text, "round 0: CPU 1 (20 µs/s, next CPU 0 at 900000 µs/s)") ||
		!strings.Contains(blocks[0].Text, "Other threads' run time: run. Context switches: ctx. Notes: n.") ||
		len(blocks[1].Rows) != 2 || blocks[1].Rows[1][2] != "0" || blocks[1].Rows[1][11] != "stress-ng-cpu[9] 899.0 ms" ||
		!strings.Contains(blocks[2].Text, "round 1:") || strings.Contains(blocks[2].Text, "round 2") {
		t.Fatalf("%+v", blocks)
	}
	if rankBlocks(&TelemetryArm{Rounds: []TelemetryRound{{K: 0, Dir: filepath.Join(dir, "none")}}}) != nil {
		t.Fatal("blocks for an arm without rankings")
	}
}

// A fan-out round's responder 1 reads its own ranking (cpu-rank-1.json),
// where two responders on one machine were ranked once and it took the
// second CPU: the report shows its pick and why it is not the first.
func TestCPURankPerResponder(t *testing.T) {
	rk := rundir.Ranking{Format: rundir.RankingFormat, Candidates: []int{0, 1}, Chosen: 0, WindowNS: 1e9,
		CPUs: []rundir.RankedCPU{{CPU: 1, Rank: 1, Cost: 20}, {CPU: 0, Rank: 2, Cost: 35}}}
	b, err := json.Marshal(rk)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rundir.CPURankFile(1)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := rankBlocks(&TelemetryArm{Arm: "q@responder1", Rounds: []TelemetryRound{{K: 0, Dir: dir, Responder: 1}}})
	if len(blocks) != 2 || !strings.Contains(blocks[0].Text, "round 0: CPU 0 (35 µs/s, rank 2: CPU 1 went to the other responders there)") {
		t.Fatalf("%+v", blocks)
	}
	if rankBlocks(&TelemetryArm{Arm: "q@responder", Rounds: []TelemetryRound{{K: 0, Dir: dir}}}) != nil {
		t.Fatal("responder 0 read responder 1's ranking")
	}
}
