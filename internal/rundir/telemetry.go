package rundir

// telemetry.json of a round: what internal/telemetry samples on the
// responder host and analysis reads back.

import (
	"fmt"
	"sort"
	"strings"
)

// TelemetryResult is one round's telemetry, written as telemetry.json.
// Times are CLOCK_REALTIME nanoseconds, the clock the sample files use.
type TelemetryResult struct {
	CPUs       []int `json:"cpus"`
	PinCPU     int   `json:"sampler_cpu"`
	IntervalNS int64 `json:"interval_ns"`
	Start      int64 `json:"start_ns"`
	End        int64 `json:"end_ns"`
	Samples    int   `json:"samples"`
	// Missed counts samples not taken because MaxSamples was reached.
	Missed int `json:"missed,omitempty"`
	// ReadErrors counts failed reads; FirstError is the first of them.
	ReadErrors int    `json:"read_errors,omitempty"`
	FirstError string `json:"first_error,omitempty"`
	// Sources are the counters that moved during the round (those that
	// stayed flat are omitted), with totals and per-second rates. Kinds:
	// "irq" (ID = IRQ number or arch row; LOC = local timer ticks),
	// "softirq", "idle_usage" (entries), "idle_time_us", "softnet"
	// (processed, dropped, time_squeeze) and "nic" (NICStats; CPU -1).
	Sources   []TelemetrySource   `json:"sources"`
	Intervals []TelemetryInterval `json:"intervals"`
	// Thread is the watched responder thread, nil if none was given.
	Thread *ThreadCtx `json:"thread,omitempty"`
	// Threads are the threads seen running on CPUs, by number of scans.
	Threads []ThreadSeen `json:"threads_seen"`
	// ThreadsMode is "schedstat" (counted only when they ran since the
	// previous scan) or "last_cpu" (every sighting of stat field 39).
	ThreadsMode     string `json:"threads_mode,omitempty"`
	ThreadScanEvery int    `json:"thread_scan_every,omitempty"`
	// ThreadsNote says, when set, that Threads names only the tasks of one
	// PID namespace (a container's) and how to name the others.
	ThreadsNote string `json:"threads_note,omitempty"`
	// Busy is each measured CPU's busy time from the first sample to the
	// last: every task of the node, named in Threads or not.
	Busy            []CPUBusy        `json:"cpu_busy,omitempty"`
	IRQAffinity     []IRQWatch       `json:"irq_affinity,omitempty"`
	AffinityChanges []AffinityChange `json:"affinity_changes,omitempty"`
	// Notes say what could not be watched (e.g. no cpuidle on a CPU).
	Notes []string `json:"notes,omitempty"`
	// Freq is the responder CPU's measured frequency over the round (nil
	// when not asked for).
	Freq *FreqResult `json:"freq,omitempty"`
	// Power is the power state the round ran under, read as sampling
	// started (nil when not asked for).
	Power *PowerState `json:"power,omitempty"`
	// Energy is the responder host's RAPL energy over the round (nil
	// when not asked for).
	Energy *EnergyResult `json:"energy,omitempty"`
	// Watched says what CPUs are ("" in older files: the responder CPU
	// and its SMT siblings); PinCPU -1 says the sampler ran unpinned.
	Watched string `json:"watched,omitempty"`
}

