package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/samples"
)

// RunSummary heads report.html and report.md: what was compared, one
// verdict per arm on the headline metric, and the clock fallbacks (the
// run's other problems are Report.Problems).
type RunSummary struct {
	// TimestampsRequested is the manifest's timestamp mode (hardware,
	// software, auto); "" unknown.
	TimestampsRequested string       `json:"timestamps_requested"`
	Hosts               []HostFacts  `json:"hosts"`
	Arms                []ArmFacts   `json:"arms"`
	Verdicts            []ArmVerdict `json:"verdicts"`
	// ClockFallbacks are the software clocks' notes of the sample headers
	// (hardware stamps requested there and absent) with the arms and
	// metrics they touch, and a headline metric on software stamps when
	// hardware was asked for.
	ClockFallbacks []string `json:"clock_fallbacks"`
}

// ArmFacts is what one arm ran with, from its sample headers.
type ArmFacts struct {
	Name         string `json:"name"`
	Skipped      string `json:"skipped,omitempty"`
	RoundsUsed   int    `json:"rounds_used"`
	RoundsOnDisk int    `json:"rounds_on_disk"`
	// Roles is where each program ran and how (sender, responder,
	// capture), from every readable round's header; a value that changed
	// between rounds lists each, "a | b".
	Roles map[string]RoleFacts `json:"roles"`
	// Source and Clock of the headline metric, and its sample count over
	// the rounds used; "" when it was not computed.
	Source string `json:"source"`
	Clock  string `json:"clock"`
	N      int    `json:"n"`
}

// RoleFacts is one program of an arm ("" when its headers do not say).
type RoleFacts struct {
	Host           string `json:"host,omitempty"`
	Iface          string `json:"iface,omitempty"`
	CPU            string `json:"cpu,omitempty"` // "3"; "not pinned"
	Poll           string `json:"poll,omitempty"`
	Sched          string `json:"sched,omitempty"`
	HardwareStamps string `json:"hardware_stamps,omitempty"`
	Stack          string `json:"stack,omitempty"` // the responder's socket stack
}

// ArmVerdict is one arm in one sentence.
type ArmVerdict struct {
	Arm    string `json:"arm"`
	Ref    string `json:"ref"` // the baseline compared against; "" when not compared
	Metric string `json:"metric"`
	// Verdict is "baseline", "skipped", "not computed", "not compared",
	// or the strongest verdict among the arm's statistics (real
	// difference, indicative only, within noise, undersampled, different
	// clocks, no data, in that order).
	Verdict  string `json:"verdict"`
	Sentence string `json:"sentence"`
}

// Summary verdicts that are not comparison verdicts.
const (
	SummaryBaseline    = "baseline"
	SummarySkipped     = "skipped"
	SummaryNotComputed = "not computed"
	SummaryNotCompared = "not compared"
)

// verdictRank orders verdicts from the strongest claim.
var verdictRank = []string{VerdictReal, VerdictIndicative, VerdictNoise, VerdictUndersampled, VerdictClocks, VerdictNoData}

// armFacts accumulates an arm's role facts over its rounds.
type armFacts struct {
	seen map[samples.Role]map[string][]string // role → field → distinct values in round order
}

func (f *armFacts) add(j *samples.Joined) {
	if f.seen == nil {
		f.seen = map[samples.Role]map[string][]string{}
	}
	for role, h := range j.Headers {
		m := f.seen[role]
		if m == nil {
			m = map[string][]string{}
			f.seen[role] = m
		}
		put := func(k, v string) {
			if v != "" && !slices.Contains(m[k], v) {
				m[k] = append(m[k], v)
			}
		}
		put("host", h.Host)
		put("iface", h.Iface)
		put("cpu", cpuSetting(h.Settings["cpu"]))
		put("poll", setting(h.Settings["poll"]))
		put("sched", setting(h.Settings["sched"]))
		put("hardware_stamps", setting(h.Settings["hardware_stamps"]))
		put("stack", setting(h.Settings["stack"]))
	}
}

func (f *armFacts) roles() map[string]RoleFacts {
	out := map[string]RoleFacts{}
	for role, m := range f.seen {
		v := func(k string) string { return strings.Join(m[k], " | ") }
		out[string(role)] = RoleFacts{Host: v("host"), Iface: v("iface"), CPU: v("cpu"), Poll: v("poll"), Sched: v("sched"), HardwareStamps: v("hardware_stamps"), Stack: v("stack")}
	}
	return out
}

