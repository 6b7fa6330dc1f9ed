package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
)

// Platform noise: the rounds of an arm with noise: {for: D} carry
// noise.json (rundir.Noise), rig noise's window on the responder CPU
// before the round's probes; with several responders, one window per
// responder (rundir.NoiseFileOf), each in its arm × responder row.

// ArmNoise is the noise windows of an arm's analysed rounds.
type ArmNoise struct {
	// Arm and Responder, with several responders: the scenario's arm and
	// the responder host whose CPU the windows measured.
	Arm        string   `json:"arm,omitempty"`
	Responder  string   `json:"responder,omitempty"`
	Rounds     []int    `json:"rounds"`
	DurationNS int64    `json:"duration_ns"` // the windows' total (CLOCK_MONOTONIC)
	AboveNS    []uint64 `json:"above_ns"`
	// PerSec[i] is the median over the rounds of the gaps per second
	// above AboveNS[i] (lower middle).
	PerSec []float64 `json:"per_sec"`
	// Longest is the longest gap of every window, in the round LongestRound.
	LongestNS    uint64 `json:"longest_ns"`
	LongestRound int    `json:"longest_round"`
	LongestWho   string `json:"longest_who,omitempty"`
	// Counter is the counters the windows read and their calibration.
	Counter string `json:"counter"`
	Rule    string `json:"rule"`
}

// armNoise reads the noise windows of a's analysed rounds, each its
// responder's; nil when none has one. A window that cannot be read is a
// problem, never a silent gap.
func armNoise(a InputArm, rounds []TelemetryRound) (*ArmNoise, []string) {
	var an *ArmNoise
	var problems []string
	var rates [][]float64
	for _, rd := range rounds {
		path := filepath.Join(rd.Dir, rundir.NoiseFileOf(rd.Responder))
		b, err := rundir.ReadRegular(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var n rundir.Noise
		if err == nil {
			err = json.Unmarshal(b, &n)
		}
		if err == nil && (len(n.Gaps) == 0 || n.DurationNS <= 0) {
			err = fmt.Errorf("no gap counts (%d rows over %d ns)", len(n.Gaps), n.DurationNS)
		}
		if err == nil && n.Interrupted != "" {
			err = fmt.Errorf("the window was cut short by %s", n.Interrupted)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("round %d: %s: %v (window left out)", rd.K, path, err))
			continue
		}
		if an == nil {
			an = &ArmNoise{Arm: a.Arm, Responder: a.Responder, Rule: n.Rule}
			for _, g := range n.Gaps {
				an.AboveNS = append(an.AboveNS, g.AboveNS)
			}
			rates = make([][]float64, len(n.Gaps))
		}
		c := fmt.Sprintf("%s %.3f MHz calibrated against %s", n.Counter.Name, n.Counter.HzCalibrated/1e6, n.Counter.CalibratedBy)
		if !strings.Contains(an.Counter, c) {
			an.Counter = strings.TrimPrefix(an.Counter+"; "+c, "; ")
		}
		for i, g := range n.Gaps {
			if i < len(rates) && g.AboveNS == an.AboveNS[i] {
				rates[i] = append(rates[i], g.PerSec)
			}
		}
		an.Rounds = append(an.Rounds, rd.K)
		an.DurationNS += n.DurationNS
		if len(an.Rounds) == 1 || n.LongestNS > an.LongestNS {
			an.LongestNS, an.LongestRound, an.LongestWho = n.LongestNS, rd.K, ""
			if len(n.Longest) > 0 {
				an.LongestWho = n.Longest[0].Who
			}
		}
	}
	for i := range rates {
		if len(rates[i]) < len(an.Rounds) {
			problems = append(problems, fmt.Sprintf("gaps above %d ns: %d of %d windows count them (thresholds differ)", an.AboveNS[i], len(rates[i]), len(an.Rounds)))
		}
		an.PerSec = append(an.PerSec, medianF(rates[i]))
	}
	return an, problems
}

