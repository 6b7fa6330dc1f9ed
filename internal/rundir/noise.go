package rundir

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// NoiseFile is a round's noise window (an arm's noise: {for: D}): rig
// noise's result on the responder CPU, before the round's probes start.
const NoiseFile = "noise.json"

// NoiseFileOf is the noise window of responder id in a round directory,
// named as its telemetry (TelemetryFile): noise.json for responder 0,
// noise-<id>.json for the others of a fan-out round.
func NoiseFileOf(id uint32) string {
	if id == 0 {
		return NoiseFile
	}
	return "noise-" + strconv.FormatUint(uint64(id), 10) + ".json"
}

// Noise is one window of the noise probe on one CPU. Its Gaps rows (one
// per threshold) are what a per-arm table shows.
type Noise struct {
	CPU   int    `json:"cpu"`
	Sched string `json:"sched"`
	// StartNS and EndNS are the loop's first and last read (CLOCK_REALTIME),
	// StartMonoNS the first on CLOCK_MONOTONIC; DurationNS the time
	// between them (CLOCK_MONOTONIC).
	StartNS     int64 `json:"start_ns"`
	EndNS       int64 `json:"end_ns"`
	StartMonoNS int64 `json:"start_mono_ns"`
	DurationNS  int64 `json:"duration_ns"`
	// Interrupted names the signal that ended the loop before its time.
	Interrupted string       `json:"interrupted,omitempty"`
	Counter     NoiseCounter `json:"counter"`
	Floor       NoiseFloor   `json:"floor"`
	Gaps        []NoiseRow   `json:"gaps"`
	// LostNS is the time the gaps above the smallest threshold took.
	LostNS    uint64 `json:"lost_ns"`
	LongestNS uint64 `json:"longest_ns"`
	// Longest are the longest gaps, longest first, each with who took
	// the CPU then as far as telemetry and osnoise tell.
	Longest   []NoiseGap   `json:"longest"`
	Histogram []NoiseBin   `json:"histogram"`
	Thread    *ThreadUsage `json:"thread,omitempty"`
	// OSNoise is the kernel's osnoise tracer over the same window, or
	// nil with OSNoiseMissing saying why not.
	OSNoise        *OSNoise `json:"osnoise,omitempty"`
	OSNoiseMissing string   `json:"osnoise_not_available,omitempty"`
	// Telemetry is what the CPU did during the window, sampled from
	// another CPU (nil with TelemetryMissing saying why not).
	Telemetry        *TelemetryResult `json:"telemetry,omitempty"`
	TelemetryMissing string           `json:"telemetry_not_available,omitempty"`
	Notes            []string         `json:"notes,omitempty"`
	Rule             string           `json:"rule"`
}

// NoiseCounter is the counter the loop read and its calibration.
type NoiseCounter struct {
	Name string `json:"name"` // TSC, CNTVCT_EL0
	// HzCalibrated is ticks per second of CLOCK_MONOTONIC_RAW over
	// CalibrationNS before the loop; CheckPPM how far the rate over the
	// loop itself differed from it.
	HzCalibrated  float64 `json:"hz"`
	CalibratedBy  string  `json:"calibrated_against"`
	CalibrationNS uint64  `json:"calibration_ns"`
	CheckPPM      float64 `json:"check_ppm"`
	// HzNominal is the architecture's own figure (CNTFRQ_EL0); 0 for the
	// TSC, whose rate a program cannot read.
	HzNominal uint64 `json:"nominal_hz,omitempty"`
}

// NoiseFloor is what the loop cannot see: an interruption shows as a gap of its
// length plus one read interval, and only above the smallest threshold.
type NoiseFloor struct {
	Reads      uint64  `json:"reads"`      // intervals between two reads
	TypicalNS  float64 `json:"typical_ns"` // their mean, gaps left out
	ShortestNS float64 `json:"shortest_ns"`
	TickNS     float64 `json:"tick_ns"` // one counter tick
}

// NoiseRow is the gaps above one threshold.
type NoiseRow struct {
	AboveNS uint64  `json:"above_ns"`
	Count   uint64  `json:"count"`
	PerSec  float64 `json:"per_sec"`
	// OSNoise counts the osnoise events above the threshold in the same
	// window (nil without osnoise).
	OSNoise *uint64 `json:"osnoise_events,omitempty"`
}

// NoiseGap is one long gap.
type NoiseGap struct {
	StartNS     int64  `json:"start_ns"` // CLOCK_REALTIME
	StartMonoNS int64  `json:"start_mono_ns"`
	NS          uint64 `json:"ns"`
	Who         string `json:"who,omitempty"`
}

// NoiseBin is the gaps with AboveNS < length ≤ UpToNS (UpToNS 0: no bound).
type NoiseBin struct {
	AboveNS uint64 `json:"above_ns"`
	UpToNS  uint64 `json:"up_to_ns,omitempty"`
	Count   uint64 `json:"count"`
}

