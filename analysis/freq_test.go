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
	writeTel(t, dir, arm, k, map[string]any{"freq": freq, "power": power})
}

// writeTel writes a round's telemetry.json holding only sections.
func writeTel(t *testing.T, dir, arm string, k int, sections map[string]any) {
	t.Helper()
	b, err := json.Marshal(sections)
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
			writeTel(t, dir, a, k, map[string]any{"freq": none, "power": map[string]any{"cpu": 1, "idle": []string{"POLL", "haltpoll"}},
				"energy": rundir.EnergyResult{Source: rundir.EnergySourceRAPL, CannotTell: "no RAPL zones in /sys/class/powercap (…)"}})
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
	if !strings.Contains(md.String(), "| base | not measurable here | 0/3 | — | — | cannot tell | no cpufreq | no /dev/cpu/1/msr (the msr driver is not loaded: modprobe msr); no cpufreq on CPU 1; energy cannot tell: no RAPL zones in /sys/class/powercap (…) |") {
		t.Errorf("tables.md:\n%s", md.String())
	}
}

// TestEnergyColumn: each RAPL zone's joules and watts per round reach
// report.json and the table beside the frequency as the median over the
// rounds that could tell, with how many could; a zone that could not
// says why; an arm whose responder was not pinned (no frequency) still
// shows its energy.
func TestEnergyColumn(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	zone := func(j, w float64) rundir.EnergyZone {
		return rundir.EnergyZone{Zone: "intel-rapl:0", Name: "package-0", Joules: j, Watts: w, Seconds: j / w, Samples: 41}
	}
	dram := rundir.EnergyZone{Zone: "intel-rapl:0:0", Name: "dram", Parent: "package-0", Joules: 6, Watts: 1.5, Seconds: 4, Samples: 41}
	for k, j := range []float64{120, 100, 160} {
		d := dram
		if k == 1 {
			d = rundir.EnergyZone{Zone: "intel-rapl:0:0", Name: "dram", Parent: "package-0", CannotTell: "open /sys/class/powercap/intel-rapl:0:0/energy_uj: permission denied"}
		}
		en := rundir.EnergyResult{Source: rundir.EnergySourceRAPL, Rule: rundir.RuleRAPL, Zones: []rundir.EnergyZone{zone(j, j/4), d}}
		writeTel(t, dir, "base", k, map[string]any{"freq": aperf(3400), "energy": en})
		writeTel(t, dir, "isolated", k, map[string]any{"energy": rundir.EnergyResult{Source: rundir.EnergySourceRAPL, Rule: rundir.RuleRAPL, Zones: []rundir.EnergyZone{zone(80, 20)},
			Note: "read at the round's first and last sample only: measured CPU 0 is its package's first"}})
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := rep.Arm("base").Freq.Energy
	if len(e) != 2 || e[0].Zone != "package-0" || *e[0].MedianJ != 120 || *e[0].MedianW != 30 || e[0].Rounds != 3 ||
		e[1].Zone != "package-0 dram" || e[1].Rounds != 2 || e[1].Of != 3 || *e[1].MedianJ != 6 {
		t.Fatalf("base energy %+v", e)
	}
	var md, js bytes.Buffer
	WriteTablesMD(&md, rep)
	for _, want := range []string{"| base | APERF/MPERF | 3/3 | 3400 | 12 % | package-0 120.0 J, 30.0 W; package-0 dram 6.0 J, 1.5 W (2/3 rounds) |",
		"package-0 dram energy cannot tell: open /sys/class/powercap/intel-rapl:0:0/energy_uj: permission denied",
		"| isolated | — | 0/0 | — | — | package-0 80.0 J, 20.0 W | — | energy read at the round's first and last sample only: measured CPU 0 is its package's first |", "includes every CPU's work, not only the responder's"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("tables.md lacks %q:\n%s", want, md.String())
		}
	}
	WriteJSON(&js, rep)
	if !strings.Contains(js.String(), `"median_joules": 120`) || !strings.Contains(js.String(), `"energy_rounds"`) {
		t.Errorf("report.json lacks the energy")
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
