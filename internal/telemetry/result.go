package telemetry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rig-project/rig/internal/power"
)

// Result is one round's telemetry, written as telemetry.json. Times are
// CLOCK_REALTIME nanoseconds, the clock the sample files use.
type Result struct {
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
	Sources   []Source   `json:"sources"`
	Intervals []Interval `json:"intervals"`
	// Thread is the watched responder thread, nil if none was given.
	Thread *ThreadCtx `json:"thread,omitempty"`
	// Threads are the threads seen running on CPUs, by number of scans.
	Threads []ThreadSeen `json:"threads_seen"`
	// ThreadsMode is "schedstat" (counted only when they ran since the
	// previous scan) or "last_cpu" (every sighting of stat field 39).
	ThreadsMode     string           `json:"threads_mode,omitempty"`
	ThreadScanEvery int              `json:"thread_scan_every,omitempty"`
	IRQAffinity     []IRQWatch       `json:"irq_affinity,omitempty"`
	AffinityChanges []AffinityChange `json:"affinity_changes,omitempty"`
	// Notes say what could not be watched (e.g. no cpuidle on a CPU).
	Notes []string `json:"notes,omitempty"`
	// Freq is the responder CPU's measured frequency over the round (nil
	// when not asked for).
	Freq *FreqResult `json:"freq,omitempty"`
	// Power is the power state the round ran under, read as sampling
	// started (nil when not asked for).
	Power *power.State `json:"power,omitempty"`
}

