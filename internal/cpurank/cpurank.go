// Package cpurank finds the measurably quietest CPU: it watches candidate
// CPUs over a window — interrupts, softirqs, context switches, the run time
// and runnable sightings of other threads, steal time — and ranks them by
// one documented cost, so a responder can be pinned where the least else
// happens, with the evidence kept beside the result.
//
// The window is a telemetry sampler's, the one reader of per-CPU counters
// over time, pinned to a CPU outside the candidates when the process may
// run elsewhere (no IPI is sent to the measured CPUs: the counters are read
// remotely): /proc/interrupts and /proc/softirqs (per-CPU counters),
// /proc/schedstat and /proc/stat (every task's run time and timeslices per
// CPU, steal: the whole node's, in a container too), and a scan of every
// thread's stat (state, last CPU) and schedstat at each sample, which name
// the threads and the ranker's own run time.
package cpurank

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/telemetry"
)

// Defaults of Options.
const (
	DefaultWindow = time.Second
	DefaultScans  = 5
	// EventCostUS is what one interrupt, softirq or context switch is
	// charged in the score: a nominal entry/exit cost. The ranking of a
	// busy CPU against an idle one does not depend on it; among idle CPUs
	// it makes the score the count of events.
	EventCostUS = 2
)

// Rule is the ranking rule, printed with every ranking (read only).
var Rule = "cost of a CPU (µs per second) = run time of other threads there (every task the kernel ran there less the ranker's own) + steal time + " +
	strconv.Itoa(EventCostUS) + " µs × (device interrupts + other interrupts + softirqs + context switches) per second; " +
	"a CPU's rank cost adds its SMT siblings' cost (they share the core); lowest rank cost first, then lowest own cost, then lowest CPU number"

// Options configure Rank.
type Options struct {
	// CPUs are the candidates; nil means every CPU this process may run on
	// (its Cpus_allowed_list: a pod's cpuset).
	CPUs []int
	// Window is how long the CPUs are watched (default 1 s).
	Window time.Duration
	// Scans is how many thread scans spread over the window, both ends
	// included (default 5, at least 2).
	Scans int
	// Self is the process whose threads are not counted (default this one:
	// the ranker's own reads).
	Self int
	// Sleep waits between scans; nil means a context-aware sleep. Tests
	// use it to move the counters of a fake tree; the rates are then per
	// the nominal Window.
	Sleep func(context.Context, time.Duration) error
	// NoPin keeps the measurement on the calling thread's CPUs (fake
	// trees); otherwise it runs on a thread pinned to an allowed CPU
	// outside the candidates when there is one.
	NoPin bool
}

// Error is bad input (candidates that cannot be ranked here).
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Is makes an *Error bad input (cli.ErrUsage).
func (e *Error) Is(target error) bool { return target == cli.ErrUsage }

