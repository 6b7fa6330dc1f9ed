package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/rig-project/rig/analysis"
)

// us formats ns as µs with two decimals.
func us(ns int64) string { return analysis.FormatUS(ns) }

// ratio formats a/b ("1.07"), or "–" when b is 0.
func ratio(a, b int64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// verdict says met or not, and whether the rounds resolved it.
func verdict(g Goal) string {
	v := "**not met**"
	if g.Met {
		v = "met"
	}
	if !g.Resolved {
		v += " (within noise: a 95 % CI includes 1.00)"
	}
	return v
}

// Markdown writes the results as one Markdown document: environment,
// one table per part, then the goals (docs/bench.md#goals) with met / not met.
func (r *Results) Markdown(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	e := r.Env
	fmt.Fprintf(&b, "# rig vs sockperf / cyclictest\n\n")
	fmt.Fprintf(&b, "- date: %s\n- commit: %s\n- %s; kernel %s; %d CPUs; sockperf %s; cyclictest %s\n",
		e.Date.Format(time.RFC3339), e.Commit, e.Rig, e.Kernel, e.CPUs, orNA(e.Sockperf), orNA(e.Cyclictest))
	fmt.Fprintf(&b, "- load average (1/5/15 min): %s at start, %s at end\n", e.LoadBefore, e.LoadAfter)
	fmt.Fprintf(&b, "- emulated lab (veth + bridge, software timestamps); sender CPU %d, responder CPU %d for both tools (whole process under taskset); payload %d B; SCHED_OTHER\n",
		c.SenderCPU, c.ResponderCPU, c.Size)
	fmt.Fprintf(&b, "- %d interleaved rounds (rig, rig without kernel stamps and sockperf take turns going first, so a drift of the host favours none) of %v per tool and mode; rig drops its first %v of each round, sockperf its own warm-up; percentiles are nearest-rank over the pooled raw samples\n",
		c.Rounds, c.RoundTime, c.Warmup)
	fmt.Fprintf(&b, "- start-up like sockperf's: its server runs alone while its client's warm-up stage sleeps (~2 s), so rig's responder runs alone %v before rig's sender starts; a busy responder spinning alone pushes the host's other wake-ups to the idle CPU, and there they stay while both CPUs are busy\n",
		c.Lead)
	if r.Elapsed > 0 {
		fmt.Fprintf(&b, "- bench wall time: %v\n", r.Elapsed.Round(time.Second))
	}
	if len(r.RTT) > 0 {
		b.WriteString("\n## RTT at 1 request/ms (full round trip, µs)\n\n")
		b.WriteString("Multicast request, unicast reply. rig user = rx_user − tx_user (what sockperf measures: user space to user space) of every request; rig user, closed loop = the same for the requests sent after the previous reply arrived — sockperf's ping-pong sends only then, so a stall gives it one sample while rig's schedule (an open loop) records every request the stall held (checked: a 300 ms SIGSTOP of sockperf's server gave one 302 ms sample and a 302 ms gap in its sends); the goals use this row; rig user, closed loop, no kernel stamps = the same from rounds run with `--timestamps off` on both rig ends (sockperf takes no kernel stamps either): what is left of a gap once the kernel's stamping is out of the path; rig sw = kernel software stamps rx_sw − tx_sw (without the sender's own send and wake-up costs). block: `rig respond --poll block` + `rig send --poll block --spin 1ms` vs blocking `sockperf server` / `ping-pong` (sockperf's blocking client busy-waits between sends and blocks only for the reply; rig's sender does the same when its spin window covers the interval); block, rig default: the same with rig's default `--spin 50µs` (the sender sleeps between requests, its CPU halts and the reply pays a wake-up of a halted vCPU; ratios against the block sockperf row, for information); busy: `--poll busy` on both rig ends vs `--nonblocked` on both sockperf ends.\n\n")
		b.WriteString("| mode | tool | n | lost | median | p99 | p99.9 | max | ratio median | ratio p99 | ratio p99.9 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, mode := range []string{"block", ModeBlockDefault, "busy"} {
			sp := r.sockperfFor(mode)
			for _, tool := range []string{"rig user", ToolClosedLoop, ToolNoStamps, "rig sw", "sockperf"} {
				row := r.rtt(mode, tool)
				if row == nil {
					continue
				}
				s := row.Stats
				rm, r99, r999 := "", "", ""
				if tool != "sockperf" && sp != nil {
					rm, r99, r999 = ratio(s.P50, sp.Stats.P50), ratio(s.P99, sp.Stats.P99), ratio(s.P999, sp.Stats.P999)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", mode, tool, s.N, row.Lost,
					us(s.P50), us(s.P99), us(s.P999), us(s.Max), rm, r99, r999)
			}
		}
		b.WriteString("\nratio = rig / sockperf over the pooled samples (≤ 1.00: rig is as fast or faster).\n")
		b.WriteString("\n### Paired by round\n\nThe same figures compared round by round — rig's round against the sockperf round next to it — then the median of the per-round ratios (smallest–largest in brackets). Neighbouring rounds share the host's state; pooled percentiles let the loudest minutes decide. The goals use these.\n\n")
		b.WriteString("| mode | tool | rounds | ratio median | ratio p99 | ratio p99.9 |\n|---|---|---:|---:|---:|---:|\n")
		for _, mode := range []string{"block", ModeBlockDefault, "busy"} {
			sp := r.sockperfFor(mode)
			for _, tool := range []string{"rig user", ToolClosedLoop, ToolNoStamps, "rig sw"} {
				row := r.rtt(mode, tool)
				if row == nil || sp == nil {
					continue
				}
				m := paired(row.PerRound, sp.PerRound, p50)
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", mode, tool, m.N, m,
					paired(row.PerRound, sp.PerRound, p99), paired(row.PerRound, sp.PerRound, p999))
			}
		}
		r.stampCost(&b)
	}
	if len(r.Threads) > 0 {
		b.WriteString("\n### Measuring threads\n\nHow much of its rounds each tool's measuring thread ran and how often it lost the CPU (getrusage): for rig the sender's pacing thread and the responder's loop over each round, from the sample files; for sockperf wait4's figures for the whole process over its whole life (start-up and warm-up sleep included, so its share on CPU reads low). *preempted* = involuntary context switches: another task took the CPU (for rig also the Go runtime's own threads: a goroutine locked to its thread is handed back by another thread after each forced preemption); *blocked* = voluntary ones (waits).\n\n")
		b.WriteString("| mode | tool | side | rounds | on CPU | preempted /s | blocked /s |\n|---|---|---|---:|---:|---:|---:|\n")
		for _, t := range r.Threads {
			u := t.Usage
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %.1f %% | %.0f | %.0f |\n", t.Mode, t.Tool, t.Side, t.Rounds,
				100*u.OnCPU(), u.PerSecond(u.Involuntary), u.PerSecond(u.Voluntary))
		}
	}
	if cycRow := r.pacingRow(PacingCyclictest); cycRow != nil {
		cyc := cycRow.Stats
		b.WriteString("\n## Pacing on the sender CPU (µs)\n\n")
		fmt.Fprintf(&b, "rig lateness = tx_user − due of the 1 ms `block, rig default` rounds above (sleep until 50 µs before due, then spin); cyclictest `-i 1000 -t 1 -a %d --laptop`, SCHED_OTHER, same duration, in the same rounds (µs resolution; an overflow rank reports its max). ", c.SenderCPU)
		b.WriteString("cyclictest skips the periods a late wake-up missed and records one sample per stall; rig's absolute schedule sends every overdue request at once, each with its own lateness. *wake-ups* keeps the requests whose due time was still ahead when the previous one left (the sender had to wait for them): cyclictest's rule, and the row the ratios and the goal use.\n\n")
		b.WriteString("| tool | n | median | p99 | p99.9 | max | ratio median | ratio p99.9 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, tool := range []string{PacingRigAll, PacingRigWake} {
			if row := r.pacingRow(tool); row != nil {
				s := row.Stats
				rm, r999 := "", ""
				if tool == PacingRigWake {
					rm, r999 = ratio(s.P50, cyc.P50), ratio(s.P999, cyc.P999)
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", tool, s.N, us(s.P50), us(s.P99), us(s.P999), us(s.Max), rm, r999)
			}
		}
		fmt.Fprintf(&b, "| cyclictest | %d | %s | %s | %s | %s | | |\n", cyc.N, us(cyc.P50), us(cyc.P99), us(cyc.P999), us(cyc.Max))
		if wake := r.pacingRow(PacingRigWake); wake != nil {
			cr := cycRow.PerRound
			m := paired(wake.PerRound, cr, p50)
			fmt.Fprintf(&b, "\nPaired by round (rig's wake-ups in a round against cyclictest in the same round): %d rounds, ratio median %s, p99 %s, p99.9 %s.\n",
				m.N, m, paired(wake.PerRound, cr, p99), paired(wake.PerRound, cr, p999))
		}
	}
	if rt := r.Rate; rt != nil {
		b.WriteString("\n## Rate\n\n")
		fmt.Fprintf(&b, "rig at %v interval (%.0f requests/s) for %v, `--poll %s` on both ends; sockperf `--mps=max --nonblocked` (both ends) for %v for reference.\n\n",
			rt.Interval, rt.OfferedRate(), rt.Duration, rt.Poll, c.MaxRateTime)
		b.WriteString("| tool | sent | received | lost | duplicated | send errors | TX stamps paired | lateness median | lateness p99.9 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| rig | %d | %d | %d | %d | %d | %.3f %% | %s | %s |\n", rt.Sent, rt.Received, rt.Lost, rt.Duplicated,
			rt.SendErrors, rt.TxPairedPct(), us(rt.Lateness.P50), us(rt.Lateness.P999))
		fmt.Fprintf(&b, "\nsockperf max ping-pong rate: %.0f round trips/s (RTT median %s µs, p99.9 %s µs)\n",
			rt.SockperfRate, us(rt.SockperfRTT.P50), us(rt.SockperfRTT.P999))
	}
	if len(r.Analysis) > 0 {
		b.WriteString("\n## Analysis: `rig report` on synthetic runs\n\n")
		b.WriteString("Rounds of ≤ 1 M requests over two arms, sender + responder files, software stamps; wall and CPU time of `rig report DIR` (page cache warm from writing), peak RSS = the child's ru_maxrss.\n\n")
		b.WriteString("| samples | rounds | files MB | wall | CPU | ns/sample | peak RSS MB |\n|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, a := range r.Analysis {
			fmt.Fprintf(&b, "| %d | %d | %d | %v | %v | %.0f | %d |\n", a.Samples, a.Rounds, a.Bytes>>20,
				a.Wall.Round(time.Millisecond), a.CPU.Round(time.Millisecond), a.NSPerSample(), a.PeakRSSKB>>10)
		}
	}
	if g := r.Goals(); len(g) > 0 {
		b.WriteString("\n## Goals\n\nThe goals rig is held to against its peers (docs/bench.md#goals). Ratios are medians of the per-round ratios with their distribution-free 95 % confidence interval in brackets (order statistics of the rounds; with 8 rounds it spans the smallest to the largest). A verdict whose interval includes 1.00 is within noise: the rounds do not tell which tool is faster.\n\n| goal | measured | |\n|---|---|---|\n")
		for _, x := range g {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", x.Goal, x.Measured, verdict(x))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// stampCost writes what the kernel's stamps add to rig's round trip: the
// closed-loop rows with and without them, compared round by round.
func (r *Results) stampCost(b *strings.Builder) {
	head := false
	for _, mode := range []string{"block", "busy"} {
		on, off := r.rtt(mode, ToolClosedLoop), r.rtt(mode, ToolNoStamps)
		if on == nil || off == nil || off.Stats.N == 0 {
			continue
		}
		if !head {
			b.WriteString("\n### What the kernel's stamps cost\n\nrig's closed-loop user RTT (rx_user − tx_user, CLOCK_REALTIME read in user space, µs; medians over the pooled samples, n = their count) with software stamps on both ends (four per round trip: TX and RX on each side) against the same with `--timestamps off`, compared round by round (ratio with/without; median of the rounds, smallest–largest in brackets). sockperf takes no kernel stamps, so this is the part of a gap to sockperf that is the measurement itself.\n\n")
			b.WriteString("| mode | rounds | median with | median without | ratio median | ratio p99 | ratio p99.9 | n with | n without |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			head = true
		}
		m := paired(on.PerRound, off.PerRound, p50)
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %d | %d |\n", mode, m.N, us(on.Stats.P50), us(off.Stats.P50), m,
			paired(on.PerRound, off.PerRound, p99), paired(on.PerRound, off.PerRound, p999), on.Stats.N, off.Stats.N)
	}
}

// sockperfFor is the sockperf row a mode is compared with: its own, or for
// rig's default block sender (no sockperf twin) the block one.
func (r *Results) sockperfFor(mode string) *RTTRow {
	if mode == ModeBlockDefault {
		mode = "block"
	}
	return r.rtt(mode, "sockperf")
}

func (r *Results) rtt(mode, tool string) *RTTRow {
	for i := range r.RTT {
		if r.RTT[i].Mode == mode && r.RTT[i].Tool == tool {
			return &r.RTT[i]
		}
	}
	return nil
}

// Goal is one goal rig is held to against its peers, checked against the results.
type Goal struct {
	Goal     string
	Measured string
	Met      bool
	// Resolved: every ratio the verdict rests on has a 95 % confidence
	// interval wholly on one side of 1.00 (always true for goals that are
	// counts, not ratios).
	Resolved bool
}

// Goals checks the goals the results cover.
func (r *Results) Goals() []Goal {
	var g []Goal
	for _, mode := range []string{"block", "busy"} {
		rig, sp := r.rtt(mode, ToolClosedLoop), r.rtt(mode, "sockperf")
		if rig == nil || sp == nil || sp.Stats.N == 0 || rig.Stats.N == 0 {
			continue
		}
		m, t := float64(rig.Stats.P50)/float64(sp.Stats.P50), float64(rig.Stats.P999)/float64(sp.Stats.P999)
		pm, pt := paired(rig.PerRound, sp.PerRound, p50), paired(rig.PerRound, sp.PerRound, p999)
		measured := fmt.Sprintf("%.2f %s, %.2f %s (pooled %.2f, %.2f)", pm.Median, pm.CI(), pt.Median, pt.CI(), m, t)
		if off := r.rtt(mode, ToolNoStamps); off != nil && off.Stats.N > 0 {
			om, ot := paired(off.PerRound, sp.PerRound, p50), paired(off.PerRound, sp.PerRound, p999)
			measured += fmt.Sprintf("; without kernel stamps %.2f, %.2f", om.Median, ot.Median)
		}
		g = append(g, Goal{Goal: fmt.Sprintf("%s: rig/sockperf ≤ 1.00 (median, p99.9; closed loop, paired by round)", mode),
			Measured: measured, Met: pm.N > 0 && pm.Median <= 1 && pt.Median <= 1, Resolved: pm.Resolved() && pt.Resolved()})
	}
	if rig, cyc := r.pacingRow(PacingRigWake), r.pacingRow(PacingCyclictest); rig != nil && cyc != nil && rig.Stats.N > 0 && cyc.Stats.N > 0 {
		pt := paired(rig.PerRound, cyc.PerRound, p999)
		g = append(g, Goal{Goal: "rig lateness p99.9 ≤ cyclictest p99.9 (wake-ups, cyclictest's rule; paired by round)",
			Measured: fmt.Sprintf("ratio %.2f %s (pooled %s µs vs %s µs)", pt.Median, pt.CI(), us(rig.Stats.P999), us(cyc.Stats.P999)), Met: pt.N > 0 && pt.Median <= 1, Resolved: pt.Resolved()})
	}
	if rt := r.Rate; rt != nil {
		g = append(g, Goal{Goal: fmt.Sprintf("%.0f req/s: 0 loss, ≥ 99.9 %% TX stamps paired", rt.OfferedRate()),
			Measured: fmt.Sprintf("lost %d of %d, duplicated %d, %.3f %% paired", rt.Lost, rt.Sent, rt.Duplicated, rt.TxPairedPct()),
			Met:      rt.Lost == 0 && rt.Sent > 0 && rt.TxPairedPct() >= 99.9, Resolved: true})
	}
	if len(r.Analysis) >= 2 {
		first, last := r.Analysis[0], r.Analysis[len(r.Analysis)-1]
		// Linear: ns/sample of the largest run within 2× of the smallest's.
		k := last.NSPerSample() / first.NSPerSample()
		g = append(g, Goal{Goal: "analysis time linear in samples (ns/sample of the largest run ≤ 2 × the smallest's)",
			Measured: fmt.Sprintf("%.0f → %.0f ns/sample (×%.2f)", first.NSPerSample(), last.NSPerSample(), k), Met: k <= 2, Resolved: true})
	}
	return g
}

// CI formats the 95 % confidence interval of the median ratio:
// "[0.92–1.20]", with "…" for an open side.
func (p Paired) CI() string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "…"
		}
		return fmt.Sprintf("%.2f", v)
	}
	return "[" + f(p.CILow) + "–" + f(p.CIHigh) + "]"
}

// String formats a paired ratio: "1.05 (0.92–1.20)".
func (p Paired) String() string {
	if p.N == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", p.Median, p.Min, p.Max)
}
