package analysis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
)

// writeFreq writes a round's telemetry.json with only the frequency and
// power sections (the rest of the telemetry is not needed here).
func writeFreq(t *testing.T, dir, arm string, k int, freq, power any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"freq": freq, "power": power})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, arm, k), rundir.Telemetry), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func aperf(mhz float64) map[string]any {
	return map[string]any{"cpu": 3, "source": "APERF/MPERF", "rule": rundir.RuleAPERFTSC, "mhz": mhz, "samples": 2, "tsc_mhz": 3100.2, "busy_pct": 12.5}
}

var intelPower = map[string]any{
	"cpu":     3,
	"cpufreq": map[string]any{"driver": "intel_pstate", "governor": "performance", "min_khz": 800000, "max_khz": 3100000, "epp": "performance"},
	"turbo":   map[string]any{"enabled": false, "source": "/sys/devices/system/cpu/intel_pstate/no_turbo", "intel_pstate_min_perf_pct": 100, "intel_pstate_max_perf_pct": 100},
	"idle":    []string{"POLL", "C1", "C1E (disabled)", "C6 (disabled)"},
	"tuned":   "Current active profile: network-latency",
}

// TestFrequencyColumn: the frequency of every round reaches report.json
// and tables.md with its source, and a comparison whose arms ran more
// than FreqDiffPct apart says so next to its verdict.
func TestFrequencyColumn(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	for k, mhz := range []float64{3400, 3500, 3450} {
		writeFreq(t, dir, "base", k, aperf(mhz), map[string]any{"cpu": 3, "turbo": map[string]any{"enabled": true, "source": "/sys/devices/system/cpu/intel_pstate/no_turbo"}})
	}
	for k, mhz := range []float64{3090, 3100, 3095} {
		writeFreq(t, dir, "isolated", k, aperf(mhz), intelPower)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, i := rep.Arm("base").Freq, rep.Arm("isolated").Freq
	if b == nil || i == nil || b.Source != "APERF/MPERF" || *b.MedianMHz != 3450 || *b.MinMHz != 3400 || *b.MaxMHz != 3500 || len(b.Rounds) != 3 || *i.MedianMHz != 3095 {
		t.Fatalf("freq %+v %+v", b, i)
	}
	if want := "intel_pstate performance, EPP performance, limits 800–3100 MHz; turbo off, perf 100–100 %; idle states off: C1E C6; tuned network-latency"; i.RanUnder != want {
		t.Errorf("ran under %q, want %q", i.RanUnder, want)
	}
	var note string
	for _, c := range rep.Comparisons {
		if c.Arm == "isolated" && c.Stat == "median" && c.Metric == Headline {
			note = c.Frequency
		}
	}
	if !strings.Contains(note, "the CPU ran at 3095 MHz vs 3450 MHz on the baseline (-10 %, APERF/MPERF): part of this difference may be frequency") {
		t.Fatalf("comparison note %q", note)
	}
	var md bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Responder CPU frequency", "| base | APERF/MPERF | 3/3 | 3450 [3400–3500] | 12 % |", "ΔAPERF/ΔMPERF × TSC 3100 MHz",
		"; the CPU ran at 3095 MHz vs 3450 MHz on the baseline"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("tables.md lacks %q", want)
		}
	}
	var js bytes.Buffer
	WriteJSON(&js, rep)
	if !strings.Contains(js.String(), `"median_mhz": 3450`) || !strings.Contains(js.String(), `"frequency": "the CPU ran at`) {
		t.Errorf("report.json lacks the frequency")
	}
	// Within FreqDiffPct: no note.
	for k := range 3 {
		writeFreq(t, dir, "isolated", k, aperf(3440), intelPower)
	}
	rep, _ = Run(dir, Options{})
	for _, c := range rep.Comparisons {
		if c.Frequency != "" {
			t.Fatalf("3440 vs 3450 MHz noted: %q", c.Frequency)
		}
	}
}

// TestFrequencyNotMeasurable: the dev VM's rounds say so, with the reason,
// and claim nothing in the comparison.
func TestFrequencyNotMeasurable(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	none := map[string]any{"cpu": 1, "source": "not measurable here", "note": "no /dev/cpu/1/msr (the msr driver is not loaded: modprobe msr); no cpufreq on CPU 1"}
	for _, a := range spec.Arms {
		for k := range 3 {
			writeFreq(t, dir, a, k, none, map[string]any{"cpu": 1, "idle": []string{"POLL", "haltpoll"}})
		}
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Arm("base").Freq
	if f == nil || f.Source != "not measurable here" || f.MedianMHz != nil || len(f.Rounds) != 3 || f.RanUnder != "no cpufreq" {
		t.Fatalf("%+v", f)
	}
	for _, c := range rep.Comparisons {
		if c.Frequency != "" {
			t.Fatalf("unmeasured frequencies compared: %q", c.Frequency)
		}
	}
	var md bytes.Buffer
	WriteTablesMD(&md, rep)
	if !strings.Contains(md.String(), "| base | not measurable here | 0/3 | — | — | no cpufreq | no /dev/cpu/1/msr (the msr driver is not loaded: modprobe msr); no cpufreq on CPU 1 |") {
		t.Errorf("tables.md:\n%s", md.String())
	}
}

func TestFreqNoteSources(t *testing.T) {
	a := &ArmFreq{Source: "APERF/MPERF", MedianMHz: ptr(3000.0)}
	b := &ArmFreq{Source: "scaling_cur_freq", MedianMHz: ptr(2000.0)}
	if n := freqNote(a, b, "baseline"); !strings.Contains(n, "measured differently") {
		t.Fatal(n)
	}
	if n := freqNote(a, nil, "baseline"); n != "" {
		t.Fatal(n)
	}
}