// noiseTable is the noise windows per arm, and with several responders
// per arm and responder; no rows when no arm has one.
func noiseTable(r *Report) table {
	t := table{Title: "Platform noise"}
	var counters []string
	rule, per := "", slices.ContainsFunc(r.Arms, func(a *ArmReport) bool { return a.Noise != nil && a.Noise.Responder != "" })
	for _, a := range r.Arms {
		n := a.Noise
		if n == nil {
			continue
		}
		lead := []string{a.Name}
		if per {
			lead = []string{n.Arm, n.Responder}
		}
		if t.Head == nil {
			t.Head = append(noiseLead(per), "windows", "seconds")
			for _, ns := range n.AboveNS {
				t.Head = append(t.Head, fmt.Sprintf("gaps/s above %v µs", float64(ns)/1e3))
			}
			t.Head = append(t.Head, "longest gap µs (round)", "who took the CPU then")
			rule = n.Rule
		}
		row := append(lead, fmt.Sprint(len(n.Rounds)), fmt.Sprintf("%.3f", float64(n.DurationNS)/1e9))
		for i := range len(t.Head) - len(lead) - 4 {
			cell := "—"
			if i < len(n.PerSec) {
				cell = rate(n.PerSec[i])
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, append(row, fmt.Sprintf("%.1f (%d)", float64(n.LongestNS)/1e3, n.LongestRound), orDash(n.LongestWho)))
		if !slices.Contains(counters, n.Counter) {
			counters = append(counters, n.Counter)
		}
	}
	src := "Source: rig noise on the responder CPU before each round's probes (noise: {for: D}; each round's noise.json). "
	if per {
		src = "Source: rig noise on each responder's CPU, one after another, before each round's probes (noise: {for: D}; each round's noise.json, noise-<id>.json for responder id), a row per arm and responder. "
	}
	t.Caption = src +
		"Cell: the median over the arm's windows (lower middle) of the gaps per second above each threshold; windows and seconds are how many windows and how long they ran in all (CLOCK_MONOTONIC); " +
		"the longest gap is the longest of every window, with its round and what telemetry saw on the CPU then. Clock: " + strings.Join(counters, "; ") +
		". Rule of each window: " + rule + "."
	return t
}

// noiseLead is the first columns of a noise table: the arm, and the
// responder with several.
func noiseLead(per bool) []string {
	if per {
		return []string{"arm", "responder"}
	}
	return []string{"arm"}
}

// NoiseDelta is one arm's noise windows in run A and in run B (rig
// compare): per threshold both count, each run's median gaps per second,
// and each run's longest gap; B − A is shown beside them, not judged.
type NoiseDelta struct {
	Arm      string    `json:"arm"`
	WindowsA int       `json:"windows_a"`
	WindowsB int       `json:"windows_b"`
	AboveNS  []uint64  `json:"above_ns"`
	PerSecA  []float64 `json:"per_sec_a"`
	PerSecB  []float64 `json:"per_sec_b"`
	LongestA uint64    `json:"longest_ns_a"`
	LongestB uint64    `json:"longest_ns_b"`
}

// NoiseRule is how rig compare sets two runs' noise windows side by side.
const NoiseRule = "each side is its run's Platform noise row: per threshold the median over the arm's windows (lower middle) of the gaps per second, and the longest gap of every window; " +
	"B − A is their difference, with no verdict: a round has one window, too few for the rounds rule of the latency comparison to call a difference real"

// CompareNoise sets the noise windows of the arms both runs have side by
// side (the thresholds both count); an arm with windows in one run only,
// or thresholds or counters that differ, is a note.
func CompareNoise(a, b *Report) (out []NoiseDelta, notes []string) {
	out = []NoiseDelta{}
	for _, bb := range b.Arms {
		aa := a.Arm(bb.Name)
		if aa == nil || (aa.Noise == nil && bb.Noise == nil) {
			continue
		}
		na, nb := aa.Noise, bb.Noise
		if na == nil || nb == nil {
			in := map[bool]string{true: a.Run, false: b.Run}[nb == nil]
			notes = append(notes, fmt.Sprintf("arm %q has noise windows only in %s", bb.Name, in))
			continue
		}
		d := NoiseDelta{Arm: bb.Name, WindowsA: len(na.Rounds), WindowsB: len(nb.Rounds), LongestA: na.LongestNS, LongestB: nb.LongestNS}
		for i, ns := range nb.AboveNS {
			if j := slices.Index(na.AboveNS, ns); j >= 0 && i < len(nb.PerSec) && j < len(na.PerSec) {
				d.AboveNS, d.PerSecA, d.PerSecB = append(d.AboveNS, ns), append(d.PerSecA, na.PerSec[j]), append(d.PerSecB, nb.PerSec[i])
			}
		}
		if len(d.AboveNS) != len(na.AboveNS) || len(d.AboveNS) != len(nb.AboveNS) {
			notes = append(notes, fmt.Sprintf("arm %q: the runs' noise windows count gaps above different thresholds (A %v ns, B %v ns): only those both count are compared", bb.Name, na.AboveNS, nb.AboveNS))
		}
		if na.Counter != nb.Counter {
			notes = append(notes, fmt.Sprintf("arm %q: the noise windows read different counters (A %s; B %s)", bb.Name, na.Counter, nb.Counter))
		}
		out = append(out, d)
	}
	return out, notes
}

// noiseCompareTable is rig compare's noise table: A, B and B − A for the
// gaps per second above each threshold and for the longest gap.
func noiseCompareTable(ds []NoiseDelta) table {
	t := table{Title: "Platform noise, B against A", Caption: "Source: each run's noise windows (noise: {for: D}; docs/noise.md). Rule: " + NoiseRule + "."}
	signed := func(v float64) string {
		if v > 0 {
			return "+" + rate(v)
		}
		if v < 0 {
			return "−" + rate(-v)
		}
		return "0"
	}
	for _, d := range ds {
		if t.Head == nil {
			t.Head = []string{"arm", "windows A", "windows B"}
			for _, ns := range d.AboveNS {
				x := fmt.Sprintf("gaps/s above %v µs", float64(ns)/1e3)
				t.Head = append(t.Head, x+" A", x+" B", x+" B − A")
			}
			t.Head = append(t.Head, "longest gap µs A", "longest gap µs B", "longest gap µs B − A")
		}
		row := []string{d.Arm, fmt.Sprint(d.WindowsA), fmt.Sprint(d.WindowsB)}
		for i := range (len(t.Head) - 6) / 3 {
			if i < len(d.AboveNS) && d.AboveNS[i] == ds[0].AboveNS[i] {
				row = append(row, rate(d.PerSecA[i]), rate(d.PerSecB[i]), signed(d.PerSecB[i]-d.PerSecA[i]))
			} else {
				row = append(row, "—", "—", "—")
			}
		}
		la, lb := float64(d.LongestA)/1e3, float64(d.LongestB)/1e3
		t.Rows = append(t.Rows, append(row, fmt.Sprintf("%.1f", la), fmt.Sprintf("%.1f", lb), strings.Replace(fmt.Sprintf("%+.1f", lb-la), "-", "−", 1)))
	}
	return t
}