// OSNoise is the osnoise tracer's view of the window.
type OSNoise struct {
	Mode string `json:"mode"`
	// Events are the noise events inside the window, the probe's own
	// thread left out; ByKind counts them per source kind (irq, softirq,
	// thread, nmi: osnoise's interference counters).
	Events      uint64            `json:"events"`
	ByKind      map[string]uint64 `json:"by_kind"`
	LongestNS   uint64            `json:"longest_ns"`
	LongestName string            `json:"longest"`
	TotalNS     uint64            `json:"total_ns"`
	// Top are the sources that took the most time.
	Top []NoiseSource `json:"top"`
	// Lost counts events the instance's buffer overran.
	Lost uint64 `json:"lost"`
}

// NoiseSource is one noise source in the window.
type NoiseSource struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Count   uint64 `json:"count"`
	TotalNS uint64 `json:"total_ns"`
	MaxNS   uint64 `json:"max_ns"`
}

// us formats ns as µs with one decimal; whole is for round figures (thresholds).
func us(ns uint64) string    { return fmt.Sprintf("%.1f", float64(ns)/1e3) }
func whole(ns uint64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) }

// WriteMarkdown writes the Noise as `rig noise` prints it.
func (r *Noise) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	start := time.Unix(0, r.StartNS).UTC()
	p("rig noise: CPU %d (%s), %.3f s from %s (CLOCK_REALTIME)", r.CPU, r.Sched, float64(r.DurationNS)/1e9, start.Format("2006-01-02T15:04:05.000000Z"))
	if r.Interrupted != "" {
		p(", cut short by %s", r.Interrupted)
	}
	p("\n\n| gaps above | count | per second | osnoise events above (same window) |\n|---:|---:|---:|---:|\n")
	for _, g := range r.Gaps {
		col := "not available"
		if g.OSNoise != nil {
			col = fmt.Sprint(*g.OSNoise)
		}
		p("| %s µs | %d | %.1f | %s |\n", whole(g.AboveNS), g.Count, g.PerSec, col)
	}
	p("\nlongest gap %s µs; the gaps above %s µs took %.3f ms of %.3f ms (%.3f %%)\n", us(r.LongestNS), whole(r.Gaps[0].AboveNS),
		float64(r.LostNS)/1e6, float64(r.DurationNS)/1e6, 100*float64(r.LostNS)/float64(max(r.DurationNS, 1)))
	if r.Thread != nil {
		p("loop thread: %s\n", r.Thread)
	}
	p("\nLongest gaps (start: CLOCK_REALTIME, UTC; who: telemetry's interval around it, osnoise's events inside it):\n\n| start | µs | who took the CPU |\n|---|---:|---|\n")
	for _, g := range r.Longest {
		p("| %s | %s | %s |\n", time.Unix(0, g.StartNS).UTC().Format("15:04:05.000000"), us(g.NS), g.Who)
	}
	if len(r.Longest) == 0 {
		p("| none | | |\n")
	}
	p("\nGaps by length (µs, log2 bins):\n\n| above | up to | count |\n|---:|---:|---:|\n")
	for _, h := range r.Histogram {
		up := "—"
		if h.UpToNS > 0 {
			up = whole(h.UpToNS)
		}
		p("| %s | %s | %d |\n", whole(h.AboveNS), up, h.Count)
	}
	c, f := r.Counter, r.Floor
	p("\ncounter: %s at %.6f MHz, calibrated against %s over %.1f ms before the loop; over the loop it ran %+.2f ppm from that",
		c.Name, c.HzCalibrated/1e6, c.CalibratedBy, float64(c.CalibrationNS)/1e6, c.CheckPPM)
	if c.HzNominal > 0 {
		p(" (CNTFRQ_EL0 says %.6f MHz)", float64(c.HzNominal)/1e6)
	}
	p("\ndetection floor: %d read intervals, %.1f ns typical (mean of those not above %s µs), %.1f ns shortest, one tick %.3f ns: "+
		"an interruption shows as a gap of its length plus one read interval\n", f.Reads, f.TypicalNS, whole(r.Gaps[0].AboveNS), f.ShortestNS, f.TickNS)
	if r.OSNoise != nil {
		o := r.OSNoise
		p("osnoise: %s; %d events in the window (irq %d, softirq %d, thread %d, nmi %d), longest %s µs (%s), %.3f ms in all",
			o.Mode, o.Events, o.ByKind["irq"], o.ByKind["softirq"], o.ByKind["thread"], o.ByKind["nmi"], us(o.LongestNS), o.LongestName, float64(o.TotalNS)/1e6)
		if o.Lost > 0 {
			p("; WARNING: %d events lost to a full buffer", o.Lost)
		}
		p("\n")
	} else {
		p("osnoise: not available: %s\n", r.OSNoiseMissing)
	}
	if r.Telemetry == nil {
		p("telemetry: not available: %s\n", r.TelemetryMissing)
	}
	for _, n := range r.Notes {
		p("note: %s\n", n)
	}
	p("rule: %s\n", r.Rule)
	_, err := io.WriteString(w, b.String())
	return err
}
