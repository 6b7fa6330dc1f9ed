package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/samples"
)

// summaryProblems are the lines under "Problems of this run": clock
// fallbacks, hosts whose environment is unknown, then Report.Problems; at
// most limit lines of the latter, more says how many were left for the
// Problems section.
func (r *Report) summaryProblems(limit int) (lines []string, more int) {
	lines = append(lines, r.Summary.ClockFallbacks...)
	for _, h := range r.Summary.Hosts {
		if h.EnvError != "" {
			lines = append(lines, fmt.Sprintf("Host %s: environment unknown (%s).", h.Name, h.EnvError))
		}
	}
	n := min(limit, len(r.Problems))
	for _, p := range r.Problems[:n] {
		lines = append(lines, capitalize(strings.TrimSuffix(p, "."))+".")
	}
	return lines, len(r.Problems) - n
}

// comparedTables are "what was compared": the arms (where each program
// ran, the headline's clock) and the hosts (from env/<host>.json).
func (r *Report) comparedTables() []table {
	s := &r.Summary
	m := r.Headline
	arms := table{Title: "Arms",
		Caption: fmt.Sprintf("From the sample headers of every readable round (a value that changed between rounds shows each, a | b). %s source: the one clock the metric's stamps come from; n: its samples after warm-up W=%d over the rounds used.", m, r.Rules.Warmup),
		Head:    []string{"arm", "rounds used", "responder CPU", "responder engine, poll, sched", "sender engine, poll, CPU", m + " source", "clock", "n"}}
	hw := s.TimestampsRequested != "" && s.TimestampsRequested != "software"
	if hw {
		arms.Head = append(arms.Head, "hardware stamps (sender; responder; capture)")
	}
	for _, a := range s.Arms {
		rsp, snd := a.Roles[string(samples.RoleResponder)], a.Roles[string(samples.RoleSender)]
		used := fmt.Sprintf("%d of %d", a.RoundsUsed, a.RoundsOnDisk)
		if a.Skipped != "" {
			used = "skipped: " + a.Skipped
		}
		src, n := orDash(a.Source), "—"
		if a.Source != "" {
			n = strconv.Itoa(a.N)
		}
		row := []string{a.Name, used, orDash(rsp.CPU), orDash(joinSet(rsp.Engine, rsp.Poll, rsp.Sched)), orDash(joinSet(snd.Engine, snd.Poll, snd.CPU)), src, orDash(a.Clock), n}
		if hw {
			var st []string
			for _, role := range roleOrder {
				st = append(st, orDash(a.Roles[role].HardwareStamps))
			}
			row = append(row, strings.Join(st, "; "))
		}
		arms.Rows = append(arms.Rows, row)
	}
	ts := s.TimestampsRequested
	if ts == "" {
		ts = "unknown (no manifest)"
	}
	hosts := table{Title: "Hosts",
		Caption: fmt.Sprintf("From manifest.json and env/<host>.json (taken before the first round). Timestamps requested: %s.", ts),
		Head:    []string{"host (roles, via)", "hostname, kernel", "CPU", "CPUs", "clocksource", "NIC"}}
	for _, h := range s.Hosts {
		name := fmt.Sprintf("%s (%s; %s)", h.Name, strings.Join(h.Roles, ", "), orDash(h.Via))
		if h.Node != "" {
			name = fmt.Sprintf("%s (%s; %s; node knobs through %s)", h.Name, strings.Join(h.Roles, ", "), h.Via, h.Node)
		}
		if h.EnvError != "" {
			hosts.Rows = append(hosts.Rows, []string{name, "environment unknown: " + h.EnvError, "—", "—", "—", "—"})
			continue
		}
		smt := "no SMT"
		if h.SMT {
			smt = "SMT"
		}
		cpus := fmt.Sprintf("online %s; isolated %s; nohz_full %s; %s", orDash(cpulist.Format(h.CPUsOnline)),
			orDash(cpulist.Format(h.CPUsIsolated)), orDash(cpulist.Format(h.NohzFull)), smt)
		var nics []string
		for _, n := range h.NICs {
			d := n.Iface + " " + orDash(n.Driver)
			if n.SpeedMbps > 0 {
				d += fmt.Sprintf(" %d Mb/s", n.SpeedMbps)
			}
			switch {
			case n.PHCIndex == nil:
			case *n.PHCIndex < 0:
				d += ", no PHC"
			default:
				d += fmt.Sprintf(", PHC /dev/ptp%d", *n.PHCIndex)
			}
			nics = append(nics, d)
		}
		hosts.Rows = append(hosts.Rows, []string{name, orDash(strings.Trim(h.Hostname+", "+h.Kernel, ", ")), orDash(h.CPUModel), cpus, orDash(h.Clocksource), orDash(strings.Join(nics, "; "))})
	}
	if len(s.Hosts) == 0 {
		hosts.Caption = "No hosts: the run has no manifest.json, or its manifest lists none. Timestamps requested: " + ts + "."
	}
	return []table{arms, hosts}
}

// joinSet joins the values a header gave, "a, b", leaving out the ones
// it did not.
func joinSet(v ...string) string {
	return strings.Join(slices.DeleteFunc(v, func(s string) bool { return s == "" }), ", ")
}

// verdictRule is the one-line reminder under the verdicts.
func (r *Report) verdictRule() string {
	return fmt.Sprintf("Values are medians across rounds of each round's exact nearest-rank statistic after warm-up W=%d, in µs; "+
		"a real difference needs the round ranges and (for percentiles) the 95 %% interval envelopes apart, and a false-positive rate for identical arms below %.0f %% (Rules; %s#verdicts). "+
		"The tables below give [min–max] across rounds.", r.Rules.Warmup, 100*MaxFalsePositive, RulesDoc)
}

// writeSummaryMD writes the summary as Markdown (report.md).
func writeSummaryMD(b *strings.Builder, r *Report) {
	b.WriteString("## Summary\n\n")
	for _, v := range r.Summary.Verdicts {
		fmt.Fprintf(b, "- **%s** — %s\n", v.Verdict, v.Sentence)
	}
	if len(r.Summary.Verdicts) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "%s\n\n", r.verdictRule())
	for _, t := range r.comparedTables() {
		fmt.Fprintf(b, "### %s\n\n", t.Title)
		t.mdBody(b)
	}
	b.WriteString("### Problems of this run\n\n")
	lines, more := r.summaryProblems(summaryProblemLines)
	if len(lines) == 0 {
		b.WriteString(noProblems + "\n\n")
		return
	}
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
	if more > 0 {
		fmt.Fprintf(b, "- … and %d more (Problems, below).\n", more)
	}
	b.WriteString("\n")
}

// summaryProblemLines is how many of Report.Problems the summary lists.
const summaryProblemLines = 10

const noProblems = "None: every round on disk was used and every file read; no clock fell back from what was requested."
