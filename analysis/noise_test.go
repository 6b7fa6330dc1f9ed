package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
)

// writeNoise writes round k of arm's noise.json: a 200 ms window with
// per-second rates rates (above 1, 5, 20, 100 µs) and the longest gap.
func writeNoise(t *testing.T, dir, arm string, k int, rates [4]float64, longest uint64, who string) {
	t.Helper()
	n := rundir.Noise{CPU: 1, DurationNS: 200e6, LongestNS: longest, Rule: "a gap is …",
		Counter: rundir.NoiseCounter{Name: "TSC", HzCalibrated: 2.5e9, CalibratedBy: "CLOCK_MONOTONIC_RAW"},
		Longest: []rundir.NoiseGap{{NS: longest, Who: who}}}
	for i, above := range []uint64{1000, 5000, 20000, 100000} {
		n.Gaps = append(n.Gaps, rundir.NoiseRow{AboveNS: above, Count: uint64(rates[i] / 5), PerSec: rates[i]})
	}
	if err := rundir.WriteJSON(filepath.Join(rundir.RoundDir(dir, arm, k), rundir.NoiseFile), n); err != nil {
		t.Fatal(err)
	}
}

// TestNoiseSection: an arm whose rounds carry noise.json gets a row of the
// Platform noise table (medians over its windows, the longest gap and who
// took the CPU, the clock and the counts in the caption); an arm without
// has none; a damaged window is a problem, not a silent gap; a run
// without noise has no such table.
func TestNoiseSection(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.sections() {
		if s.Title == "Platform noise" {
			t.Fatalf("a run without noise windows has a noise table: %v", s.Rows)
		}
	}
	writeNoise(t, dir, "isolated", 0, [4]float64{100, 50, 10, 0}, 60000, "telemetry: thread kworker/1:1")
	writeNoise(t, dir, "isolated", 1, [4]float64{300, 70, 30, 5}, 150000, "telemetry: cpu1 irq LOC ×3")
	writeNoise(t, dir, "isolated", 2, [4]float64{200, 60, 20, 0}, 90000, "")
	rep, err = Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Platform noise",
		"| arm | windows | seconds | gaps/s above 1 µs | gaps/s above 5 µs | gaps/s above 20 µs | gaps/s above 100 µs | longest gap µs (round) | who took the CPU then |",
		"| isolated | 3 | 0.600 | 200.0 | 60.0 | 20.0 | 0 | 150.0 (1) | telemetry: cpu1 irq LOC ×3 |",
		"Clock: TSC 2500.000 MHz calibrated against CLOCK_MONOTONIC_RAW.", "Rule of each window: a gap is …"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("tables.md lacks %q:\n%s", want, md.String())
		}
	}
	if tb := noiseTable(rep); len(tb.Rows) != 1 {
		t.Errorf("rows %q: want the isolated arm's alone", tb.Rows)
	}
	if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, "isolated", 2), rundir.NoiseFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Arm("isolated").Noise; n == nil || len(n.Rounds) != 2 || n.PerSec[0] != 100 {
		t.Errorf("with round 2 damaged: %+v", n)
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), `arm "isolated": noise: round 2: `) {
		t.Errorf("a damaged noise.json is no problem: %q", rep.Problems)
	}
}

// TestNoiseTableResponders: with several responders each arm × responder
// row shows its own windows under an arm and a responder column.
func TestNoiseTableResponders(t *testing.T) {
	n := func(resp string, rate float64) *ArmNoise {
		return &ArmNoise{Arm: "a", Responder: resp, Rounds: []int{0}, DurationNS: 2e8, AboveNS: []uint64{1000}, PerSec: []float64{rate}, LongestNS: 5000, Counter: "TSC", Rule: "r"}
	}
	rep := &Report{Arms: []*ArmReport{{Name: ArmResponderName("a", "r0"), Noise: n("r0", 10)}, {Name: ArmResponderName("a", "r1"), Noise: n("r1", 30)}}}
	tb := noiseTable(rep)
	if strings.Join(tb.Head[:3], ",") != "arm,responder,windows" || len(tb.Rows) != 2 ||
		strings.Join(tb.Rows[1][:5], ",") != "a,r1,1,0.200,30.0" || !strings.Contains(tb.Caption, "noise-<id>.json") {
		t.Errorf("head %q rows %q\n%s", tb.Head, tb.Rows, tb.Caption)
	}
}

// TestCompareNoise: rig compare sets the noise windows of the arm both
// runs measured side by side, B − A beside A and B, with the rule in the
// caption; an arm with windows in one run only is a note.
func TestCompareNoise(t *testing.T) {
	da, db := t.TempDir(), t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, da, spec)
	writeRun(t, db, spec)
	for k := range 3 {
		writeNoise(t, da, "isolated", k, [4]float64{100, 50, 10, 0}, 60000, "")
		writeNoise(t, db, "isolated", k, [4]float64{40, 20, 10, 2}, 150000, "")
	}
	writeNoise(t, db, "base", 0, [4]float64{1, 1, 1, 1}, 1000, "")
	ra, err := Run(da, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Run(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds, notes := CompareNoise(ra, rb)
	if len(ds) != 1 || ds[0].Arm != "isolated" || ds[0].LongestB != 150000 || len(notes) != 1 || !strings.Contains(notes[0], `arm "base" has noise windows only in `+rb.Run) {
		t.Fatalf("deltas %+v notes %q", ds, notes)
	}
	var md bytes.Buffer
	if err := WriteComparisonMD(&md, ra, rb, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Platform noise, B against A",
		"| arm | windows A | windows B | gaps/s above 1 µs A | gaps/s above 1 µs B | gaps/s above 1 µs B − A |",
		"| isolated | 3 | 3 | 100.0 | 40.0 | −60.0 | 50.0 | 20.0 | −30.0 | 10.0 | 10.0 | 0 | 0 | 2.00 | +2.00 | 60.0 | 150.0 | +90.0 |",
		"Rule: " + NoiseRule, `arm "base" has noise windows only in`} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("rig compare lacks %q:\n%s", want, md.String())
		}
	}
}