// Rank watches the candidates over the window and ranks them. It returns
// an *Error for candidates that do not exist or may not be used here; a
// procfs read that fails is an error as well (nothing to rank by).
func Rank(ctx context.Context, fs hostfs.FS, o Options) (*rundir.Ranking, error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Scans < 2 {
		o.Scans = DefaultScans
	}
	if o.Self == 0 {
		o.Self = os.Getpid()
	}
	nominal := o.Sleep != nil
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil {
		return nil, fmt.Errorf("rank CPUs: %w", err)
	}
	allowed, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	if err != nil {
		return nil, fmt.Errorf("rank CPUs: %w", err)
	}
	r := &rundir.Ranking{Format: rundir.RankingFormat, Rule: Rule, WindowNS: int64(o.Window), Scans: o.Scans}
	if o.CPUs == nil {
		r.From = "the CPUs rig may run on (Cpus_allowed_list " + cpulist.Format(allowed) + ")"
		for _, c := range allowed {
			if slices.Contains(online, c) {
				r.Candidates = append(r.Candidates, c)
			}
		}
	} else {
		r.From = "the list " + cpulist.Format(o.CPUs)
		var offline, outside []int
		for _, c := range o.CPUs {
			switch {
			case !slices.Contains(online, c):
				offline = append(offline, c)
			case !slices.Contains(allowed, c):
				outside = append(outside, c)
			default:
				r.Candidates = append(r.Candidates, c)
			}
		}
		if len(offline) > 0 {
			return nil, &Error{fmt.Sprintf("CPU %s of the candidates %s is not online here (online: %s)", cpulist.Format(offline), cpulist.Format(o.CPUs), cpulist.Format(online))}
		}
		if len(outside) > 0 {
			if len(r.Candidates) == 0 {
				return nil, &Error{fmt.Sprintf("none of the candidates %s may be used by rig here: its cpuset allows %s (a pod gets the CPUs of its cgroup); list CPUs from %s", cpulist.Format(o.CPUs), cpulist.Format(allowed), cpulist.Format(allowed))}
			}
			r.Notes = append(r.Notes, fmt.Sprintf("CPU %s is outside the CPUs rig may use here (%s): not ranked", cpulist.Format(outside), cpulist.Format(allowed)))
		}
	}
	if len(r.Candidates) == 0 {
		return nil, &Error{fmt.Sprintf("no candidate CPU: rig may run on %s, online are %s", cpulist.Format(allowed), cpulist.Format(online))}
	}
	var housekeeping []int
	for _, c := range allowed {
		if slices.Contains(online, c) && !slices.Contains(r.Candidates, c) {
			housekeeping = append(housekeeping, c)
		}
	}
	// The sampler runs on a housekeeping CPU; where there is none (or
	// with NoPin), unpinned.
	pin := -1
	r.RankerCPUs = allowed
	if o.NoPin || len(housekeeping) == 0 {
		if !o.NoPin {
			r.Notes = append(r.Notes, fmt.Sprintf("rig may run only on the candidates (%s): the ranker's own reads ran there too (its threads are not counted; its wake-ups are)", cpulist.Format(allowed)))
		}
	} else {
		pin, r.RankerCPUs = housekeeping[0], housekeeping[:1]
	}
	if err := measure(ctx, fs, o, nominal, pin, r); err != nil {
		return nil, err
	}
	return r, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type perCPU struct {
	ctx       uint64 // other threads' timeslices (the scan's)
	own, mine uint64 // the ranker's run ns, timeslices
	runnable  int
	byThread  map[string]uint64 // "comm[tid]" → run ns
	sightings map[string]int    // runnable sightings when run time is unknown
}

// tally adds what the threads on the watched CPUs did since the previous
// scan. A thread seen for the first time has no delta: its run before
// this scan is not known to fall in the window.
func tally(per map[int]*perCPU, self int, prev, cur map[int]telemetry.Task) {
	for tid, t := range cur {
		p := per[t.CPU]
		var run, slices uint64
		if was, ok := prev[tid]; ok && t.SchedOK && was.SchedOK && t.Sched.Slices >= was.Sched.Slices && t.Sched.RunNS >= was.Sched.RunNS {
			run, slices = t.Sched.RunNS-was.Sched.RunNS, t.Sched.Slices-was.Sched.Slices
		}
		if t.PID == self {
			p.own, p.mine = p.own+run, p.mine+slices
			continue
		}
		name := fmt.Sprintf("%s[%d]", t.Comm, tid)
		if t.State == 'R' {
			p.runnable++
			p.sightings[name]++
		}
		p.ctx += slices
		if run > 0 {
			p.byThread[name] += run
		}
	}
}

// measure watches the candidates and their siblings through a telemetry
// sampler pinned to pin (-1: unpinned) over the window: the per-CPU
// counters at its ends and a thread scan at each of its samples. nominal
// says the window is the given one rather than the time measured (a
// test's Sleep moved the counters of a fake tree).
func measure(ctx context.Context, fs hostfs.FS, o Options, nominal bool, pin int, r *rundir.Ranking) error {
	// The siblings of every candidate are measured too: they add to its
	// rank cost.
	watch := slices.Clone(r.Candidates)
	sibs := map[int][]int{}
	for _, c := range r.Candidates {
		if t, err := hostinfo.ReadTopology(fs, c); err == nil {
			sibs[c] = t.Siblings()
			for _, s := range sibs[c] {
				if !slices.Contains(watch, s) {
					watch = append(watch, s)
				}
			}
		}
	}
	slices.Sort(watch)
	per := map[int]*perCPU{}
	for _, c := range watch {
		per[c] = &perCPU{byThread: map[string]uint64{}, sightings: map[string]int{}}
	}
	var prev map[int]telemetry.Task
	haveSched := true
	scanned := func(_ int, tasks []telemetry.Task) {
		cur, hs := map[int]telemetry.Task{}, false
		for _, t := range tasks {
			cur[t.TID], hs = t, hs || t.SchedOK
		}
		if prev != nil {
			tally(per, o.Self, prev, cur)
		}
		// A scan that found no thread on the watched CPUs says nothing
		// of schedstat.
		prev, haveSched = cur, haveSched && (hs || len(tasks) == 0)
	}
	step := o.Window / time.Duration(o.Scans-1)
	steps := 0
	var waitErr error
	wait := func() error {
		if steps++; steps == o.Scans {
			return errWindowDone
		}
		waitErr = o.Sleep(ctx, step)
		return waitErr
	}
	s, err := telemetry.New(telemetry.Config{FS: fs, CPUs: watch, PinCPU: pin, Interval: max(step, time.Millisecond), MaxSamples: o.Scans,
		ThreadScanEvery: 1, Scanned: scanned, Wait: wait})
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		return fmt.Errorf("rank CPUs: %w", err)
	}
	res, err := s.Stop()
	if err = errors.Join(waitErr, err); err != nil {
		return fmt.Errorf("rank CPUs: %w", err)
	}
	a, b, err := s.CPUUse()
	if err != nil {
		return fmt.Errorf("rank CPUs: %w", err)
	}
	el := time.Duration(res.End - res.Start)
	if nominal {
		el = o.Window
	}
	r.StartNS, r.EndNS = res.Start, res.Start+el.Nanoseconds()
	secs := el.Seconds()
	scans := o.Scans - 1
	own := map[int]rundir.RankedCPU{}
	sources := map[string][]int{}
	rq := true
	for _, c := range watch {
		x := rundir.RankedCPU{CPU: c, Siblings: without(sibs[c], c)}
		x.IRQs, x.ArchIRQs, x.Softirqs, x.TopIRQs = rates(res.Sources, c, secs)
		busy, _ := hostinfo.Busy(a, b, c, el)
		sources[busy.Source] = append(sources[busy.Source], c)
		x.BusyPct, x.StealPct = 100*busy.Share, 100*busy.Steal
		p := per[c]
		x.Runnable = float64(p.runnable) / float64(scans)
		x.RunUS = max(0, busy.RunNS-float64(p.own)) / 1e3 / secs
		rq = rq && busy.HaveSlices
		if busy.HaveSlices {
			x.CtxSwitches = float64(busy.Slices-min(busy.Slices, p.mine)) / secs
		} else if haveSched {
			x.CtxSwitches = float64(p.ctx) / secs
		}
		x.TopThreads = topThreads(p)
		x.Own = x.RunUS + busy.Steal*1e6 + EventCostUS*(x.IRQs+x.ArchIRQs+x.Softirqs+x.CtxSwitches)
		own[c] = x
	}
	setSources(r, a.SchedErr, rq, haveSched, sources)
	if res.ThreadsNote != "" {
		r.Notes = append(r.Notes, res.ThreadsNote)
	}
	for _, c := range r.Candidates {
		x := own[c]
		x.Cost = x.Own
		for _, s := range x.Siblings {
			x.Cost += own[s].Own
		}
		r.CPUs = append(r.CPUs, x)
	}
	slices.SortFunc(r.CPUs, func(p, q rundir.RankedCPU) int {
		return cmp.Or(cmp.Compare(round1(p.Cost), round1(q.Cost)), cmp.Compare(round1(p.Own), round1(q.Own)), cmp.Compare(p.CPU, q.CPU))
	})
	for i := range r.CPUs {
		r.CPUs[i].Rank = i + 1
	}
	r.Chosen = r.CPUs[0].CPU
	return nil
}