// setting renders a header setting; "" when absent.
func setting(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// cpuSetting renders the "cpu" setting: a CPU number, or −1 for a thread
// left to the scheduler.
func cpuSetting(v any) string {
	f, ok := v.(float64) // JSON numbers
	switch {
	case !ok:
		return setting(v)
	case f < 0:
		return "not pinned"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// buildSummary fills r.Summary once the arms are analysed and compared.
func (r *Report) buildSummary(in *Input, facts map[string]*armFacts) {
	s := RunSummary{TimestampsRequested: in.Timestamps, Hosts: append([]HostFacts{}, in.Hosts...), Arms: []ArmFacts{}, ClockFallbacks: []string{}}
	for _, a := range r.Arms {
		af := ArmFacts{Name: a.Name, Skipped: a.Skipped, RoundsUsed: len(a.Rounds), RoundsOnDisk: len(a.Accounting), Roles: map[string]RoleFacts{}}
		if f := facts[a.Name]; f != nil {
			af.Roles = f.roles()
		}
		if mr := a.Metrics[r.Headline]; mr != nil {
			af.Source, af.Clock, af.N = mr.Source, mr.Clock, mr.Summary.N
		}
		s.Arms = append(s.Arms, af)
	}
	s.ClockFallbacks = r.clockFallbacks(in.Timestamps)
	r.Summary = s
	r.Summary.Verdicts = r.verdicts(r.Headline)
}

// clockFallbacks groups the clock notes by text: each note once, with the
// arms and metrics (and their sources) it touches.
func (r *Report) clockFallbacks(requested string) []string {
	out := []string{}
	var notes []string
	where := map[string][]string{}
	for _, a := range r.Arms {
		var ms []string
		byNote := map[string][]string{}
		for _, m := range MetricNames {
			mr := a.Metrics[m]
			if mr == nil || mr.fallback == "" {
				continue
			}
			n := strings.TrimSuffix(mr.fallback, ".")
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
			if !slices.Contains(ms, n) {
				ms = append(ms, n)
			}
			byNote[n] = append(byNote[n], fmt.Sprintf("%s (%s)", m, mr.Source))
		}
		for _, n := range ms {
			where[n] = append(where[n], fmt.Sprintf("arm %s: %s", a.Name, strings.Join(byNote[n], ", ")))
		}
	}
	for _, n := range notes {
		out = append(out, fmt.Sprintf("%s — %s.", capitalize(n), strings.Join(where[n], "; ")))
	}
	if requested == "hardware" {
		for _, a := range r.Arms {
			if mr := a.Metrics[r.Headline]; mr != nil && !strings.HasSuffix(mr.Source, " hw") {
				out = append(out, fmt.Sprintf("Hardware timestamps were asked for (timestamps: hardware), but arm %s's %s uses %s stamps (%s).", a.Name, r.Headline, mr.Source, mr.Clock))
			}
		}
	}
	return out
}

// verdicts is one sentence per arm on metric m: the baseline's values, and
// each other arm against it.
func (r *Report) verdicts(m string) []ArmVerdict {
	out := []ArmVerdict{}
	order := slices.Clone(r.Arms)
	// The baseline first: the others are read against it.
	slices.SortStableFunc(order, func(a, b *ArmReport) int {
		return boolInt(b.Name == r.Baseline) - boolInt(a.Name == r.Baseline)
	})
	for _, a := range order {
		v := ArmVerdict{Arm: a.Name, Metric: m}
		mr := a.Metrics[m]
		switch {
		case a.Skipped != "":
			v.Verdict, v.Sentence = SummarySkipped, fmt.Sprintf("%s: skipped — %s.", a.Name, strings.TrimSuffix(a.Skipped, "."))
		case mr == nil:
			why := r.notComputed[a.Name+"/"+m]
			if why == "" {
				why = "no round was analysed"
			}
			v.Verdict, v.Sentence = SummaryNotComputed, fmt.Sprintf("%s: %s not computed — %s.", a.Name, m, why)
		case a.Name == r.Baseline:
			v.Verdict, v.Sentence = SummaryBaseline, fmt.Sprintf("%s (baseline): %s %s (%s).", a.Name, m, valueList(mr), r.provenance(mr, nil))
		default:
			var cs []Comparison
			for _, c := range r.Comparisons {
				if c.Metric == m && c.Arm == a.Name {
					cs = append(cs, c)
				}
			}
			if len(cs) == 0 {
				why := "no baseline arm"
				if r.Baseline != "" {
					why = fmt.Sprintf("the baseline %s has no %s", r.Baseline, m)
				}
				v.Verdict, v.Sentence = SummaryNotCompared, fmt.Sprintf("%s: %s %s (%s) — not compared: %s.", a.Name, m, valueList(mr), r.provenance(mr, nil), why)
				break
			}
			v.Ref = r.Baseline
			v.Verdict, v.Sentence = r.compareSentence(a.Name, m, mr, cs)
		}
		out = append(out, v)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// valueList is "median 6.10 µs, p99 …, p99.9 … †, worst …" (across-round
// medians; † undersampled).
func valueList(mr *MetricReport) string {
	var parts []string
	for _, st := range CompareStats {
		sp := mr.Summary.Stat(st)
		if sp == nil {
			continue
		}
		p := fmt.Sprintf("%s %s µs", st, FormatUS(sp.MedianNS))
		if q := statQ[st]; q != "" && contains(mr.Summary.Undersampled, q) {
			p += " †"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no value"
	}
	return strings.Join(parts, ", ")
}

// statQ maps a compared statistic to its percentile.
var statQ = map[string]string{"median": "50", "p99": "99", "p99.9": "99.9"}

// provenance is the clock, sample count and rule of the numbers of mr
// (and of ref when compared).
func (r *Report) provenance(mr, ref *MetricReport) string {
	n := strconv.Itoa(mr.Summary.N)
	rounds := roundsText(mr.Summary.Rounds, -1)
	if ref != nil {
		n += " vs " + strconv.Itoa(ref.Summary.N)
		rounds = roundsText(mr.Summary.Rounds, ref.Summary.Rounds)
	}
	s := fmt.Sprintf("%s, %s; medians across %s of %s samples after warm-up W=%d", mr.Source, mr.Clock, rounds, n, r.Rules.Warmup)
	if ref == nil && strings.Contains(valueList(mr), "†") {
		s += "; † undersampled"
	}
	return s
}

// roundsText is "3 rounds", "5 rounds a side", "3 and 5 rounds" (s < 0:
// one arm).
func roundsText(r, s int) string {
	switch {
	case s < 0 && r == 1:
		return "1 round"
	case s < 0:
		return strconv.Itoa(r) + " rounds"
	case r == s && r == 1:
		return "1 round a side"
	case r == s:
		return strconv.Itoa(r) + " rounds a side"
	}
	return fmt.Sprintf("%d and %d rounds", r, s)
}

// compareSentence says how arm compares with the baseline on metric m:
// the statistics grouped by what the verdict rule concluded.
func (r *Report) compareSentence(arm, m string, mr *MetricReport, cs []Comparison) (string, string) {
	strongest := VerdictNoData
	for _, c := range cs {
		if slices.Index(verdictRank, c.Verdict) < slices.Index(verdictRank, strongest) {
			strongest = c.Verdict
		}
	}
	var ref *MetricReport
	if b := r.Arm(r.Baseline); b != nil {
		ref = b.Metrics[m]
	}
	if strongest == VerdictClocks && ref != nil {
		return strongest, fmt.Sprintf("%s: %s not comparable with %s — different clocks (%s on %s, %s on %s): %s.",
			arm, m, r.Baseline, mr.Source, mr.Clock, ref.Source, ref.Clock, valueList(mr))
	}
	var phrases []string
	groups := map[string][]string{}
	for i, c := range cs {
		ph := verdictPhrase(&c)
		if _, ok := groups[ph]; !ok {
			phrases = append(phrases, ph)
		}
		// The first statistic goes first (its group is the first) and
		// names the baseline.
		groups[ph] = append(groups[ph], c.Stat+" "+spreadVs(&c, i == 0, r.Baseline))
	}
	var parts []string
	for _, ph := range phrases {
		parts = append(parts, strings.Join(groups[ph], ", ")+" — "+ph)
	}
	s := fmt.Sprintf("%s: %s %s (%s)", arm, m, strings.Join(parts, "; "), r.provenance(mr, ref))
	for _, c := range cs {
		if c.Frequency != "" { // the same for every statistic of the arm
			s += "; " + c.Frequency
			break
		}
	}
	return strongest, s + "."
}

// spreadVs is "6.10 µs vs 9.80 µs on base (−37.8 %)": the across-round
// medians; "on base" only the first time.
func spreadVs(c *Comparison, first bool, base string) string {
	val := func(s *Spread) string {
		if s == nil {
			return "—"
		}
		return FormatUS(s.MedianNS) + " µs"
	}
	s := val(c.This) + " vs " + val(c.RefValue)
	if first {
		s += " on " + base
	}
	if c.Ratio != nil {
		s += fmt.Sprintf(" (%+.1f %%)", 100*(*c.Ratio-1))
	}
	return s
}

// verdictPhrase is the verdict of one comparison with its reason.
func verdictPhrase(c *Comparison) string {
	rounds := "?"
	if c.This != nil && c.RefValue != nil {
		rounds = roundsText(c.This.Rounds, c.RefValue.Rounds)
	}
	switch c.Verdict {
	case VerdictReal:
		if c.Stat == "worst" {
			return "a real difference (ranges apart, " + rounds + ")"
		}
		return "a real difference (ranges and 95 % intervals apart, " + rounds + ")"
	case VerdictNoise:
		switch {
		case c.RangesOverlap != nil && *c.RangesOverlap:
			return "within noise (ranges overlap)"
		case c.CIsOverlap != nil && *c.CIsOverlap:
			return "within noise (95 % intervals overlap)"
		}
		return "within noise"
	case VerdictIndicative:
		return fmt.Sprintf("indicative only (apart, but identical arms look this different %s of the time with %s)", rateCell(c.FalsePositive), rounds)
	case VerdictUndersampled:
		return "undersampled: no claim"
	}
	return c.Verdict
}

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
		Head:    []string{"arm", "rounds used", "responder CPU", "responder poll, sched", "sender CPU", m + " source", "clock", "n"}}
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
		row := []string{a.Name, used, orDash(rsp.CPU), orDash(strings.Trim(rsp.Poll+", "+rsp.Sched, ", ")), orDash(snd.CPU), src, orDash(a.Clock), n}
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
