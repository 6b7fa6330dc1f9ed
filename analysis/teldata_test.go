package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// TestDecodeTelemetry: decodeTelemetry reads every field the summary uses
// from a rundir.TelemetryResult as the sampler writes it, and adds the watched
// thread's context switches as two sources.
func TestDecodeTelemetry(t *testing.T) {
	in := rundir.TelemetryResult{CPUs: []int{3, 7}, PinCPU: 1, IntervalNS: 100e6, Start: 1000, End: 3000, Samples: 3,
		Missed: 4, ReadErrors: 5, FirstError: "x",
		Sources: []rundir.TelemetrySource{{CPU: 3, Kind: "irq", ID: "131", Name: "nvme0q1", Total: 9, PerSec: 4.5}},
		Intervals: []rundir.TelemetryInterval{{Start: 1000, End: 2000, Deltas: []uint64{2}, Vol: 6, Invol: 7, Threads: []int{0}},
			{Start: 2000, End: 3000, Deltas: []uint64{7}}},
		Thread:          &rundir.ThreadCtx{PID: 10, TID: 11},
		Threads:         []rundir.ThreadSeen{{TID: 12, PID: 13, Comm: "stress-ng", CPU: 7, Scans: 2, RunNS: 99}},
		ThreadsMode:     "schedstat",
		ThreadScanEvery: 10,
		AffinityChanges: []rundir.AffinityChange{{T: 1500, IRQ: 131, From: "3", To: "0"}},
		Notes:           []string{"n"},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeTelemetry(b)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Sources[0]
	iv := r.Intervals[0]
	th := r.Threads[0]
	a := r.AffinityChanges[0]
	if len(r.CPUs) != 2 || r.CPUs[1] != 7 || r.PinCPU != 1 || r.IntervalNS != 100e6 || r.Start != 1000 || r.End != 3000 ||
		r.Samples != 3 || r.Missed != 4 || r.ReadErrors != 5 || r.FirstError != "x" ||
		s.CPU != 3 || s.Kind != "irq" || s.ID != "131" || s.Name != "nvme0q1" || s.Total != 9 || s.PerSec != 4.5 ||
		iv.Start != 1000 || iv.End != 2000 || iv.Deltas[0] != 2 || iv.Vol != 6 || iv.Invol != 7 || iv.Threads[0] != 0 ||
		r.Thread.PID != 10 || r.Thread.TID != 11 ||
		th.TID != 12 || th.PID != 13 || th.Comm != "stress-ng" || th.CPU != 7 || th.Scans != 2 || th.RunNS != 99 ||
		r.ThreadsMode != "schedstat" || r.ThreadScanEvery != 10 || a.T != 1500 || a.IRQ != 131 || a.From != "3" || a.To != "0" || r.Notes[0] != "n" {
		t.Fatalf("decoded %+v from %s", r, b)
	}
	// The watched thread's context switches become two sources.
	if len(r.Sources) != 3 || r.Sources[1].Kind != kindVol || r.Sources[1].Total != 6 || r.Sources[2].Total != 7 || len(iv.Deltas) != 3 {
		t.Fatalf("ctx sources %+v, deltas %v", r.Sources, iv.Deltas)
	}
	// The interval lookup agrees with rundir.TelemetryResult.IntervalAt.
	for _, tm := range []int64{999, 1000, 1001, 2000, 2500, 3000, 3001} {
		want := -1
		if p := in.IntervalAt(tm); p != nil {
			want = int((p.Start - 1000) / 1000)
		}
		if got := r.at(tm); got != want {
			t.Errorf("at(%d) = %d, IntervalAt says %d", tm, got, want)
		}
	}
}

// TestReadRoundFreq: the frequency and power sections of a rundir.TelemetryResult
// as the sampler writes it become the round's frequency with its rule and
// a few words on the power state; an older rig's rule (× a base
// frequency) is named as such.
func TestReadRoundFreq(t *testing.T) {
	for _, f := range []rundir.FreqResult{
		{CPU: 3, Source: rundir.FreqAPERF, Rule: rundir.RuleAPERFTSC, MHz: 2999.5, Samples: 2, TSCMHz: 2400.4, BusyPct: 40},
		{CPU: 3, Source: rundir.FreqAPERF, MHz: 2999.5, Samples: 2, BaseMHz: 3100, BaseFrom: "b", BusyPct: 40},
	} {
		rf, _, _, ok := readRoundFreq(TelemetryRound{K: 4, Dir: telemetryDir(t, rundir.TelemetryResult{CPUs: []int{3}, Freq: &f})})
		want := map[bool]string{true: "ΔAPERF/ΔMPERF × TSC 2400 MHz", false: "ΔAPERF/ΔMPERF × base 3100 MHz (b)"}[f.Rule != ""]
		if !ok || rf.Round != 4 || rf.Source != rundir.FreqAPERF || *rf.MHz != 2999.5 || *rf.BusyPct != 40 || rf.Note != want {
			t.Fatalf("%+v, want note %q", rf, want)
		}
	}
	in := rundir.TelemetryResult{CPUs: []int{3},
		Freq: &rundir.FreqResult{CPU: 3, Source: rundir.FreqAPERF, Rule: rundir.RuleAPERFTSC, MHz: 2999.5, Samples: 2, TSCMHz: 2400.4, BusyPct: 40},
		Power: &rundir.PowerState{CPU: 3, Freq: &rundir.Freq{Driver: "intel_pstate", Governor: "performance", MinKHz: 800000, MaxKHz: 3600000, EPP: "performance"},
			Turbo: &rundir.Turbo{Enabled: false, Source: hostinfo.IntelPstateDir + "/no_turbo", MinPerfPct: 30, MaxPerfPct: 90},
			Idle:  []string{"POLL", "C6 (disabled)"}, Tuned: "Current active profile: latency-performance"}}
	_, pw, _, _ := readRoundFreq(TelemetryRound{K: 4, Dir: telemetryDir(t, in)})
	if want := "intel_pstate performance, EPP performance, limits 800–3600 MHz; turbo off, perf 30–90 %; idle states off: C6; tuned latency-performance"; describePower(pw) != want {
		t.Fatalf("%q", describePower(pw))
	}
}

// telemetryDir is a round directory holding r as telemetry.json.
func telemetryDir(t *testing.T, r rundir.TelemetryResult) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rundir.Telemetry), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
