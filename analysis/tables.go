package analysis

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/samples"
)

// FormatUS formats integer nanoseconds as microseconds with 2 decimals,
// rounding half away from zero at 5 ns: 3904 → "3.90", 3905 → "3.91".
func FormatUS(ns int64) string {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	c := (ns + 5) / 10 // hundredths of a µs
	s := fmt.Sprintf("%d.%02d", c/100, c%100)
	if neg && c != 0 {
		s = "-" + s
	}
	return s
}

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
	for _, e := range s.CI {
		if e.Q != q {
			continue
		}
		side := func(p *int64) string {
			if p == nil {
				return "open"
			}
			return FormatUS(*p)
		}
		return side(e.LowNS) + "–" + side(e.HighNS)
	}
	return "—"
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

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
	writeRulesMD(b, r)
	for _, m := range r.metricsPresent() {
		writeMetricTable(b, r, m)
	}
	ct := comparisonTable("Comparison against the baseline arm "+quote(r.Baseline), r.Comparisons, "baseline", "arm")
	ct.Caption += requestsCaption(r)
	ct.md(b)
	writeThreadsMD(b, r)
	writeProblemsMD(b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeThreadsMD lists, per arm and round, how much of the round the
// measuring threads ran and how often they lost their CPU: an isolated
// CPU shows (almost) no preemptions, a shared one shows who took it in the
// telemetry section.
func writeThreadsMD(b *strings.Builder, r *Report) {
	t := threadsTable(r)
	if len(t.Rows) > 0 {
		t.md(b)
	}
}

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

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func quote(s string) string { return "`" + s + "`" }

func writeRulesMD(b *strings.Builder, r *Report) {
	ru := r.Rules
	fmt.Fprintf(b, "Rules (DESIGN §2):\n\n")
	fmt.Fprintf(b, "- Warm-up W=%d: %s.\n", ru.Warmup, ru.WarmupRule)
	fmt.Fprintf(b, "- Percentiles: %s. %s.\n", ru.Percentile, capitalize(ru.Worst))
	fmt.Fprintf(b, "- Rounds: %s.\n", ru.AcrossRounds)
	fmt.Fprintf(b, "- Confidence: %s.\n", ru.CI)
	fmt.Fprintf(b, "- † undersampled: %s.\n", ru.Undersampled)
	fmt.Fprintf(b, "- Counts: %s.\n", ru.Population)
	fmt.Fprintf(b, "- Units: %s. Each metric uses the stamps of one clock, named in the source column.\n\n", ru.Units)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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
		"n, lost, dup, reord, missing are totals over the rounds; † = undersampled in at least one round.",
		capitalize(MetricDoc[m]), w, w) + requestsCaption(r)
	t.Head = []string{"arm", "source", "rounds", "n", "median", "p99", "p99.9", "p99.9 95 % CI", fmt.Sprintf("worst (excl. first %d)", w), "lost", "dup", "reord", "missing"}
	for _, a := range r.Arms {
		mr := a.Metrics[m]
		if a.Skipped != "" {
			t.Rows = append(t.Rows, []string{a.Name, "skipped: " + a.Skipped, "0", "0", "—", "—", "—", "—", "—", "—", "—", "—", "—"})
			continue
		}
		if mr == nil {
			t.Rows = append(t.Rows, []string{a.Name, "not available", strconv.Itoa(len(a.Rounds)), "0", "—", "—", "—", "—", "—", "—", "—", "—", "—"})
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
			strconv.Itoa(s.Lost), strconv.Itoa(s.Duplicated), strconv.Itoa(s.Reordered), strconv.Itoa(s.Missing)})
		if mr.Note != "" {
			t.Caption += fmt.Sprintf(" Arm %s, source %s: %s.", a.Name, mr.Source, strings.TrimSuffix(mr.Note, "."))
		}
	}
	return t
}

func writeMetricTable(b *strings.Builder, r *Report, m string) {
	t := metricTable(r, m)
	t.md(b)
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
		"(worst: ranges only, ≥ 2 rounds a side); undersampled cells claim nothing.", thisWord, refWord, thisWord, refWord)
	t.Head = []string{"metric", "arm", "stat", refWord, thisWord, "Δ", "ratio", "verdict"}
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
		t.Rows = append(t.Rows, []string{c.Metric, c.Arm, c.Stat, cell(c.RefValue), cell(c.This), d, ra, c.Verdict})
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
	"p999_ci_low_ns", "p999_ci_high_ns", "undersampled"}

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
					ns(lo), ns(hi), strings.Join(under, " ")}
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

// WriteComparisonMD writes a comparison of two runs (rig compare).
func WriteComparisonMD(w io.Writer, a, b *Report, cs []Comparison, notes []string) error {
	sb := &strings.Builder{}
	fmt.Fprintf(sb, "# rig compare: %s (A) vs %s (B)\n\n", a.Run, b.Run)
	fmt.Fprintf(sb, "Arm by arm: each arm of B against the same arm of A. Warm-up A W=%d, B W=%d; exact nearest-rank percentiles per round, cells median across rounds [min–max], µs with 2 decimals.\n\n",
		a.Rules.Warmup, b.Rules.Warmup)
	if a.Rules.Warmup != b.Rules.Warmup {
		fmt.Fprintf(sb, "**Warning:** the runs use different warm-ups.\n\n")
	}
	writeComparisonMD(sb, "B against A", cs, "A", "B")
	for _, n := range notes {
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
