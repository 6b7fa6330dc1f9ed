package noise

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
)

// TestBuild: a handoff the program wrote becomes rows whose counts shrink
// with the threshold, a histogram that sums to the gaps above 1 µs, the
// longest gaps longest first, and a report that states the counter, the
// floor, what is missing and the rule.
func TestBuild(t *testing.T) {
	b, err := os.ReadFile("../native/testdata/noise-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	h, err := native.ReadNoise(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r := build(h, "other")
	r.OSNoiseMissing, r.TelemetryMissing = "no osnoise here", "not sampled here"
	if len(r.Gaps) != 4 || r.DurationNS < 200e6 || r.Floor.TypicalNS <= 0 || r.Counter.HzCalibrated < 1e8 || r.Counter.Name != "TSC" {
		t.Fatalf("%+v", r)
	}
	var sum uint64
	for _, bin := range r.Histogram {
		sum += bin.Count
	}
	if sum != r.Gaps[0].Count || len(r.Histogram) > 0 && r.Histogram[len(r.Histogram)-1].Count == 0 {
		t.Errorf("histogram %+v for %d gaps", r.Histogram, r.Gaps[0].Count)
	}
	for i, g := range r.Gaps {
		if want := float64(g.Count) / (float64(r.DurationNS) / 1e9); g.PerSec != want || i > 0 && g.Count > r.Gaps[i-1].Count {
			t.Errorf("row %d %+v (per second want %f)", i, g, want)
		}
	}
	for i, g := range r.Longest {
		if i > 0 && g.NS > r.Longest[i-1].NS || g.NS > r.LongestNS || len(r.Longest) > longestShown {
			t.Errorf("longest %d: %+v", i, g)
		}
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rig noise: CPU 0 (other), 0.2", "| 1 µs | ", "| 100 µs | ", "counter: TSC at ", "against CLOCK_MONOTONIC_RAW over ",
		"detection floor: ", "osnoise: not available: no osnoise here", "telemetry: not available: not sampled here", "rule: a gap is"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	j, _ := json.Marshal(r)
	var back rundir.Noise
	if err := json.Unmarshal(j, &back); err != nil || back.Gaps[3].Count != r.Gaps[3].Count || back.Rule != Rule {
		t.Errorf("json: %v\n%s", err, j)
	}
}

// TestWho: a long gap is explained by the telemetry interval it fell in
// (sources that moved, threads seen but the loop's own) and by the osnoise
// events inside it; a gap no event explains says so.
func TestWho(t *testing.T) {
	tel := &rundir.TelemetryResult{
		Sources:   []rundir.TelemetrySource{{CPU: 1, Kind: "irq", ID: "LOC", Name: "Local timer interrupts"}, {CPU: 1, Kind: "softirq", ID: "RCU"}},
		Threads:   []rundir.ThreadSeen{{TID: 10, Comm: "rig-noise-nativ"}, {TID: 11, Comm: "compile"}, {TID: 12, Comm: "compile"}},
		Intervals: []rundir.TelemetryInterval{{Start: 100, End: 200, Deltas: []uint64{25, 3}, Threads: []int{0, 1, 2}}},
	}
	r := &rundir.Noise{Telemetry: tel, OSNoise: &rundir.OSNoise{}}
	ev := []event{{Kind: "irq", Name: "local_timer:236", StartMono: 1000, NS: 2000}, {Kind: "thread", Name: "compile:11", StartMono: 4000, NS: 30000}}
	got := who(r, ev, rundir.NoiseGap{StartNS: 150, StartMonoNS: 900, NS: 40000}, 10)
	want := "telemetry: cpu1 irq LOC Local timer interrupts ×25, cpu1 softirq RCU ×3, thread compile; osnoise: thread compile:11 30.0 µs, irq local_timer:236 2.0 µs"
	if got != want {
		t.Errorf("who:\n got %s\nwant %s", got, want)
	}
	if got := who(r, ev, rundir.NoiseGap{StartNS: 500, StartMonoNS: 90000, NS: 5000}, 10); got != "osnoise: no event: the hypervisor, or hardware (SMI)" {
		t.Errorf("outside telemetry, no event: %s", got)
	}
	if got := who(&rundir.Noise{}, nil, rundir.NoiseGap{}, 10); got != "not sampled" {
		t.Errorf("nothing: %s", got)
	}
}