var errWindowDone = errors.New("the window is over")

// round1 compares costs to 0.1 µs/s: below that two CPUs are equal.
func round1(v float64) int64 { return int64(v*10 + 0.5) }

func without(l []int, c int) []int {
	var out []int
	for _, x := range l {
		if x != c {
			out = append(out, x)
		}
	}
	return out
}

// rates are cpu's device interrupts (numbered /proc/interrupts rows),
// other interrupts and softirqs per second over the sampler's window,
// with the busiest interrupt rows.
func rates(srcs []rundir.TelemetrySource, cpu int, secs float64) (dev, arch, soft float64, top []string) {
	type src struct {
		name string
		rate float64
	}
	var irqs []src
	for _, s := range srcs {
		if s.CPU != cpu {
			continue
		}
		rate := float64(s.Total) / secs
		switch _, err := strconv.Atoi(s.ID); {
		case s.Kind == "softirq":
			soft += rate
		case s.Kind != "irq":
		case err == nil: // a numbered row: a device IRQ
			dev += rate
			irqs = append(irqs, src{s.ID + " " + s.Name, rate})
		default:
			arch += rate
			irqs = append(irqs, src{s.ID, rate})
		}
	}
	slices.SortStableFunc(irqs, func(p, q src) int { return cmp.Compare(q.rate, p.rate) })
	for i := 0; i < len(irqs) && i < 3; i++ {
		top = append(top, fmt.Sprintf("%s %.0f/s", irqs[i].name, irqs[i].rate))
	}
	return dev, arch, soft, top
}

