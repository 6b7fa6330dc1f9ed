package telemetry

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// source is the dense (pre-filter) view the builder works on.
type source struct {
	rundir.TelemetrySource
	at func(i int) uint64 // counter value at sample i
}

func delta(cur, prev uint64) uint64 {
	if cur < prev {
		return 0 // counter reset (IRQ freed and re-requested)
	}
	return cur - prev
}

func (s *Sampler) result() *rundir.TelemetryResult {
	cfg := s.cfg
	n := s.n
	r := &rundir.TelemetryResult{CPUs: cfg.CPUs, PinCPU: cfg.PinCPU, IntervalNS: int64(cfg.Interval), Start: s.t[0], End: s.t[n-1],
		Samples: n, Missed: s.missed, ReadErrors: s.errCount, Threads: []rundir.ThreadSeen{}}
	if s.firstErr != nil {
		r.FirstError = s.firstErr.Error()
	}
	var all []source
	nc := len(cfg.CPUs)
	addTable := func(kind string, ids []string, names func(int) string, data []uint64, width int) {
		for k, id := range ids {
			for c, cpu := range cfg.CPUs {
				off := k*nc + c
				all = append(all, source{rundir.TelemetrySource{CPU: cpu, Kind: kind, ID: id, Name: names(k)},
					func(i int) uint64 { return data[i*width+off] }})
			}
		}
	}
	addTable("irq", s.irqR.IDs(), func(k int) string { return s.irqTab.Rows[k].Name }, s.irq, s.irqR.Len())
	addTable("softirq", s.softR.IDs(), func(int) string { return "" }, s.soft, s.softR.Len())
	for k, f := range s.idle {
		k, ni := k, len(s.idle)
		id := "state" + strconv.Itoa(f.state)
		all = append(all, source{rundir.TelemetrySource{CPU: f.cpu, Kind: "idle_usage", ID: id, Name: f.name}, func(i int) uint64 { return s.idleU[i*ni+k] }},
			source{rundir.TelemetrySource{CPU: f.cpu, Kind: "idle_time_us", ID: id, Name: f.name}, func(i int) uint64 { return s.idleT[i*ni+k] }})
	}
	for k, f := range s.thermal {
		k, nt := k, len(s.thermal)
		all = append(all, source{rundir.TelemetrySource{CPU: f.cpu, Kind: "thermal", ID: f.id}, func(i int) uint64 { return s.therm[i*nt+k] }})
	}
	for c, cpu := range cfg.CPUs {
		for j, id := range []string{"processed", "dropped", "time_squeeze"} {
			off := c*netCols + j
			all = append(all, source{rundir.TelemetrySource{CPU: cpu, Kind: "softnet", ID: id}, func(i int) uint64 { return s.net[i*nc*netCols+off] }})
		}
	}
	for j, id := range cfg.NICStatNames {
		j, w := j, len(cfg.NICStatNames)
		all = append(all, source{rundir.TelemetrySource{CPU: -1, Kind: "nic", ID: id}, func(i int) uint64 { return s.nic[i*w+j] }})
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
		r.Sources = append(r.Sources, src.TelemetrySource)
	}
	for i := 1; i < n; i++ {
		iv := rundir.TelemetryInterval{Start: s.t[i-1], End: s.t[i], Deltas: make([]uint64, len(kept))}
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
		r.Thread = &rundir.ThreadCtx{PID: cfg.PID, TID: cfg.TID}
		for _, iv := range r.Intervals {
			r.Thread.Voluntary += iv.Vol
			r.Thread.Involuntary += iv.Invol
		}
	}
	if ts := s.scanner; ts != nil {
		r.ThreadScanEvery = cfg.ThreadScanEvery
		r.ThreadsNote = hostinfo.ThreadNamesNote(cfg.FS)
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
		w := rundir.IRQWatch{IRQ: a.irq, Initial: a.initial, Final: string(trim(a.last[:a.lastN])), Changes: a.changes}
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
	if cfg.PinCPU < 0 {
		r.Notes = append(r.Notes, "the sampler ran unpinned among the watched CPUs (rig may use no other CPU there): its own reads are part of what they show")
	}
	r.Watched = cfg.Watched
	if s.useErr != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("busy time per CPU not measured: %v", s.useErr))
	} else if !s.useT[1].IsZero() {
		for _, cpu := range cfg.CPUs {
			if b, ok := hostinfo.Busy(s.use[0], s.use[1], cpu, s.useT[1].Sub(s.useT[0])); ok {
				r.Busy = append(r.Busy, b)
			}
		}
	}
	if s.freq != nil {
		r.Freq = s.freq.result(n)
	}
	r.Power = cfg.Power
	if s.energy != nil {
		r.Energy = s.energy.result()
	}
	return r
}