// Source is one counter on one CPU.
type Source struct {
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
func (s Source) Label() string {
	l := fmt.Sprintf("cpu%d %s %s", s.CPU, s.Kind, s.ID)
	if s.CPU < 0 {
		l = fmt.Sprintf("%s %s", s.Kind, s.ID)
	}
	if s.Name != "" && s.Name != s.ID {
		l += " " + s.Name
	}
	return l
}

// Interval is what happened between two consecutive samples.
type Interval struct {
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Deltas are aligned with Result.Sources.
	Deltas []uint64 `json:"d"`
	// Voluntary and involuntary context switches of the watched thread.
	Vol   uint64 `json:"vol,omitempty"`
	Invol uint64 `json:"invol,omitempty"`
	// Threads indexes Result.Threads seen by a scan at the end of this
	// interval (scans happen every ThreadScanEvery samples).
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
func (r *Result) IntervalAt(t int64) *Interval {
	i := sort.Search(len(r.Intervals), func(i int) bool { return r.Intervals[i].End >= t })
	if i == len(r.Intervals) || t <= r.Intervals[i].Start {
		return nil
	}
	return &r.Intervals[i]
}

// SourceDelta is one source's count in an interval.
type SourceDelta struct {
	Source
	Delta uint64 `json:"delta"`
}

// Top returns the n sources that moved most in iv (idle residency
// excluded: it is time, not events), largest first.
func (r *Result) Top(iv *Interval, n int) []SourceDelta {
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
func (r *Result) Summary(iv *Interval, n int) string {
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

// source is the dense (pre-filter) view the builder works on.
type source struct {
	Source
	at func(i int) uint64 // counter value at sample i
}

func delta(cur, prev uint64) uint64 {
	if cur < prev {
		return 0 // counter reset (IRQ freed and re-requested)
	}
	return cur - prev
}

func (s *Sampler) result() *Result {
	cfg := s.cfg
	n := s.n
	r := &Result{CPUs: cfg.CPUs, PinCPU: cfg.PinCPU, IntervalNS: int64(cfg.Interval), Start: s.t[0], End: s.t[n-1],
		Samples: n, Missed: s.missed, ReadErrors: s.errCount, Threads: []ThreadSeen{}}
	if s.firstErr != nil {
		r.FirstError = s.firstErr.Error()
	}
	var all []source
	nc := len(cfg.CPUs)
	addTable := func(kind string, ids []string, names func(int) string, data []uint64, width int) {
		for k, id := range ids {
			for c, cpu := range cfg.CPUs {
				off := k*nc + c
				all = append(all, source{Source{CPU: cpu, Kind: kind, ID: id, Name: names(k)},
					func(i int) uint64 { return data[i*width+off] }})
			}
		}
	}
	addTable("irq", s.irqR.IDs(), func(k int) string { return s.irqTab.Rows[k].Name }, s.irq, s.irqR.Len())
	addTable("softirq", s.softR.IDs(), func(int) string { return "" }, s.soft, s.softR.Len())
	for k, f := range s.idle {
		k, ni := k, len(s.idle)
		id := "state" + itoa(f.state)
		all = append(all, source{Source{CPU: f.cpu, Kind: "idle_usage", ID: id, Name: f.name}, func(i int) uint64 { return s.idleU[i*ni+k] }},
			source{Source{CPU: f.cpu, Kind: "idle_time_us", ID: id, Name: f.name}, func(i int) uint64 { return s.idleT[i*ni+k] }})
	}
	for c, cpu := range cfg.CPUs {
		for j, id := range []string{"processed", "dropped", "time_squeeze"} {
			off := c*netCols + j
			all = append(all, source{Source{CPU: cpu, Kind: "softnet", ID: id}, func(i int) uint64 { return s.net[i*nc*netCols+off] }})
		}
	}
	for j, id := range cfg.NICStatNames {
		j, w := j, len(cfg.NICStatNames)
		all = append(all, source{Source{CPU: -1, Kind: "nic", ID: id}, func(i int) uint64 { return s.nic[i*w+j] }})
	}
	secs := float64(r.End-r.Start) / 1e9
	var kept []source
	for _, src := range all {
		for i := 1; i < n; i++ {
			src.Total += delta(src.at(i), src.at(i-1))
		}
		if src.Total == 0 {
			continue
		}
		if secs > 0 {
			src.PerSec = float64(src.Total) / secs
		}
		kept = append(kept, src)
		r.Sources = append(r.Sources, src.Source)
	}
	for i := 1; i < n; i++ {
		iv := Interval{Start: s.t[i-1], End: s.t[i], Deltas: make([]uint64, len(kept))}
		for k, src := range kept {
			iv.Deltas[k] = delta(src.at(i), src.at(i-1))
		}
		if cfg.TID != 0 {
			iv.Vol, iv.Invol = delta(s.vol[i], s.vol[i-1]), delta(s.inv[i], s.inv[i-1])
		}
		r.Intervals = append(r.Intervals, iv)
	}
	if cfg.TID != 0 {
		// Summed from the intervals: the thread usually exits before the
		// last sample (the responder stops first), and a failed read counts
		// as no change rather than erasing the round's total.
		r.Thread = &ThreadCtx{PID: cfg.PID, TID: cfg.TID}
		for _, iv := range r.Intervals {
			r.Thread.Voluntary += iv.Vol
			r.Thread.Involuntary += iv.Invol
		}
	}
	if ts := s.scanner; ts != nil {
		r.ThreadScanEvery = cfg.ThreadScanEvery
		r.ThreadsMode = "schedstat"
		if ts.noSched {
			r.ThreadsMode = "last_cpu"
		}
		order := make([]int, len(ts.threads))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return ts.threads[order[a]].Scans > ts.threads[order[b]].Scans })
		pos := make([]int, len(order))
		for newI, old := range order {
			pos[old] = newI
			r.Threads = append(r.Threads, ts.threads[old])
		}
		for _, h := range ts.hits {
			// A scan at sample i describes the interval ending at i.
			if i := int(h.sample) - 1; i >= 0 && i < len(r.Intervals) {
				r.Intervals[i].Threads = append(r.Intervals[i].Threads, pos[h.thread])
			}
		}
	}
	for _, a := range s.aff {
		w := IRQWatch{IRQ: a.irq, Initial: a.initial, Final: string(trim(a.last[:a.lastN])), Changes: a.changes}
		r.IRQAffinity = append(r.IRQAffinity, w)
	}
	r.AffinityChanges = s.drift
	for _, cpu := range cfg.CPUs {
		has := false
		for _, f := range s.idle {
			has = has || f.cpu == cpu
		}
		if !has {
			r.Notes = append(r.Notes, fmt.Sprintf("cpu%d: no cpuidle states (driver none or idle=poll): idle not counted", cpu))
		}
	}
	if cfg.TID == 0 {
		r.Notes = append(r.Notes, "no thread watched: context switches not counted")
	}
	if s.freq != nil {
		r.Freq = s.freq.result(n)
	}
	r.Power = cfg.Power
	return r
}