// TelemetrySource is one counter on one CPU.
type TelemetrySource struct {
	CPU  int    `json:"cpu"`
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Name is the IRQ handler ("nvme0q1"), arch description ("Local timer
	// interrupts") or idle state name ("C6").
	Name   string  `json:"name,omitempty"`
	Total  uint64  `json:"total"`
	PerSec float64 `json:"per_sec"`
}

// Label is a short human name: "cpu1 irq 131 nvme0q1".
func (s TelemetrySource) Label() string {
	l := fmt.Sprintf("cpu%d %s %s", s.CPU, s.Kind, s.ID)
	if s.CPU < 0 {
		l = fmt.Sprintf("%s %s", s.Kind, s.ID)
	}
	if s.Name != "" && s.Name != s.ID {
		l += " " + s.Name
	}
	return l
}

// TelemetryInterval is what happened between two consecutive samples.
type TelemetryInterval struct {
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Deltas are aligned with TelemetryResult.Sources.
	Deltas []uint64 `json:"d"`
	// Voluntary and involuntary context switches of the watched thread.
	Vol   uint64 `json:"vol,omitempty"`
	Invol uint64 `json:"invol,omitempty"`
	// Threads indexes TelemetryResult.Threads seen by a scan at the end of
	// this interval (scans happen every ThreadScanEvery samples).
	Threads []int `json:"threads,omitempty"`
}

// ThreadCtx is the watched thread's context switches over the round.
type ThreadCtx struct {
	PID         int    `json:"pid"`
	TID         int    `json:"tid"`
	Voluntary   uint64 `json:"voluntary"`
	Involuntary uint64 `json:"involuntary"`
}

// ThreadSeen is a thread found running on a measured CPU.
type ThreadSeen struct {
	TID   int    `json:"tid"`
	PID   int    `json:"pid"`
	Comm  string `json:"comm"`
	CPU   int    `json:"cpu"`   // last measured CPU it was seen on
	Scans int    `json:"count"` // scans that saw it
	RunNS uint64 `json:"run_ns,omitempty"`
}

// IRQWatch is a watched IRQ's affinity at start and end.
type IRQWatch struct {
	IRQ     int    `json:"irq"`
	Initial string `json:"initial"`
	Final   string `json:"final"`
	Changes int    `json:"changes"`
}

// AffinityChange is one observed change of an IRQ's effective affinity.
type AffinityChange struct {
	T    int64  `json:"t_ns"`
	IRQ  int    `json:"irq"`
	From string `json:"from"`
	To   string `json:"to"`
}

// IntervalAt returns the interval that contains t (Start < t ≤ End), or nil
// when t is outside the sampled time. The report uses it to line a slow
// packet up with what the CPU was doing.
func (r *TelemetryResult) IntervalAt(t int64) *TelemetryInterval {
	i := sort.Search(len(r.Intervals), func(i int) bool { return r.Intervals[i].End >= t })
	if i == len(r.Intervals) || t <= r.Intervals[i].Start {
		return nil
	}
	return &r.Intervals[i]
}

// SourceDelta is one source's count in an interval.
type SourceDelta struct {
	TelemetrySource
	Delta uint64 `json:"delta"`
}

// Top returns the n sources that moved most in iv (idle residency
// excluded: it is time, not events), largest first.
func (r *TelemetryResult) Top(iv *TelemetryInterval, n int) []SourceDelta {
	var out []SourceDelta
	for k, d := range iv.Deltas {
		if d == 0 || r.Sources[k].Kind == "idle_time_us" {
			continue
		}
		out = append(out, SourceDelta{r.Sources[k], d})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Delta > out[j].Delta })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Summary is a one-line description of an interval for the report.
func (r *TelemetryResult) Summary(iv *TelemetryInterval, n int) string {
	var parts []string
	for _, d := range r.Top(iv, n) {
		parts = append(parts, fmt.Sprintf("%s ×%d", d.Label(), d.Delta))
	}
	for _, k := range iv.Threads {
		parts = append(parts, "thread "+r.Threads[k].Comm)
	}
	if len(parts) == 0 {
		return "nothing counted"
	}
	return strings.Join(parts, ", ")
}

// Sources of the measured frequency (FreqResult.Source).
const (
	// FreqAPERF: APERF, MPERF and the TSC from the msr driver, read at
	// the round's first and last sample (RuleAPERFTSC).
	FreqAPERF = "APERF/MPERF"
	// FreqCurFreq: the mean of cpufreq's scaling_cur_freq at every sample
	// (on x86 the kernel's own APERF/MPERF estimate over its last tick;
	// elsewhere the driver's last request).
	FreqCurFreq = "scaling_cur_freq"
	// FreqNone: neither exists on the host (a VM without msr or cpufreq).
	FreqNone = "not measurable here"
)

// Rules of the measured frequency (FreqResult.Rule).
const (
	// RuleAPERFTSC: the average frequency while the CPU was not idle is
	// ΔAPERF/ΔMPERF × ΔTSC/Δt (MPERF counts at the TSC's rate in C0), the
	// busy share ΔMPERF/ΔTSC: turbostat's Bzy_MHz and Busy%.
	RuleAPERFTSC = "ΔAPERF/ΔMPERF × ΔTSC/Δt; busy ΔMPERF/ΔTSC"
	// RuleCurFreq: the mean of scaling_cur_freq over the samples.
	RuleCurFreq = "mean of scaling_cur_freq samples"
)

// FreqResult is the responder CPU's frequency over one round.
type FreqResult struct {
	CPU    int    `json:"cpu"`
	Source string `json:"source"`
	// Rule is how MHz was computed (a Rule constant); "" with FreqNone,
	// and from rigs that multiplied ΔAPERF/ΔMPERF by BaseMHz.
	Rule string `json:"rule,omitempty"`
	// MHz is the round's average; 0 with FreqNone.
	MHz float64 `json:"mhz,omitempty"`
	// MinMHz and MaxMHz bound the scaling_cur_freq samples.
	MinMHz float64 `json:"min_mhz,omitempty"`
	MaxMHz float64 `json:"max_mhz,omitempty"`
	// Samples is the number of readings behind MHz (2 for APERF/MPERF:
	// start and end).
	Samples int `json:"samples,omitempty"`
	// TSCMHz is the rate MPERF counts at, ΔTSC/Δt over the round
	// (RuleAPERFTSC).
	TSCMHz float64 `json:"tsc_mhz,omitempty"`
	// BaseMHz and BaseFrom are the nominal frequency older rigs took for
	// MPERF's rate and where it came from; kept to read their runs.
	BaseMHz  float64 `json:"base_mhz,omitempty"`
	BaseFrom string  `json:"base_from,omitempty"`
	// BusyPct is the share of the round the CPU was not idle (APERF/MPERF
	// only): ΔMPERF/ΔTSC.
	BusyPct float64 `json:"busy_pct,omitempty"`
	// Note says why a better source was not used, or what to keep in mind.
	Note string `json:"note,omitempty"`
}

// PowerState is one CPU's power state as an arm left it: what a round ran
// under. The telemetry of every round records it, so that an arm that
// set a tuned profile is still explained by the values the profile set.
type PowerState struct {
	CPU   int    `json:"cpu"`
	Freq  *Freq  `json:"cpufreq,omitempty"` // nil: no cpufreq on the CPU
	Turbo *Turbo `json:"turbo,omitempty"`   // nil: no turbo control
	// Idle lists the CPU's idle states in index order, "C6 (disabled)"
	// for the ones turned off.
	Idle []string `json:"idle,omitempty"`
	// Tuned is what `tuned-adm active` printed; "" when tuned is not
	// installed.
	Tuned string `json:"tuned,omitempty"`
	// Errors are the parts that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// EnergySourceRAPL: the powercap zones' energy_uj counters of the RAPL
// driver, read at every telemetry sample.
const EnergySourceRAPL = "RAPL energy_uj"

// RuleRAPL: joules are the sum of the counter's steps between samples
// (one wrap at max_energy_range_uj unwound per step); watts are joules
// over the time from the first sample to the last.
const RuleRAPL = "Σ Δenergy_uj between samples (one wrap per step unwound) / 1e6; W = J / (last − first sample)"

// RAPLMaxWatts bounds what one zone can draw: a step between readings
// longer than max_energy_range_uj at this power may hold more than one
// wrap of the counter (no CPU package or its memory draws a kilowatt).
const RAPLMaxWatts = 1000

// EnergyResult is the energy of every RAPL zone over one round.
type EnergyResult struct {
	Source string       `json:"source"`
	Rule   string       `json:"rule,omitempty"`
	Zones  []EnergyZone `json:"zones,omitempty"`
	// CannotTell says why no zone was measured (no RAPL, no access).
	CannotTell string `json:"cannot_tell,omitempty"`
	// Note says what to keep in mind (read at the round's ends only).
	Note string `json:"note,omitempty"`
}

// EnergyZone is one zone's energy over the round. A zone covers its whole
// package (every CPU's work, not only the responder's) or that package's
// cores, uncore or memory.
type EnergyZone struct {
	Zone   string  `json:"zone"`             // "intel-rapl:0:0"
	Name   string  `json:"name"`             // "core"
	Parent string  `json:"parent,omitempty"` // "package-0" for a subzone
	Joules float64 `json:"joules,omitempty"`
	Watts  float64 `json:"watts,omitempty"`
	// Seconds is the span of the readings; Samples their number; Wraps
	// the counter wraps unwound.
	Seconds float64 `json:"seconds,omitempty"`
	Samples int     `json:"samples,omitempty"`
	Wraps   int     `json:"wraps,omitempty"`
	// CannotTell says why this zone has no value: an unreadable counter,
	// a failed read, a step long enough to hold two wraps.
	CannotTell string `json:"cannot_tell,omitempty"`
}

// Label names the zone for people: "package-0", "package-0 core".
func (z EnergyZone) Label() string {
	if z.Parent != "" {
		return z.Parent + " " + z.Name
	}
	return z.Name
}
