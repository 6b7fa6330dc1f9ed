package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/probe"
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
	Stack          string `json:"stack,omitempty"`  // the native engine's socket stack
	Engine         string `json:"engine,omitempty"` // the sender's or responder's loop: go, native, xdp...
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
		put("engine", engineSetting(role, h.Settings["engine"]))
	}
}

func (f *armFacts) roles() map[string]RoleFacts {
	out := map[string]RoleFacts{}
	for role, m := range f.seen {
		v := func(k string) string { return strings.Join(m[k], " | ") }
		out[string(role)] = RoleFacts{Host: v("host"), Iface: v("iface"), CPU: v("cpu"), Poll: v("poll"), Sched: v("sched"), HardwareStamps: v("hardware_stamps"), Stack: v("stack"), Engine: v("engine")}
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

// engineSetting renders a sender's or responder's "engine": rig's Go
// probes write none, the native and reflector engines name themselves.
func engineSetting(role samples.Role, v any) string {
	if v == nil && (role == samples.RoleSender || role == samples.RoleResponder) {
		return probe.EngineGo.String()
	}
	return setting(v)
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

// buildSummary fills the report's Summary once the arms are analysed and
// compared.
func (z *analyzer) buildSummary(facts map[string]*armFacts) {
	r := z.rep
	s := RunSummary{TimestampsRequested: z.in.Timestamps, Hosts: append([]HostFacts{}, z.in.Hosts...), Arms: []ArmFacts{}, ClockFallbacks: []string{}}
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
	s.ClockFallbacks = z.clockFallbacks()
	r.Summary = s
	r.Summary.Verdicts = r.verdicts(r.Headline)
}

// clockFallbacks groups the clock notes by text: each note once, with the
// arms and metrics (and their sources) it touches.
func (z *analyzer) clockFallbacks() []string {
	r, requested := z.rep, z.in.Timestamps
	out := []string{}
	var notes []string
	where := map[string][]string{}
	for _, a := range r.Arms {
		var ms []string
		byNote := map[string][]string{}
		for _, m := range MetricNames {
			mr := a.Metrics[m]
			fallback := z.fallback[mr]
			if mr == nil || fallback == "" {
				continue
			}
			n := strings.TrimSuffix(fallback, ".")
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
			why := r.side.notComputed[a.Name+"/"+m]
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
		if q := percentOf(st); q != "" && contains(mr.Summary.Undersampled, q) {
			p += " †"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no value"
	}
	return strings.Join(parts, ", ")
}

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