// setSources says where the run time and context switches came from: the
// node-wide counters per CPU (hostinfo.Busy's rule), less the ranker's
// own threads, which the threads' schedstat gives.
func setSources(r *rundir.Ranking, schedErr error, rq, haveSched bool, by map[string][]int) {
	less := ", less the ranker's own threads (their schedstat)"
	if !haveSched {
		less = "; the ranker's own threads are included (no per-thread schedstat: CONFIG_SCHED_INFO is off)"
	}
	var parts []string
	for _, s := range []string{hostinfo.BusyRunQueue, hostinfo.BusyStatOver, hostinfo.BusyStat} {
		if l := by[s]; len(l) > 0 {
			parts = append(parts, s+" on CPU "+cpulist.Format(l))
		}
	}
	r.RunSource = "every task's run time on the CPU (exited threads included), from " + strings.Join(parts, ", ") + less
	switch {
	case rq:
		r.CtxSource = "timeslices begun on the CPU (/proc/schedstat field 9, every task)" + less
	case haveSched:
		r.CtxSource = "timeslices in the schedstat of the threads /proc shows, each counted on the CPU the thread last ran on at the next scan (threads born and gone between two scans are missed)"
	default:
		r.CtxSource = "unavailable (no per-thread schedstat: CONFIG_SCHED_INFO is off); not in the cost"
	}
	if !rq && schedErr != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("no run time per CPU in nanoseconds: %v; /proc/stat counts in USER_HZ ticks (10 ms), so differences of a few tens of ms/s between CPUs are within its resolution", schedErr))
	}
}

func topThreads(p *perCPU) []string {
	type th struct {
		name string
		v    uint64
	}
	var ts []th
	for n, v := range p.byThread {
		ts = append(ts, th{n, v})
	}
	byRun := len(ts) > 0
	if !byRun {
		for n, v := range p.sightings {
			ts = append(ts, th{n, uint64(v)})
		}
	}
	slices.SortFunc(ts, func(a, b th) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.name, b.name)) })
	var out []string
	for i := 0; i < len(ts) && i < 3; i++ {
		if byRun {
			out = append(out, fmt.Sprintf("%s %.1f ms", ts[i].name, float64(ts[i].v)/1e6))
		} else {
			out = append(out, fmt.Sprintf("%s ×%d", ts[i].name, ts[i].v))
		}
	}
	return out
}
