package noise

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
)

// Rule says what every number of a Result is.
const Rule = "a gap is the time between two consecutive reads of the CPU's counter by a loop that does nothing else, " +
	"when it is longer than the threshold; it includes one read interval (the detection floor); per second = gaps ÷ the loop's " +
	"duration (CLOCK_MONOTONIC, first read to last); lengths are counter ticks at the rate calibrated against CLOCK_MONOTONIC_RAW " +
	"before the loop, rounded up to the ns; start times are interpolated between CLOCK_MONOTONIC and CLOCK_REALTIME anchors taken " +
	"around the loop; docs/noise.md"

// longestShown is how many of the longest gaps a Result lists.
const longestShown = 10

// build turns the loop's handoff into a Result.
func build(h *native.Noise, sched string) *rundir.Noise {
	r := &rundir.Noise{CPU: h.CPU, Sched: sched, StartNS: h.StartReal, EndNS: h.EndReal, StartMonoNS: h.StartMono, DurationNS: h.EndMono - h.StartMono,
		LostNS: h.GapTotalNS, LongestNS: h.LongestNS, Thread: h.Thread, Rule: Rule,
		Counter: rundir.NoiseCounter{Name: h.Counter, HzCalibrated: float64(h.RateTicks) / float64(h.RateNS) * 1e9, CalibratedBy: "CLOCK_MONOTONIC_RAW",
			CalibrationNS: h.RateNS, HzNominal: h.NominalHz},
		Floor: rundir.NoiseFloor{Reads: h.Reads, TypicalNS: float64(h.TypicalReadPS) / 1e3, ShortestNS: float64(h.MinReadPS) / 1e3, TickNS: float64(h.TickPS) / 1e3}}
	if h.CheckNS > 0 && h.CheckTicks > 0 {
		check := float64(h.CheckTicks) / float64(h.CheckNS) * 1e9
		r.Counter.CheckPPM = (check/r.Counter.HzCalibrated - 1) * 1e6
	}
	if h.StopSignal != 0 {
		r.Interrupted = fmt.Sprintf("signal %d", h.StopSignal)
	}
	for i, t := range h.Thresholds {
		r.Gaps = append(r.Gaps, rundir.NoiseRow{AboveNS: t, Count: h.Counts[i], PerSec: perSec(h.Counts[i], r.DurationNS)})
	}
	last := len(h.Hist) - 1
	for last > 0 && h.Hist[last] == 0 {
		last-- // empty bins past the longest gap say nothing
	}
	for k := 0; k <= last; k++ {
		b := rundir.NoiseBin{AboveNS: h.HistBaseNS << k, Count: h.Hist[k]}
		if k < len(h.Hist)-1 {
			b.UpToNS = h.HistBaseNS << (k + 1)
		}
		r.Histogram = append(r.Histogram, b)
	}
	gaps := slices.Clone(h.Gaps)
	slices.SortStableFunc(gaps, func(a, b native.NoiseGap) int { return cmp.Compare(b.NS, a.NS) })
	for _, g := range gaps[:min(len(gaps), longestShown)] {
		r.Longest = append(r.Longest, rundir.NoiseGap{StartNS: g.StartReal, StartMonoNS: g.StartMono, NS: g.NS})
	}
	return r
}

func perSec(n uint64, ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(n) / (float64(ns) / 1e9)
}
