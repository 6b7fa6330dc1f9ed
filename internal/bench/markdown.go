package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
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

// verdict is a goal's decision as the table shows it, with the rounds it
// rests on and, undecided, the rounds it would take.
func verdict(g Goal) string {
	v := g.Decision.String()
	switch g.Decision {
	case NotMet:
		v = "**not met**"
	case Undecided:
		v = "*undecided*"
	}
	if g.Decision == Undecided && g.Rounds == 0 && g.ToDecide != "" {
		v += " (deciding takes " + g.ToDecide + ")"
	}
	if g.Rounds > 0 {
		v += fmt.Sprintf(" (%d rounds", g.Rounds)
		if g.Decision == Undecided && g.ToDecide != "" {
			v += "; deciding takes " + g.ToDecide + " at this spread"
		}
		v += ")"
	}
	return v
}

// Markdown writes the results as one Markdown document: environment,
// one table per part, then the goals (docs/bench.md#goals) with their verdicts.
func (r *Results) Markdown(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	e := r.Env
	fmt.Fprintf(&b, "# rig vs sockperf / cyclictest\n\n")
	fmt.Fprintf(&b, "- date: %s\n- commit: %s\n- %s; kernel %s; %d CPUs; sockperf %s; cyclictest %s\n",
		e.Date.Format(time.RFC3339), e.Commit, e.Rig, e.Kernel, e.CPUs, orNA(e.Sockperf), orNA(e.Cyclictest))
	fmt.Fprintf(&b, "- load average (1/5/15 min): %s at start, %s at end\n", e.LoadBefore, e.LoadAfter)
	lab := c.has(PartRTT) || c.has(PartRate) || c.has(PartCost)
	if lab {
		fmt.Fprintf(&b, "- emulated lab (veth + bridge, software timestamps); sender CPU %d, responder CPU %d for both tools (whole process under taskset); payload %d B; SCHED_OTHER\n",
			c.SenderCPU, c.ResponderCPU, c.Size)
	}
	if r.RTTRounds > 0 {
		fmt.Fprintf(&b, "- %d interleaved rounds (rig, rig without kernel stamps and sockperf take turns going first, so a drift of the host favours none; rig without kernel stamps in the first %d only) of %v per tool and mode%s; rig drops its first %v of each round, sockperf its own warm-up; percentiles are nearest-rank over the pooled raw samples\n",
			r.RTTRounds, min(r.RTTRounds, NoStampRounds), c.RoundTime, r.roundsNote(), c.Warmup)
	}
	if r.nativeRan() {
		b.WriteString("- in block and busy, rounds of the native engine on both ends (`rig send --engine native` against `rig respond --engine native`, the same `--poll`), with kernel stamps and, in the rounds rig runs without them, with `--timestamps off`, take their turn in the same rotation: the engines are compared round by round, each with sockperf's round and with the Go engine's round of the same number\n")
	}
	if r.ExtraRounds > 0 {
		tools := "rig and sockperf"
		if r.nativeRan() {
			tools = "rig, rig native and sockperf"
		}
		off := "no rounds without kernel stamps"
		if n := r.nativeOffRounds(); n > min(r.RTTRounds, NoStampRounds) {
			off = fmt.Sprintf("and rig native without kernel stamps while its goals were undecided: %s of it in all", plural(n, "round"))
		}
		fmt.Fprintf(&b, "- then %s added by `--until-decided` (at most %d rounds in all), each of the modes whose goals were still undecided: %s only (%s)\n",
			plural(r.ExtraRounds, "round"), c.MaxRounds, tools, off)
	}
	if lab {
		fmt.Fprintf(&b, "- start-up like sockperf's: its server runs alone while its client's warm-up stage sleeps (~2 s), so rig's responder runs alone %v before rig's sender starts; a busy responder spinning alone pushes the host's other wake-ups to the idle CPU, and there they stay while both CPUs are busy\n",
			c.Lead)
	}
	if r.Elapsed > 0 {
		fmt.Fprintf(&b, "- bench wall time: %v\n", r.Elapsed.Round(time.Second))
	}
	if len(r.RTT) > 0 {
		tools := []string{"rig user", ToolClosedLoop, ToolNative, ToolNoStamps, ToolNativeNoStamps, "rig sw"} // rig's rows, in order
		b.WriteString("\n## RTT at 1 request/ms (full round trip, µs)\n\n")
		b.WriteString("Multicast request, unicast reply. rig user = rx_user − tx_user (what sockperf measures: user space to user space) of every request; rig user, closed loop = the same for the requests sent after the previous reply arrived — sockperf's ping-pong sends only then, so a stall gives it one sample while rig's schedule (an open loop) records every request the stall held (checked: a 300 ms SIGSTOP of sockperf's server gave one 302 ms sample and a 302 ms gap in its sends); the goals use this row; rig user, closed loop, no kernel stamps = the same from rounds run with `--timestamps off` on both rig ends (sockperf takes no kernel stamps either): what is left of a gap once the kernel's stamping is out of the path; rig sw = kernel software stamps rx_sw − tx_sw (without the sender's own send and wake-up costs). block: `rig respond --poll block` + `rig send --poll block --spin 1ms` vs blocking `sockperf server` / `ping-pong` (sockperf's blocking client busy-waits between sends and blocks only for the reply; rig's sender does the same when its spin window covers the interval); block, rig default: the same with rig's default `--spin 50µs` (the sender sleeps between requests, its CPU halts and the reply pays a wake-up of a halted vCPU; ratios against the block sockperf row, for information); busy: `--poll busy` on both rig ends vs `--nonblocked` on both sockperf ends.\n\n")
		b.WriteString("| mode | tool | n | lost | median | p99 | p99.9 | max | ratio median | ratio p99 | ratio p99.9 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, mode := range rttModes {
			sp := r.sockperfFor(mode)
			for _, tool := range append(tools, "sockperf") {
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
		if r.nativeRan() {
			b.WriteString("\nrig native, closed loop = rig user, closed loop of the rounds run by the native engine on both ends (`rig send --engine native` and `rig respond --engine native`: C loops no Go runtime interrupts, like with like against sockperf), everything else as in the rig rounds; rig native, closed loop, no kernel stamps = the same with `--timestamps off` on both native ends.\n")
		}
		b.WriteString("\n### Paired by round\n\nThe same figures compared round by round — rig's round against the sockperf round of the same number — then the median of the per-round ratios (smallest–largest in brackets). Neighbouring rounds share the host's state; pooled percentiles let the loudest minutes decide. The goals use these.\n\n")
		b.WriteString("| mode | tool | rounds | ratio median | ratio p99 | ratio p99.9 |\n|---|---|---:|---:|---:|---:|\n")
		for _, mode := range rttModes {
			sp := r.sockperfFor(mode)
			for _, tool := range tools {
				row := r.rtt(mode, tool)
				if row == nil || sp == nil {
					continue
				}
				m := paired(row.PerRound, sp.PerRound, p50)
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", mode, tool, m.N, m,
					paired(row.PerRound, sp.PerRound, p99), paired(row.PerRound, sp.PerRound, p999))
			}
		}
		r.engines(&b)
		r.stampCost(&b)
		r.recvTable(&b)
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
	r.costTables(&b)
	r.noiseTable(&b)
	if len(r.Analysis) > 0 {
		b.WriteString("\n## Analysis: `rig report` on synthetic runs\n\n")
		b.WriteString("Rounds of ≤ 1 M requests over two arms, sender + responder files, software stamps; wall and CPU time (user + system) of `rig report DIR` (page cache warm from writing), peak RSS = the child's ru_maxrss. Percentiles are exact (nearest rank on the sorted samples of each round). Reproduce this part alone with `rigbench --parts analysis --analysis-sizes 1M,10M,100M` (each run is written, reported on and removed before the next: 100 M samples take about 10 GB in the work directory).\n\n")
		b.WriteString("| samples | rounds | files MB | wall | CPU | ns/sample wall | ns/sample CPU | peak RSS MB |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, a := range r.Analysis {
			fmt.Fprintf(&b, "| %d | %d | %d | %v | %v | %.0f | %.0f | %d |\n", a.Samples, a.Rounds, a.Bytes>>20,
				a.Wall.Round(time.Millisecond), a.CPU.Round(time.Millisecond), a.NSPerSample(), a.CPUPerSample(), a.PeakRSSKB>>10)
		}
	}
	if g := r.Goals(); len(g) > 0 {
		fmt.Fprintf(&b, "\n## Goals\n\nThe goals rig is held to against its peers (docs/bench.md#goals). A ratio goal (rig / reference) is an equivalence bound: the ratio is the median of the per-round ratios, in brackets its distribution-free 95 %% confidence interval (order statistics of the rounds, analysis.CIRanks at 50 %%: with 8 rounds the smallest to the largest ratio, with 24 the 7th to the 18th); the goal is **met** when the interval's upper end is ≤ %.2f, **not met** when its lower end is > %.2f, and *undecided* otherwise, with the rounds it would take to decide if the per-round ratios kept the spread observed (the interval's ranks for n rounds read off the observed ratios as quantiles). Counts (loss, syscalls, wake-ups, allocations, memory) are compared as they are.\n\n| goal | measured | verdict |\n|---|---|---|\n",
			EquivalenceBound, EquivalenceBound)
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

// nativeOffRounds is the most rounds the native engine ran without kernel
// stamps in a mode.
func (r *Results) nativeOffRounds() int {
	n := 0
	for _, x := range r.RTT {
		if x.Tool == ToolNativeNoStamps {
			n = max(n, x.Rounds)
		}
	}
	return n
}

// nativeRan reports whether the RTT rounds ran the native engine.
func (r *Results) nativeRan() bool {
	return slices.ContainsFunc(r.RTT, func(x RTTRow) bool { return x.Tool == ToolNative })
}

// engines writes the responder engines compared round by round: the
// native engine's closed-loop rows against the Go engine's.
func (r *Results) engines(b *strings.Builder) {
	if !r.nativeRan() {
		return
	}
	b.WriteString("\n### Native and Go engines\n\nrig's closed-loop user RTT (µs; medians over the pooled samples, n = their count) with the native engine on both ends against the same with the Go engine on both ends, compared round by round (ratio native/Go; median of the rounds, smallest–largest in brackets): below 1.00 the native engine is faster. The goals judge it with the equivalence bound.\n\n")
	b.WriteString("| mode | rounds | median native | median Go | ratio median | ratio p99 | ratio p99.9 | n native | n Go |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range peerModes {
		nat, gor := r.rtt(mode, ToolNative), r.rtt(mode, ToolClosedLoop)
		if nat == nil || gor == nil {
			continue
		}
		m := paired(nat.PerRound, gor.PerRound, p50)
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %d | %d |\n", mode, m.N, us(nat.Stats.P50), us(gor.Stats.P50), m,
			paired(nat.PerRound, gor.PerRound, p99), paired(nat.PerRound, gor.PerRound, p999), nat.Stats.N, gor.Stats.N)
	}
}

// stampCost writes what the kernel's stamps add to rig's round trip: the
// closed-loop rows with and without them, per engine, compared round by
// round.
func (r *Results) stampCost(b *strings.Builder) {
	head := false
	for _, mode := range peerModes {
		for _, e := range []struct{ engine, on, off string }{{"go", ToolClosedLoop, ToolNoStamps}, {"native", ToolNative, ToolNativeNoStamps}} {
			on, off := r.rtt(mode, e.on), r.rtt(mode, e.off)
			if on == nil || off == nil || off.Stats.N == 0 {
				continue
			}
			if !head {
				b.WriteString("\n### What the kernel's stamps cost\n\nrig's closed-loop user RTT (rx_user − tx_user, CLOCK_REALTIME read in user space, µs; medians over the pooled samples, n = their count) with software stamps on both ends (four per round trip: TX and RX on each side) against the same engine with `--timestamps off`, compared round by round (ratio with/without; median of the rounds, smallest–largest in brackets). sockperf takes no kernel stamps, so this is the part of a gap to sockperf that is the measurement itself.\n\n")
				b.WriteString("| mode | engine | rounds | median with | median without | ratio median | ratio p99 | ratio p99.9 | n with | n without |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
				head = true
			}
			m := paired(on.PerRound, off.PerRound, p50)
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %d | %d |\n", mode, e.engine, m.N, us(on.Stats.P50), us(off.Stats.P50), m,
				paired(on.PerRound, off.PerRound, p99), paired(on.PerRound, off.PerRound, p999), on.Stats.N, off.Stats.N)
		}
	}
}

// recvTable writes rig's receive path per side: from the kernel's software
// RX stamp to the user-space read.
func (r *Results) recvTable(b *strings.Builder) {
	if len(r.Recv) == 0 {
		return
	}
	b.WriteString("\n### Kernel stamp to user space\n\nHow long rig's own rounds took from a datagram's kernel software RX stamp (taken as the packet enters the stack) to the user-space clock read right after recvmsg returned, µs, pooled over the rounds: on the sender the replies (rx_user − rx_sw: the softirq's wake-up of the thread in ppoll, the VM's scheduling of it, ppoll's return and a recvmsg), on the responder the requests (req_rx_user − req_rx_sw: its thread blocks in recvmsg itself). The difference between the user RTT and the software RTT above is the sender's side of this plus its send path.\n\n")
	b.WriteString("| mode | side | n | median | p99 | p99.9 |\n|---|---|---:|---:|---:|---:|\n")
	for _, x := range r.Recv {
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s |\n", x.Mode, x.Side, x.Stats.N, us(x.Stats.P50), us(x.Stats.P99), us(x.Stats.P999))
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
	Decision Decision
	// Rounds are the paired rounds a ratio goal rests on (0: a count);
	// ToDecide, when undecided, what deciding would take at the spread
	// observed (Paired.RoundsToDecide).
	Rounds   int
	ToDecide string
	mode     string // the RTT mode whose rounds add to it ("": none)
	// nativeOff: its rounds are the native engine's without kernel stamps
	// (ToolNativeNoStamps), which --until-decided adds only for it.
	nativeOff bool
}

// ratioGoal judges a paired ratio against EquivalenceBound.
func ratioGoal(goal, measured, mode string, p Paired) Goal {
	return Goal{Goal: goal, Measured: measured, Decision: p.Decide(EquivalenceBound), Rounds: p.N, ToDecide: p.toDecide(EquivalenceBound), mode: mode}
}

// countGoal is a goal on counts: met or not.
func countGoal(goal, measured string, met bool) Goal {
	d := NotMet
	if met {
		d = Met
	}
	return Goal{Goal: goal, Measured: measured, Decision: d}
}

// ratioFigs are the figures a ratio goal compares, paired by round.
var ratioFigs = []struct {
	name string
	fig  func(Summary) int64
}{{"median", p50}, {"p99.9", p999}}

// Goals checks the goals the results cover.
func (r *Results) Goals() []Goal {
	var g []Goal
	for _, mode := range peerModes {
		// A goal whose rows hold no samples yet is there all the same,
		// undecided: --until-decided adds rounds for it, not ends.
		rig, sp := r.rtt(mode, ToolClosedLoop), r.rtt(mode, "sockperf")
		if rig == nil || sp == nil {
			continue
		}
		off := r.rtt(mode, ToolNoStamps)
		for _, f := range ratioFigs {
			p := paired(rig.PerRound, sp.PerRound, f.fig)
			measured := fmt.Sprintf("%.2f %s (pooled %s)", p.Median, p.CI(), ratio(f.fig(rig.Stats), f.fig(sp.Stats)))
			if off != nil && off.Stats.N > 0 {
				o := paired(off.PerRound, sp.PerRound, f.fig)
				measured += fmt.Sprintf("; without kernel stamps %.2f %s", o.Median, o.CI())
			}
			g = append(g, ratioGoal(fmt.Sprintf("%s: rig/sockperf %s ≤ %.2f (closed-loop user RTT, paired by round)", mode, f.name, EquivalenceBound), measured, mode, p))
		}
		g = append(g, nativeGoals(mode, r.rtt(mode, ToolNative), r.rtt(mode, ToolNativeNoStamps), rig, sp)...)
	}
	if rig, cyc := r.pacingRow(PacingRigWake), r.pacingRow(PacingCyclictest); rig != nil && cyc != nil {
		pt := paired(rig.PerRound, cyc.PerRound, p999)
		g = append(g, ratioGoal(fmt.Sprintf("rig lateness p99.9 / cyclictest p99.9 ≤ %.2f (wake-ups, cyclictest's rule; paired by round)", EquivalenceBound),
			fmt.Sprintf("%.2f %s (pooled %s µs vs %s µs)", pt.Median, pt.CI(), us(rig.Stats.P999), us(cyc.Stats.P999)), ModeBlockDefault, pt))
	}
	if rt := r.Rate; rt != nil {
		g = append(g, countGoal(fmt.Sprintf("%.0f req/s: 0 loss, ≥ 99.9 %% TX stamps paired", rt.OfferedRate()),
			fmt.Sprintf("lost %d of %d, duplicated %d, %.3f %% paired", rt.Lost, rt.Sent, rt.Duplicated, rt.TxPairedPct()),
			rt.Lost == 0 && rt.Sent > 0 && rt.TxPairedPct() >= 99.9))
	}
	g = append(g, r.costGoals()...)
	if len(r.Analysis) >= 2 {
		first, last := r.Analysis[0], r.Analysis[len(r.Analysis)-1]
		k := last.CPUPerSample() / first.CPUPerSample()
		g = append(g, countGoal(fmt.Sprintf("rig report: CPU time per sample not rising with size (largest run ≤ %.2f × the smallest's)", maxAnalysisGrowth),
			fmt.Sprintf("%.0f → %.0f ns/sample CPU (×%.2f); wall %.0f → %.0f", first.CPUPerSample(), last.CPUPerSample(), k, first.NSPerSample(), last.NSPerSample()),
			k <= maxAnalysisGrowth))
	}
	if n := len(r.Analysis); n > 0 {
		last := r.Analysis[n-1]
		g = append(g, countGoal(fmt.Sprintf("rig report on %d samples: peak RSS ≤ %d MB", last.Samples, maxAnalysisRSSMB),
			fmt.Sprintf("%d MB", last.PeakRSSKB>>10), last.PeakRSSKB>>10 <= maxAnalysisRSSMB))
	}
	return g
}

// nativeGoals are the native engine's ratio goals in mode (none for a
// row it lacks): against sockperf, as rig's; against the Go engine (the
// engine decision); and without kernel stamps against sockperf.
func nativeGoals(mode string, nat, off, gor, sp *RTTRow) []Goal {
	var g []Goal
	for _, c := range []struct {
		name, what string
		row, ref   *RTTRow
		off        bool
	}{
		{"rig native/sockperf", "native sender and responder,", nat, sp, false},
		{"rig native/rig go", "the native engine against the Go engine on both ends in the same rounds: the engine decision,", nat, gor, false},
		{"rig native without kernel stamps/sockperf", "`--timestamps off` on both native ends: like with like, neither tool takes a kernel stamp;", off, sp, true},
	} {
		if c.row == nil {
			continue
		}
		for _, f := range ratioFigs {
			p := paired(c.row.PerRound, c.ref.PerRound, f.fig)
			x := ratioGoal(fmt.Sprintf("%s: %s %s ≤ %.2f (closed-loop user RTT, %s paired by round)", mode, c.name, f.name, EquivalenceBound, c.what),
				fmt.Sprintf("%.2f %s (pooled %s)", p.Median, p.CI(), ratio(f.fig(c.row.Stats), f.fig(c.ref.Stats))), mode, p)
			x.nativeOff = c.off
			g = append(g, x)
		}
	}
	return g
}

// The analysis goals: CPU time per sample of the largest run within 10 %
// of the smallest's (not rising with size), and at most 1 GB resident.
const (
	maxAnalysisGrowth = 1.10
	maxAnalysisRSSMB  = 1024
)

// roundsNote says how the planned rounds' count was set.
func (r *Results) roundsNote() string {
	c := r.Config
	if c.Budget <= 0 || len(r.RoundTimes) == 0 {
		return ""
	}
	var sum time.Duration
	for _, t := range r.RoundTimes {
		sum += t
	}
	return fmt.Sprintf(" (at least %d, and as many more as fit in a bench time of %v: a round took %v on average)",
		c.Rounds, c.Budget, (sum / time.Duration(len(r.RoundTimes))).Round(time.Second))
}

// costRow finds the cost row of a mode, tool and side.
func (r *Results) costRow(mode, tool, side string) *CostRow {
	for i := range r.Cost {
		if c := &r.Cost[i]; c.Mode == mode && c.Tool == tool && c.Side == side {
			return c
		}
	}
	return nil
}

// costTables writes the work per round trip.
func (r *Results) costTables(b *strings.Builder) {
	if len(r.Cost) == 0 {
		return
	}
	c := r.Config
	fmt.Fprintf(b, "\n## Work per round trip\n\nCounted in rounds of their own, never in a latency round (perf's counting is on the path): per mode and tool one %v round at 1 request/ms (rig's block rounds with `--spin 1ms`, as above), of which %v are counted once the sender has settled (rig: %v after its start; sockperf: %v after its client's start, past its warm-up). Syscalls: `perf stat --per-thread -e raw_syscalls:sys_enter` and `syscalls:sys_enter_*` of both processes, enabled and disabled through perf's control pipe; *round trips* = that side's sends in the window (sendmsg + sendto: one request or one reply per round trip). *TX-stamp reads* = recvmsg(MSG_ERRQUEUE), which only a tool taking kernel stamps makes (sockperf takes none); the goals compare the syscalls without them. *wake-ups* = voluntary context switches (a thread blocked and was woken), *preempted* = involuntary ones (`/proc/PID/task/TID/status`); *CPU* = time on a CPU (`schedstat`); *thread* = the measuring thread (the one that sends), *process* = all its threads. *allocations* = the Go process's heap allocations per round trip: runtime.MemStats.Mallocs (exact) over a whole round, from the sample file's footer, in two rounds of their own (not under perf) of %v and %v, difference over difference (a round makes a few at its start and end whatever its length, up to 7 more or fewer from one run to the next: the rounds differ by enough requests that this stays far below the goal's bound); the rows with GODEBUG give their counting round's count alone; sockperf is C++ (—). Syscall counts in busy loops and every preemption count depend on the host's load (a spinning poll makes a syscall per spin; other tasks preempt); the blocking rows' syscalls and wake-ups, and allocations, do not.\n\n",
		c.CostTime, c.CostWindow, costSettle, sockperfPreamble, scaleDur(c.CostTime, allocShort), scaleDur(c.CostTime, allocLong))
	b.WriteString("| mode | tool | side | round trips | syscalls / RT | TX-stamp reads / RT | without them / RT | thread syscalls / RT | wake-ups / RT (process, thread) | preempted / s (thread) | CPU µs / RT (process, thread) | allocations / RT |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Cost {
		alloc := "—"
		if a, ok := x.AllocsPerRT(); ok {
			alloc = fmt.Sprintf("%.4f (%d in %d requests, %d in %d)", a, *x.HeapAllocs, x.AllocRequests, *x.ShortAllocs, x.ShortRequests)
		} else if x.HeapAllocs != nil {
			alloc = fmt.Sprintf("%d in %d requests", *x.HeapAllocs, x.AllocRequests)
		}
		rts := strconv.FormatUint(x.RoundTrips, 10)
		if x.Uncounted > 0 {
			rts += fmt.Sprintf(" (%d of %d threads' syscalls not counted: started after perf attached)", x.Uncounted, x.Threads)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f, %.2f | %.0f | %.1f, %.1f | %s |\n", x.Mode, x.Tool, x.Side, rts,
			x.per(x.Syscalls), x.per(x.StampReads), x.per(x.Syscalls-x.StampReads), x.per(x.ThreadSyscalls),
			x.per(x.Voluntary), x.per(x.ThreadVoluntary), x.perSecond(x.ThreadInvoluntary),
			x.per(x.CPUNS)/1000, x.per(x.ThreadCPUNS)/1000, alloc)
	}
	b.WriteString("\nThe syscalls per round trip by name (process; the rest are other syscalls):\n\n| mode | tool | side | syscalls / RT |\n|---|---|---|---|\n")
	for _, x := range r.Cost {
		var parts []string
		var named uint64
		for _, e := range perfEvents {
			if n := x.BySyscall[e.name]; e.name != "" && n > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f", e.name, x.per(n)))
				named += n
			}
		}
		if x.Syscalls > named {
			parts = append(parts, fmt.Sprintf("other %.2f", x.per(x.Syscalls-named)))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", x.Mode, x.Tool, x.Side, strings.Join(parts, ", "))
	}
	b.WriteString("\nWhat takes the measuring threads off their work, per second of the window: futex (a Go process's threads handing the CPU around: a locked goroutine's P at each scheduler meeting, sysmon's wake-ups), tgkill (the Go runtime's preemption signal, sent by one of its threads to another), rt_sigreturn (a signal handled), all of the process, and the measuring thread's preemptions. rig native's sender and responder are the programs `rig send --engine native` and `rig respond --engine native` start (rig-send-native, rig-respond-native), one C thread each: no runtime sends them either call.\n\n| mode | tool | side | futex / s | tgkill / s | rt_sigreturn / s | preempted / s (thread) |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, x := range r.Cost {
		fmt.Fprintf(b, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f |\n", x.Mode, x.Tool, x.Side, x.perSecond(x.BySyscall["futex"]),
			x.perSecond(x.BySyscall["tgkill"]), x.perSecond(x.BySyscall["rt_sigreturn"]), x.perSecond(x.ThreadInvoluntary))
	}
}

// costGoals: per mode, rig's syscalls (without its TX-stamp reads) and
// wake-ups per round trip at most sockperf's on each side, its busy
// measuring threads preempted at most twice as often, and no allocation.
func (r *Results) costGoals() []Goal {
	var g []Goal
	sides := []string{"sender", "responder"}
	for _, mode := range peerModes {
		var rig, sp [2]*CostRow
		for i, side := range sides {
			rig[i], sp[i] = r.costRow(mode, CostRig, side), r.costRow(mode, CostSockperf, side)
		}
		if rig[0] == nil || rig[1] == nil || sp[0] == nil || sp[1] == nil {
			continue
		}
		cmp := func(goal string, fig func(*CostRow) float64, limit float64, unit string) Goal {
			var m []string
			met := true
			for i, side := range sides {
				a, b := fig(rig[i]), fig(sp[i])
				m = append(m, fmt.Sprintf("%s %.2f vs %.2f%s", side, a, b, unit))
				met = met && a <= limit*b
			}
			return countGoal(fmt.Sprintf("%s: %s", mode, goal), strings.Join(m, "; "), met)
		}
		g = append(g, cmp("syscalls per round trip without TX-stamp reads, rig ≤ sockperf (each side, process)",
			func(c *CostRow) float64 { return c.per(c.Syscalls - c.StampReads) }, 1, ""))
		g = append(g, cmp("wake-ups per round trip, rig ≤ sockperf (each side, process)",
			func(c *CostRow) float64 { return c.per(c.Voluntary) }, 1, ""))
		if mode == "busy" {
			g = append(g, cmp("measuring threads preempted per second, rig ≤ 2 × sockperf (each side)",
				func(c *CostRow) float64 { return c.perSecond(c.ThreadInvoluntary) }, 2, "/s"))
		}
		var m []string
		met := true
		for _, c := range rig {
			a, ok := c.AllocsPerRT()
			if !ok {
				met = false
				m = append(m, c.Side+" not counted")
				continue
			}
			m = append(m, fmt.Sprintf("%s %.4f (%d in %d requests, %d in %d)", c.Side, a, *c.HeapAllocs, c.AllocRequests, *c.ShortAllocs, c.ShortRequests))
			met = met && a < MaxAllocsPerRT
		}
		g = append(g, countGoal(fmt.Sprintf("%s: rig's probe processes allocate nothing per round trip (< %g heap allocations per round trip: the longer round makes no more than the shorter)", mode, MaxAllocsPerRT), strings.Join(m, "; "), met))
	}
	for _, mode := range peerModes {
		for _, side := range sides {
			nat, gor := r.costRow(mode, RigNative, side), r.costRow(mode, CostRig, side)
			if nat == nil {
				continue
			}
			futex, tgkill := nat.BySyscall["futex"], nat.BySyscall["tgkill"]
			m := fmt.Sprintf("%d futex, %d tgkill in the %v counted", futex, tgkill, nat.Window.Round(time.Millisecond))
			if gor != nil {
				m += fmt.Sprintf("; the Go %s's futex %.0f/s, tgkill %.0f/s", side, gor.perSecond(gor.BySyscall["futex"]), gor.perSecond(gor.BySyscall["tgkill"]))
			}
			g = append(g, countGoal(fmt.Sprintf("%s: the native %s's process makes no futex or tgkill call (no runtime hands its CPU around or preempts it)", mode, side), m, futex == 0 && tgkill == 0))
		}
	}
	return g
}

// plural is "1 round", "2 rounds".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// scaleDur is d × f.
func scaleDur(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }
