package analysis

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// cell is a table cell: median [min–max] in µs, or just the value for one
// round; "—" without data.
func cell(s *Spread) string {
	if s == nil {
		return "—"
	}
	if s.Rounds <= 1 || s.MinNS == s.MaxNS {
		return FormatUS(s.MedianNS)
	}
	return fmt.Sprintf("%s [%s–%s]", FormatUS(s.MedianNS), FormatUS(s.MinNS), FormatUS(s.MaxNS))
}

// ciCell prints the envelope of the rounds' 95 % intervals of percentile q.
func ciCell(s *Summary, q string) string {
	if e, ok := s.ciOf(q); ok {
		return bound(e.LowNS) + "–" + bound(e.HighNS)
	}
	return "—"
}

// bound is one side of a 95 % interval in µs: "open" when too few
// samples bound it.
func bound(p *int64) string {
	if p == nil {
		return "open"
	}
	return FormatUS(*p)
}

// Only returns a copy of r restricted to one metric (for --metric).
func (r *Report) Only(metric string) (*Report, error) {
	if !slices.Contains(MetricNames, metric) {
		return nil, fmt.Errorf("unknown metric %q (known: %s)", metric, strings.Join(MetricNames, ", "))
	}
	c := *r
	c.Arms = nil
	for _, a := range r.Arms {
		b := *a
		b.Metrics = map[string]*MetricReport{}
		if m, ok := a.Metrics[metric]; ok {
			b.Metrics[metric] = m
		}
		c.Arms = append(c.Arms, &b)
	}
	c.Comparisons = nil
	for _, x := range r.Comparisons {
		if x.Metric == metric {
			c.Comparisons = append(c.Comparisons, x)
		}
	}
	if c.Comparisons == nil {
		c.Comparisons = []Comparison{}
	}
	c.Summary.Verdicts = c.verdicts(metric)
	return &c, nil
}

// metricsPresent lists the metrics some arm has, in table order.
func (r *Report) metricsPresent() []string {
	var out []string
	for _, m := range MetricNames {
		for _, a := range r.Arms {
			if a.Metrics[m] != nil {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// WriteTablesMD writes tables.md: the rules, one table per metric (one row
// per arm), then the comparison against the baseline.
func WriteTablesMD(w io.Writer, r *Report) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# rig tables: %s\n\n", r.Run)
	if r.RunID != "" || r.Scenario != "" {
		fmt.Fprintf(b, "Run id %s, scenario %s. ", orDash(r.RunID), orDash(r.Scenario))
	}
	fmt.Fprintf(b, "Baseline arm: %s. Headline metric: %s.\n\n", orDash(r.Baseline), r.Headline)
	writeStatusMD(b, r)
	writeRulesMD(b, r)
	for _, s := range r.sections() {
		s.md(b)
	}
	writeProblemsMD(b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// section is one table of the report files: tables.md, report.md and
// report.html show the same sections in the same order.
type section struct {
	table
	// always: shown without rows too (its caption says why it has none).
	always bool
	// detail: a per-round table of the end (frequency, rounds, threads);
	// report.html shows the other metrics' plots before the first one.
	detail bool
}

// sections are the tables of every report file, in order; a table
// without rows is left out unless it is always shown. A new table is a
// function and a line here.
func (r *Report) sections() []section {
	var all []section
	for _, m := range r.metricsPresent() {
		all = append(all, section{table: metricTable(r, m)})
	}
	all = append(all,
		section{table: baselineTable(r), always: true},
		section{table: pairedTable(r)},
		section{table: freqTable(r), detail: true},
		section{table: noiseTable(r), detail: true},
		section{table: hostChangesTable(r), detail: true},
		section{table: roundsTable(r), always: true, detail: true},
		section{table: threadsTable(r), detail: true},
	)
	return slices.DeleteFunc(all, func(s section) bool { return !s.always && len(s.Rows) == 0 })
}

// baselineTable compares every arm with the baseline arm.
func baselineTable(r *Report) table {
	t := comparisonTable("Comparison against the baseline arm "+quote(r.Baseline), r.Comparisons, "baseline", "arm")
	t.Caption += requestsCaption(r)
	return t
}

// threadsTable lists, per arm and round, how much of the round the
// measuring threads ran and how often they lost their CPU: an isolated
// CPU shows (almost) no preemptions, a shared one shows who took it in the
// telemetry section.
func threadsTable(r *Report) table {
	t := table{Title: "Measuring threads",
		Caption: "Source: getrusage(RUSAGE_THREAD) of the sender's pacing thread and the responder's loop over each round (the sample files' footers), warm-up included. " +
			"*on CPU* = CPU time / wall time; *preempted* = involuntary context switches per second (another task took the CPU; on these Go threads also the runtime's hand-off after a forced preemption, about 200/s while one spins); " +
			"*blocked* = voluntary ones per second (waits for a packet or a due time). An isolated CPU shows almost no preemptions; the telemetry section names who took a shared one." +
			requestsCaption(r),
		Head: []string{"arm", "round", "sender on CPU", "sender preempted /s", "sender blocked /s", "responder on CPU", "responder preempted /s", "responder blocked /s"}}
	cells := func(u *samples.ThreadUsage) []string {
		if u == nil {
			return []string{"–", "–", "–"}
		}
		return []string{fmt.Sprintf("%.1f %%", 100*u.OnCPU()), fmt.Sprintf("%.0f", u.PerSecond(u.Involuntary)), fmt.Sprintf("%.0f", u.PerSecond(u.Voluntary))}
	}
	for _, a := range r.Arms {
		for _, rt := range a.Threads {
			row := append([]string{a.Name, strconv.Itoa(rt.Round)}, cells(rt.Sender)...)
			t.Rows = append(t.Rows, append(row, cells(rt.Responder)...))
		}
	}
	return t
}

// status is the run's state in one line when it is not clean: interrupted,
// rounds left out; "" for a run whose every round was used.
func (r *Report) status() string {
	var parts []string
	if r.Interrupted != "" {
		parts = append(parts, "**The run was interrupted** ("+r.Interrupted+").")
	}
	if out := r.leftOut(); len(out) > 0 {
		parts = append(parts, fmt.Sprintf("**%d round(s) left out of every table**: %s (why: Rounds table and Problems).", len(out), strings.Join(out, ", ")))
	}
	return strings.Join(parts, " ")
}

// leftOut names the rounds left out of the statistics ("base round 2").
func (r *Report) leftOut() []string {
	var out []string
	for _, a := range r.Arms {
		for _, ra := range a.Accounting {
			if len(ra.LeftOut) > 0 {
				out = append(out, fmt.Sprintf("%s round %d", a.Name, ra.Round))
			}
		}
	}
	return out
}

func writeStatusMD(b *strings.Builder, r *Report) {
	if st := r.status(); st != "" {
		fmt.Fprintf(b, "%s\n\n", st)
	}
}

// roundsTable is what happened to every round, used or left out: the
// requests after warm-up and the garbage each role saw.
func roundsTable(r *Report) table {
	t := table{Title: "Rounds",
		Caption: "Every round on disk. Requests after warm-up: sent = answered + late + lost; late = a reply more than the reply timeout after its send; lost = no reply; not sent = the sender stopped or failed to send. " +
			"Foreign = datagrams that were not this round's requests or replies (other runs, arms, rounds or directions, not rig packets), malformed = rig packets that do not parse, per role (sender/responder/capture); " +
			"capture drops = frames the capture's kernel dropped (receive buffer full). A round is left out of every statistic when a sample file it needs is missing, the sender stopped early, or the responder or capture failed." + requestsCaption(r),
		Head: []string{"arm", "round", "used", "sent", "answered", "late", "lost", "not sent", "foreign snd/rsp/cap", "malformed snd/rsp/cap", "capture drops"}}
	per := func(m map[samples.Role]uint64) string {
		return fmt.Sprintf("%d/%d/%d", m[samples.RoleSender], m[samples.RoleResponder], m[samples.RoleCapture])
	}
	for _, a := range r.Arms {
		for _, ra := range a.Accounting {
			used := "yes"
			if len(ra.LeftOut) > 0 {
				used = "left out: " + strings.Join(ra.LeftOut, "; ")
			}
			t.Rows = append(t.Rows, []string{a.Name, strconv.Itoa(ra.Round), used, strconv.Itoa(ra.Sent), strconv.Itoa(ra.Answered),
				strconv.Itoa(ra.Late), strconv.Itoa(ra.Lost), strconv.Itoa(ra.NotSent), per(ra.Foreign), per(ra.Malformed),
				strconv.FormatUint(ra.CaptureDrops, 10)})
		}
	}
	if len(t.Rows) == 0 {
		t.Caption = "No round was read."
	}
	return t
}

func quote(s string) string { return "`" + s + "`" }

func writeRulesMD(b *strings.Builder, r *Report) {
	ru := r.Rules
	fmt.Fprintf(b, "Rules (explained in %s):\n\n", ru.Doc)
	fmt.Fprintf(b, "- Warm-up W=%d: %s.\n", ru.Warmup, ru.WarmupRule)
	fmt.Fprintf(b, "- Percentiles: %s. %s.\n", ru.Percentile, capitalize(ru.Worst))
	fmt.Fprintf(b, "- Rounds: %s.\n", ru.AcrossRounds)
	fmt.Fprintf(b, "- Confidence: %s.\n", ru.CI)
	fmt.Fprintf(b, "- † undersampled: %s.\n", ru.Undersampled)
	fmt.Fprintf(b, "- Counts: %s.\n", ru.Population)
	fmt.Fprintf(b, "- Incomplete rounds: %s.\n", ru.Incomplete)
	fmt.Fprintf(b, "- Verdicts: %s.\n", ru.Verdict)
	fmt.Fprintf(b, "- Units: %s. Each metric uses the stamps of one clock, named in the source column.\n\n", ru.Units)
}

// table is one rendered table: Markdown and HTML render the same model.
type table struct {
	Title   string
	Caption string
	Head    []string
	Rows    [][]string
}

func (t *table) md(b *strings.Builder) {
	fmt.Fprintf(b, "## %s\n\n", t.Title)
	t.mdBody(b)
}

// mdBody writes the caption and the rows (no title).
func (t *table) mdBody(b *strings.Builder) {
	fmt.Fprintf(b, "%s\n\n", t.Caption)
	if len(t.Rows) == 0 {
		return
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEsc(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Head)
	b.WriteString("|" + strings.Repeat("---|", len(t.Head)) + "\n")
	for _, r := range t.Rows {
		row(r)
	}
	b.WriteString("\n")
}

func metricTable(r *Report, m string) table {
	w := r.Rules.Warmup
	t := table{Title: m}
	t.Caption = fmt.Sprintf("%s. Cells: median across rounds [min–max] of the per-round value, µs with 2 decimals; "+
		"per round exact nearest-rank sorted[ceil(q/100·n)−1] after warm-up W=%d (first %d samples of each round excluded); "+
		"worst = max after warm-up; p99.9 95 %% CI = envelope of the rounds' order-statistic intervals (\"open\" = not enough samples on that side); "+
		"source = the one clock used (formula in report.json); "+
		"n, lost, late, dup, reord, missing are totals over the rounds used (%s); missing adds the negative and overflowing values, never samples, when there are any; † = undersampled in at least one round.",
		capitalize(MetricDoc[m]), w, w, populationDoc(m)) + requestsCaption(r)
	t.Head = []string{"arm", "source", "rounds", "n", "median", "p99", "p99.9", "p99.9 95 % CI", fmt.Sprintf("worst (excl. first %d)", w), "lost", "late", "dup", "reord", "missing"}
	for _, a := range r.Arms {
		mr := a.Metrics[m]
		if a.Skipped != "" {
			t.Rows = append(t.Rows, []string{a.Name, "skipped: " + a.Skipped, "0", "0", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—"})
			continue
		}
		if mr == nil {
			t.Rows = append(t.Rows, []string{a.Name, "not available", strconv.Itoa(len(a.Rounds)), "0", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—"})
			continue
		}
		s := &mr.Summary
		u := func(q string, sp *Spread) string {
			c := cell(sp)
			if contains(s.Undersampled, q) {
				c += " †"
			}
			return c
		}
		t.Rows = append(t.Rows, []string{a.Name, mr.Source, strconv.Itoa(len(mr.Rounds)), strconv.Itoa(s.N),
			u("50", s.Median), u("99", s.P99), u("99.9", s.P999), ciCell(s, "99.9"), cell(s.Worst),
			strconv.Itoa(s.Lost), strconv.Itoa(s.Late), strconv.Itoa(s.Duplicated), strconv.Itoa(s.Reordered), missingCell(s.Counts)})
		if mr.Note != "" {
			t.Caption += fmt.Sprintf(" Arm %s, source %s: %s.", a.Name, mr.Source, strings.TrimSuffix(mr.Note, "."))
		}
	}
	return t
}

// populationDoc says which requests metric m covers (population).
func populationDoc(m string) string {
	switch m {
	case Lateness:
		return "lateness covers every sent request, lost and late ones included"
	case RTTFromDue:
		return "rtt_from_due covers every reply, late ones included"
	}
	return "the answered requests: lost and late ones are not in n"
}

func missingCell(c Counts) string {
	s := strconv.Itoa(c.Missing)
	if c.Negative > 0 {
		s += fmt.Sprintf(" + %d negative", c.Negative)
	}
	if c.Overflow > 0 {
		s += fmt.Sprintf(" + %d overflow", c.Overflow)
	}
	return s
}

func mdEsc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func comparisonTable(title string, cs []Comparison, refWord, thisWord string) table {
	t := table{Title: title}
	if len(cs) == 0 {
		t.Caption = "No comparison (a single arm, or no data for the reference)."
		return t
	}
	t.Caption = fmt.Sprintf("Δ = %s − %s and ratio = %s / %s of the across-round medians (µs). "+
		"Real difference: the round ranges do not overlap and the 95 %% interval envelopes do not overlap "+
		"(worst: ranges only), and the rule's false-positive rate for identical arms is below %.0f %%; \"indicative only\" above it. "+
		"False positives: ranges rule 2·r!·s!/(r+s)! with r and s rounds a side (33 %% at 2 and 2, 10 %% at 3 and 3, 0.79 %% at 5 and 5); "+
		"percentiles at most the smaller of that and 2·(0.025^r + 0.025^s) (the interval envelopes). Undersampled cells claim nothing. "+
		"The rule: %s#verdicts.",
		thisWord, refWord, thisWord, refWord, 100*MaxFalsePositive, RulesDoc)
	t.Head = []string{"metric", "arm", "stat", refWord, thisWord, "Δ", "ratio", "false positives", "verdict"}
	for _, c := range cs {
		d, ra := "—", "—"
		if c.DeltaNS != nil {
			d = FormatUS(*c.DeltaNS)
			if *c.DeltaNS > 0 {
				d = "+" + d
			}
		}
		if c.Ratio != nil {
			ra = strconv.FormatFloat(*c.Ratio, 'f', 3, 64)
		}
		v := c.Verdict
		if c.Frequency != "" {
			v += "; " + c.Frequency
		}
		t.Rows = append(t.Rows, []string{c.Metric, c.Arm, c.Stat, cell(c.RefValue), cell(c.This), d, ra, rateCell(c.FalsePositive), v})
	}
	return t
}

func writeComparisonMD(b *strings.Builder, title string, cs []Comparison, refWord, thisWord string) {
	t := comparisonTable(title, cs, refWord, thisWord)
	t.md(b)
}

func writeProblemsMD(b *strings.Builder, r *Report) {
	if len(r.Problems) > 0 {
		b.WriteString("## Problems\n\n")
		for _, p := range r.Problems {
			fmt.Fprintf(b, "- %s\n", p)
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, p := range r.Notes {
			fmt.Fprintf(b, "- %s\n", p)
		}
		b.WriteString("\n")
	}
}

// CSVHeader is the header row of tables.csv; all values are integer ns.
var CSVHeader = []string{"run", "arm", "metric", "source", "clock", "round", "warmup",
	"n", "lost", "not_sent", "duplicated", "reordered", "missing",
	"min_ns", "median_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "worst_ns",
	"p999_ci_low_ns", "p999_ci_high_ns", "undersampled", "late", "negative", "overflow"}

// WriteTablesCSV writes tables.csv: one row per arm × metric × round.
func WriteTablesCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	ns := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	for _, m := range MetricNames {
		for _, a := range r.Arms {
			mr := a.Metrics[m]
			if mr == nil {
				continue
			}
			for _, rs := range mr.Rounds {
				var lo, hi *int64
				var under []string
				for _, p := range rs.Percentiles {
					if p.Q == "99.9" {
						lo, hi = p.CILowNS, p.CIHighNS
					}
					if p.Undersampled {
						under = append(under, p.Q)
					}
				}
				row := []string{r.Run, a.Name, m, mr.Source, mr.Clock, strconv.Itoa(rs.Round), strconv.Itoa(r.Rules.Warmup),
					strconv.Itoa(rs.N), strconv.Itoa(rs.Lost), strconv.Itoa(rs.NotSent), strconv.Itoa(rs.Duplicated),
					strconv.Itoa(rs.Reordered), strconv.Itoa(rs.Missing),
					ns(rs.MinNS), ns(rs.MedianNS), ns(rs.P90NS), ns(rs.P99NS), ns(rs.P999NS), ns(rs.P9999NS), ns(rs.WorstNS),
					ns(lo), ns(hi), strings.Join(under, " "), strconv.Itoa(rs.Late), strconv.Itoa(rs.Negative), strconv.Itoa(rs.Overflow)}
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes report.json.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // keep "<" and "→" readable in the rules
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ComparisonCSVHeader is the header row of rig compare --format csv: one
// row per comparison, the reference side (A, or the baseline arm) ref_*,
// the compared side this_*; values are integer ns, cells empty without data.
var ComparisonCSVHeader = []string{"run_ref", "run_this", "metric", "arm", "ref", "stat", "source", "ref_source",
	"ref_median_ns", "ref_min_ns", "ref_max_ns", "ref_rounds", "this_median_ns", "this_min_ns", "this_max_ns", "this_rounds",
	"delta_ns", "ratio", "false_positive_rate", "verdict", "frequency"}

// WriteComparisonCSV writes comparisons of run this against run ref as CSV
// (ComparisonCSVHeader).
func WriteComparisonCSV(w io.Writer, ref, this string, cs []Comparison) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ComparisonCSVHeader); err != nil {
		return err
	}
	spread := func(s *Spread) []string {
		if s == nil {
			return []string{"", "", "", ""}
		}
		return []string{strconv.FormatInt(s.MedianNS, 10), strconv.FormatInt(s.MinNS, 10), strconv.FormatInt(s.MaxNS, 10), strconv.Itoa(s.Rounds)}
	}
	for _, c := range cs {
		row := []string{ref, this, c.Metric, c.Arm, c.Ref, c.Stat, c.Source, c.RefSource}
		row = append(append(row, spread(c.RefValue)...), spread(c.This)...)
		d, ra, fp := "", "", ""
		if c.DeltaNS != nil {
			d = strconv.FormatInt(*c.DeltaNS, 10)
		}
		if c.Ratio != nil {
			ra = strconv.FormatFloat(*c.Ratio, 'f', -1, 64)
		}
		if c.FalsePositive != nil {
			fp = strconv.FormatFloat(*c.FalsePositive, 'f', -1, 64)
		}
		if err := cw.Write(append(row, d, ra, fp, c.Verdict, c.Frequency)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteComparisonMD writes a comparison of two runs (rig compare).
func WriteComparisonMD(w io.Writer, a, b *Report, cs []Comparison, notes []string) error {
	sb := &strings.Builder{}
	fmt.Fprintf(sb, "# rig compare: %s (A) vs %s (B)\n\n", a.Run, b.Run)
	for _, r := range []*Report{a, b} {
		if st := r.status(); st != "" {
			fmt.Fprintf(sb, "%s: %s\n\n", r.Run, st)
		}
	}
	fmt.Fprintf(sb, "Arm by arm: each arm of B against the same arm of A. Warm-up A W=%d, B W=%d; exact nearest-rank percentiles per round, cells median across rounds [min–max], µs with 2 decimals.\n\n",
		a.Rules.Warmup, b.Rules.Warmup)
	if a.Rules.Warmup != b.Rules.Warmup {
		fmt.Fprintf(sb, "**Warning:** the runs use different warm-ups.\n\n")
	}
	writeComparisonMD(sb, "B against A", cs, "A", "B")
	nd, nn := CompareNoise(a, b)
	if t := noiseCompareTable(nd); len(t.Rows) > 0 {
		t.md(sb)
	}
	for _, n := range append(notes, nn...) {
		fmt.Fprintf(sb, "- %s\n", n)
	}
	for _, r := range []*Report{a, b} {
		for _, p := range r.Problems {
			fmt.Fprintf(sb, "- %s: %s\n", r.Run, p)
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// pairedTable is the paired comparison's table: one row per arm and pair
// of responders.
func pairedTable(r *Report) table {
	t := table{Title: "Paired comparison of responders (same requests)"}
	t.Caption = "d = turnaround(B) − turnaround(A) per request, µs: value [95 % interval] of the pooled rounds; rounds: each round's median of d. Rule: " + PairedRule + "."
	t.Head = []string{"arm", "A", "B", "source", "n", "median d", "p99 d", "p99.9 d", "rounds' median d", "verdict"}
	for _, p := range r.Paired {
		q := func(q Quantile) string {
			s := p.Stats.Percentile(q)
			if s == nil {
				return "—"
			}
			c := fmt.Sprintf("%s [%s, %s]", FormatUS(s.ValueNS), bound(s.CILowNS), bound(s.CIHighNS))
			if s.Undersampled {
				c += " (undersampled)"
			}
			return c
		}
		var rounds string
		for i, rd := range p.Rounds {
			if i > 0 {
				rounds += ", "
			}
			rounds += FormatUS(rd.MedianNS)
		}
		t.Rows = append(t.Rows, []string{p.Arm, p.A, p.B, p.Source, fmt.Sprint(p.Stats.N), q(P50), q(P99), q(P999), orDash(rounds), p.Verdict})
	}
	return t
}

// freqTable is the responder CPU's frequency and the responder host's
// energy per arm; no rows when no arm's telemetry carries either.
func freqTable(r *Report) table {
	t := table{Title: "Responder CPU frequency and energy",
		Caption: "The responder CPU's average frequency over each round, from its telemetry: APERF, MPERF and the TSC (msr driver, read before the first request and after the last), " +
			"ΔAPERF/ΔMPERF × ΔTSC/Δt = the average while the CPU was not idle (MPERF counts at the TSC's rate then; turbostat's Bzy_MHz), with busy = ΔMPERF/ΔTSC, the share of the round it was not idle; " +
			"else the mean of cpufreq's scaling_cur_freq at every telemetry sample; else not measurable (a VM without msr and cpufreq). " +
			fmt.Sprintf("Cell: median of the rounds' averages [min–max], MHz. A comparison whose arms' frequencies differ by more than %.0f %% says so next to its verdict. ", FreqDiffPct) +
			"Energy: " + rundir.EnergySourceRAPL + " of every RAPL powercap zone of the responder host (intel-rapl:N a package, intel-rapl:N:M its core, uncore or dram), read at every telemetry sample: " +
			"J = the sum of the counter's steps over the round (one wrap at max_energy_range_uj unwound per step; a step long enough for two wraps at " + strconv.Itoa(rundir.RAPLMaxWatts) + " W cannot be told), W = J / the time from the first sample to the last. " +
			"Package energy is the whole package's: it includes every CPU's work, not only the responder's (the sampler, the agent, any other task on the host); core is every core of the package, dram all its memory. " +
			"Cell: per zone, the median over the rounds that could tell of J per round and of mean W (n/m rounds when some could not); cannot tell (an unreadable energy_uj, root only since Linux 5.10; no powercap in a VM or container) is never 0. " +
			"Ran under: the first round's power state (governor, EPP, limits, turbo, intel_pstate perf limits, idle states disabled, tuned profile)." + requestsCaption(r),
		Head: []string{"arm", "source", "rounds measured", "MHz", "busy", "energy per round (RAPL)", "ran under", "note"}}
	measured := false
	for _, a := range r.Arms {
		f := a.Freq
		if a.Skipped != "" {
			continue
		}
		if f == nil {
			t.Rows = append(t.Rows, []string{a.Name, "—", "0", "—", "—", "—", "—", "no frequency or energy in the rounds' telemetry (an older rig)"})
			continue
		}
		measured = true
		n, mhz, busy, notes := 0, "—", "—", []string{}
		var b []float64
		for _, rf := range f.Rounds {
			if rf.MHz != nil {
				n++
			}
			if rf.BusyPct != nil {
				b = append(b, *rf.BusyPct)
			}
			if rf.Note != "" && !slices.Contains(notes, rf.Note) {
				notes = append(notes, rf.Note)
			}
		}
		if f.MedianMHz != nil {
			mhz = fmt.Sprintf("%.0f", *f.MedianMHz)
			if len(f.Rounds) > 1 && *f.MinMHz != *f.MaxMHz {
				mhz += fmt.Sprintf(" [%.0f–%.0f]", *f.MinMHz, *f.MaxMHz)
			}
		}
		if len(b) > 0 {
			busy = fmt.Sprintf("%.0f %%", medianF(b))
		}
		energy := energyCell(f, &notes)
		t.Rows = append(t.Rows, []string{a.Name, orDash(f.Source), fmt.Sprintf("%d/%d", n, len(f.Rounds)), mhz, busy, energy, orDash(f.RanUnder), orDash(strings.Join(notes, "; "))})
	}
	if !measured {
		t.Rows = nil // no telemetry with a frequency at all: no table
	}
	return t
}

// energyCell is an arm's energy per zone ("package-0 41.2 J, 12.3 W");
// why a round or zone could not tell goes to notes, once.
func energyCell(f *ArmFreq, notes *[]string) string {
	note := func(s string) {
		if !slices.Contains(*notes, s) {
			*notes = append(*notes, s)
		}
	}
	for _, re := range f.EnergyRounds {
		if re.Energy.CannotTell != "" {
			note("energy cannot tell: " + re.Energy.CannotTell)
		}
		if re.Energy.Note != "" {
			note("energy " + re.Energy.Note)
		}
		for _, z := range re.Energy.Zones {
			if z.CannotTell != "" {
				note(z.Label() + " energy cannot tell: " + z.CannotTell)
			}
		}
	}
	if len(f.EnergyRounds) == 0 {
		return "—"
	}
	var cells []string
	for _, z := range f.Energy {
		c := z.Zone + " cannot tell"
		if z.MedianJ != nil {
			c = fmt.Sprintf("%s %.1f J, %.1f W", z.Zone, *z.MedianJ, *z.MedianW)
			if z.Rounds < z.Of {
				c += fmt.Sprintf(" (%d/%d rounds)", z.Rounds, z.Of)
			}
		}
		cells = append(cells, c)
	}
	if len(cells) == 0 {
		return "cannot tell"
	}
	return strings.Join(cells, "; ")
}

// requestsCaption is the sentence every table caption ends with: where
// the requests went, once when every arm that ran agrees, else per arm.
func requestsCaption(r *Report) string {
	var per []string
	distinct := map[string]bool{}
	ran := 0
	for _, a := range r.Arms {
		if a.Skipped == "" {
			ran++
		}
		if a.Requests != "" {
			per = append(per, "arm "+a.Name+": "+a.Requests)
			distinct[a.Requests] = true
		}
	}
	if len(per) == 0 {
		return stacksCaption(r) + enginesCaption(r)
	}
	if len(distinct) == 1 && len(per) == ran {
		for s := range distinct {
			return " Requests: " + s + "." + stacksCaption(r) + enginesCaption(r)
		}
	}
	return " Requests: " + strings.Join(per, "; ") + "." + stacksCaption(r) + enginesCaption(r)
}

// enginesCaption names each arm's sender and responder engines, from its
// sample headers, when one arm ran another than the Go engine on either
// end ("" otherwise).
func enginesCaption(r *Report) string {
	var per []string
	other := false
	for _, a := range r.Summary.Arms {
		snd, rsp := a.Roles[string(samples.RoleSender)].Engine, a.Roles[string(samples.RoleResponder)].Engine
		if snd != "" || rsp != "" {
			per = append(per, fmt.Sprintf("arm %s: %s/%s", a.Name, orDash(snd), orDash(rsp)))
			for _, e := range []string{snd, rsp} {
				other = other || (e != "" && e != probe.EngineGo.String())
			}
		}
	}
	if !other {
		return ""
	}
	return " Engines (sender/responder): " + strings.Join(per, "; ") + "."
}

// stacksCaption names each arm's responder and sender socket stacks, from
// its sample headers, when one arm ran that program on another than the
// kernel's ("" otherwise: files before stacks, and the Go engine, say none).
func stacksCaption(r *Report) string {
	out := ""
	for _, role := range []samples.Role{samples.RoleResponder, samples.RoleSender} {
		var per []string
		bypass := false
		for _, a := range r.Summary.Arms {
			if st := a.Roles[string(role)].Stack; st != "" {
				per = append(per, "arm "+a.Name+": "+st)
				bypass = bypass || st != string(probe.StackKernel)
			}
		}
		if bypass {
			out += " " + capitalize(string(role)) + " socket stack: " + strings.Join(per, "; ") + "."
		}
	}
	return out
}
