// Package analysis turns the sample files of a run directory into the
// published tables: exact per-round statistics of every metric, the
// comparison against the baseline arm, and the report files (tables.md,
// tables.csv, report.json, report.md, report.html, hist.hlog, plots/).
//
// The rules (docs/statistics.md) are fixed and printed with every table: warm-up by
// sequence (seq < W is excluded), exact nearest-rank percentiles
// sorted[ceil(q/100·n)−1] from integer nanoseconds, worst = max after
// warm-up, per round and then across rounds as median [min–max], a
// distribution-free 95 % interval for each percentile, and "undersampled"
// when fewer than MinTail samples lie at or above the percentile's rank.
// Each metric is computed from stamps of one clock only; the source is chosen
// per arm as the best one every round's clocks provide.
//
// Analyze computes a Report, the document report.json holds; the files
// named render_*.go turn it into the report files, every table from one
// ordered list of sections. The package is pure Go: it builds and runs on
// any OS.
package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// FormatVersion is the version of report.json (docs/formats.md).
const FormatVersion = 2

// Report is the analysis of one run; it is report.json.
type Report struct {
	Format        string `json:"format"` // "rig-report"
	FormatVersion int    `json:"format_version"`
	Run           string `json:"run"` // run directory base name
	RunID         string `json:"run_id,omitempty"`
	Scenario      string `json:"scenario,omitempty"`
	Baseline      string `json:"baseline"`
	Headline      string `json:"headline"`
	// Interrupted is the manifest's reason when the run did not finish.
	Interrupted string `json:"interrupted,omitempty"`
	// Summary is what report.html opens with: the hosts and arms compared,
	// one verdict per arm, the clock fallbacks.
	Summary RunSummary   `json:"summary"`
	Rules   Rules        `json:"rules"`
	Arms    []*ArmReport `json:"arms"`
	// Comparisons of every arm against the baseline, per metric and
	// statistic.
	Comparisons []Comparison `json:"comparisons"`
	// Paired are the paired comparisons of responders answering the
	// same requests (fan-out; absent with one responder).
	Paired []Paired `json:"paired,omitempty"`
	// Problems are damaged or missing files and everything that was not
	// analysed; the report covers what remained.
	Problems []string `json:"problems"`
	// Notes explain metrics that were not computed (e.g. network without
	// hardware clocks).
	Notes []string `json:"notes"`
	// Telemetry are optional per-round sections (see TelemetryFunc).
	Telemetry      []TelemetrySection `json:"telemetry,omitempty"`
	TelemetryFiles int                `json:"telemetry_files"`
	// PcapFiles are the rounds' capture.pcap files (scenario capture:
	// {pcap: true}), relative to the run directory.
	PcapFiles []string `json:"pcap_files,omitempty"`
	// HostChanges is what the arms did to the responder hosts, from
	// the rounds' host-changes.txt (absent when no round has one).
	HostChanges []HostChanges `json:"host_changes,omitempty"`

	side side
}

// side is what the report files draw beyond report.json, which holds the
// statistics, not the samples behind them.
type side struct {
	startMs, endMs int64                              // run start and end (ms since epoch) for hist.hlog; 0 = unknown
	hists          map[string]*hdrhistogram.Histogram // arm/metric → pooled after warm-up
	scatter        map[string][]ScatterRound          // arm → headline points per round
	paired         [][]int64                          // per Report.Paired: the pooled differences, sorted
	notComputed    map[string]string                  // arm/metric → why it was not computed (--metric's verdicts)
}

// Rules are the statistics rules, printed with every table. Doc names the
// page of the repository that explains them (RulesDoc).
type Rules struct {
	Doc          string `json:"doc"`
	Warmup       int    `json:"warmup"`
	WarmupRule   string `json:"warmup_rule"`
	Percentile   string `json:"percentile_rule"`
	Worst        string `json:"worst_rule"`
	AcrossRounds string `json:"across_rounds_rule"`
	CI           string `json:"ci_rule"`
	Undersampled string `json:"undersampled_rule"`
	Population   string `json:"population_rule"`
	Incomplete   string `json:"incomplete_rule"`
	Verdict      string `json:"verdict_rule"`
	Units        string `json:"units"`
}

// RulesDoc is the page that explains the rules, cited by every report; its
// sections are named after them (docs/statistics.md#verdicts, …).
const RulesDoc = "docs/statistics.md"

func rules(w int) Rules {
	return Rules{
		Doc:          RulesDoc,
		Warmup:       w,
		WarmupRule:   fmt.Sprintf("samples with sequence < %d (the first %d of each round) are excluded from every statistic", w, w),
		Percentile:   "exact nearest-rank on the sorted samples after warm-up: p(q) = sorted[ceil(q/100·n) − 1], integer ns, no interpolation",
		Worst:        "worst = maximum after warm-up",
		AcrossRounds: "per round first; a cell is the median of the per-round values (nearest-rank: the lower middle for an even count) with [min–max]",
		CI:           "95 % distribution-free order-statistic interval [x(lo), x(hi)] from the exact Binomial(n, q) distribution; a side is open (null in report.json, \"open\" in tables) when too few samples lie below or above",
		Undersampled: fmt.Sprintf("a percentile is undersampled when fewer than %d samples lie at or above its rank: n − ceil(q/100·n) + 1 < %d (p99.9 needs n ≥ 9 000, p99.99 n ≥ 90 000)", MinTail, MinTail),
		Population: "after warm-up each request is not_sent (the sender never sent it), lost (no reply; for sequences the sender file lacks, the capture's view: request without reply), late (a reply more than the reply timeout after its send, judged from tx_sw else tx_user to rx_sw else rx_user) or answered; " +
			"lateness covers every sent request (lost and late included: a stalled send is charged), rtt_from_due every reply (late included), every other metric the answered requests; " +
			"within its population a request lacking the metric's stamps is missing, a difference of stamps on one clock below 0 (a forged or misfiled packet) is negative, and one beyond int64 (stamps no clock gives: a forged or damaged file) is overflow, each a problem and never a sample: n + missing + negative + overflow = the population",
		Incomplete: "a round is left out of every statistic, comparison, plot and histogram (and listed as a problem with its counts) when a sample file it needs is missing (sender, responder, and capture when the run has one), the sender stopped early (its footer's stopped), or the responder or capture failed; " +
			"the responder and capture run until stopped, so their \"interrupted\" is their normal end",
		Verdict: fmt.Sprintf("real difference when the round ranges [min–max] do not overlap and (for percentiles) the 95 %% interval envelopes do not overlap, and the rule's false-positive rate for identical arms is below %.0f %%: "+
			"ranges 2·r!·s!/(r+s)! with r and s rounds a side (33 %% at 2 and 2, 10 %% at 3 and 3, 0.79 %% at 5 and 5), intervals at most 2·(0.025^r + 0.025^s); otherwise \"indicative\"", 100*MaxFalsePositive),
		Units: "JSON in integer nanoseconds; tables in µs with 2 decimals",
	}
}

// ArmReport is one arm.
type ArmReport struct {
	Name    string                   `json:"name"`
	Skipped string                   `json:"skipped,omitempty"`
	Rounds  []int                    `json:"rounds"` // rounds analysed
	Metrics map[string]*MetricReport `json:"metrics"`
	// Threads are the measuring threads' CPU use per round, from the
	// sample files' footers (rounds without them are left out).
	Threads []RoundThreads `json:"threads,omitempty"`
	// Requests is where the requests went, from the sample headers:
	// "multicast 239.1.1.1:9000" or "unicast to 10.0.0.2:9000".
	Requests string `json:"requests,omitempty"`
	// Accounting is what happened to every round of the arm on disk,
	// including the rounds left out of the statistics.
	Accounting []RoundAccount `json:"accounting"`
	// Freq is the responder CPU's measured frequency over the analysed
	// rounds, from their telemetry (nil when none carries it).
	Freq *ArmFreq `json:"freq,omitempty"`
	// Noise is the analysed rounds' noise windows (nil when none has one).
	Noise *ArmNoise `json:"noise,omitempty"`
}

// RoundAccount is what happened to one round, whatever its statistics:
// the requests after warm-up, the garbage each role saw, and why the round
// was left out of the statistics ([] when it was used).
type RoundAccount struct {
	Round   int      `json:"round"`
	LeftOut []string `json:"left_out"`
	// Requests after warm-up by what became of them (the population rule).
	Sent     int `json:"sent"`
	Answered int `json:"answered"`
	Late     int `json:"late"`
	Lost     int `json:"lost"`
	NotSent  int `json:"not_sent"`
	// Foreign and Malformed datagrams per role whose footer counts them
	// (other runs, arms, rounds or directions, or not rig packets; never
	// samples). CaptureDrops are frames the capture's kernel dropped.
	Foreign      map[samples.Role]uint64 `json:"foreign"`
	Malformed    map[samples.Role]uint64 `json:"malformed"`
	CaptureDrops uint64                  `json:"capture_drops"`
}

// RoundThreads is one round's measuring threads: the sender's pacing
// thread and the responder's loop (nil: the file did not carry it).
type RoundThreads struct {
	Round     int                  `json:"round"`
	Sender    *samples.ThreadUsage `json:"sender,omitempty"`
	Responder *samples.ThreadUsage `json:"responder,omitempty"`
}

// MetricReport is one metric of one arm.
type MetricReport struct {
	Source  string `json:"source"`  // "capture sw", "responder hw", …
	Formula string `json:"formula"` // "cap_rep_sw − cap_req_sw"
	Clock   string `json:"clock"`   // the one clock of the stamps
	// Note is what the sample headers say about that clock, e.g. that
	// hardware stamps were requested and did not arrive.
	Note    string       `json:"note,omitempty"`
	Rounds  []RoundStats `json:"rounds"`
	Summary Summary      `json:"summary"`
	// HistDropped counts values the HDR histogram (plots, hist.hlog) could
	// not hold (negative or above 100 s); the tables are exact regardless.
	HistDropped int64 `json:"hist_dropped,omitempty"`
}

// roundThreads picks the measuring threads' usage out of a joined round.
func roundThreads(j *samples.Joined, k int) (RoundThreads, bool) {
	rt := RoundThreads{Round: k}
	if u, ok := j.Threads[samples.RoleSender]; ok {
		rt.Sender = &u
	}
	if u, ok := j.Threads[samples.RoleResponder]; ok {
		rt.Responder = &u
	}
	return rt, rt.Sender != nil || rt.Responder != nil
}

// Counts are the per-round request counts after warm-up.
type Counts struct {
	N          int `json:"n"`
	Lost       int `json:"lost"`
	Late       int `json:"late"`
	NotSent    int `json:"not_sent"`
	Duplicated int `json:"duplicated"`
	Reordered  int `json:"reordered"`
	Missing    int `json:"missing"`
	Negative   int `json:"negative"`
	Overflow   int `json:"overflow"`
}

// RoundStats are the exact statistics of one round.
type RoundStats struct {
	Round int `json:"round"`
	Counts
	MedianNS *int64 `json:"median_ns"`
	P90NS    *int64 `json:"p90_ns"`
	P99NS    *int64 `json:"p99_ns"`
	P999NS   *int64 `json:"p999_ns"`
	P9999NS  *int64 `json:"p9999_ns"`
	WorstNS  *int64 `json:"worst_ns"`
	MinNS    *int64 `json:"min_ns"`
	// Percentiles repeat the values with rank, 95 % interval and the
	// undersampled flag.
	Percentiles []PercentileStat `json:"percentiles"`
}

// Summary is a metric across the rounds of an arm.
type Summary struct {
	Rounds int     `json:"rounds"` // rounds with n > 0
	Counts         // totals over rounds
	Median *Spread `json:"median"`
	P90    *Spread `json:"p90"`
	P99    *Spread `json:"p99"`
	P999   *Spread `json:"p999"`
	P9999  *Spread `json:"p9999"`
	Worst  *Spread `json:"worst"`
	// Undersampled lists percentiles ("99.9") undersampled in any round.
	Undersampled []string `json:"undersampled"`
	// CI is per percentile the envelope of the rounds' 95 % intervals: the
	// lowest low and the highest high; null when a side is open in any round.
	CI []CIEnvelope `json:"ci"`
}

// CIEnvelope is the envelope of the rounds' intervals of one percentile.
type CIEnvelope struct {
	Q      string `json:"q"`
	LowNS  *int64 `json:"low_ns"`
	HighNS *int64 `json:"high_ns"`
}

// ciOf is the envelope of percentile q's intervals; false when no round
// had q.
func (s *Summary) ciOf(q string) (CIEnvelope, bool) {
	for _, e := range s.CI {
		if e.Q == q {
			return e, true
		}
	}
	return CIEnvelope{Q: q}, false
}

// Stat returns the across-round spread of a statistic: "median", "p90",
// "p99", "p99.9", "p99.99" or "worst".
func (s *Summary) Stat(name string) *Spread {
	switch name {
	case "median":
		return s.Median
	case "p90":
		return s.P90
	case "p99":
		return s.P99
	case "p99.9":
		return s.P999
	case "p99.99":
		return s.P9999
	case "worst":
		return s.Worst
	}
	return nil
}

// ScatterRound is the headline metric of one round over time, thinned for
// plotting: every sample above the round's p99 and every Stride-th of the
// rest; WarmSeq and WarmNS are the warm-up samples (seq < W, in no
// statistic), all of them.
type ScatterRound struct {
	Round   int
	Stride  int
	Seq     []uint64
	NS      []int64
	WarmSeq []uint64
	WarmNS  []int64
}

// TelemetryFunc summarizes what else ran on the responder CPU during the
// rounds of one arm (arms/<arm>/round-<k>/telemetry.json) as paragraphs and
// tables for report.md and report.html. It must not fail on a missing or
// damaged file: that is a line of the section. An error is a problem of
// the report and drops the arm's section.
type TelemetryFunc func(a *TelemetryArm) ([]TelemetryBlock, error)

// DefaultTelemetry is used when Options.Telemetry is nil: SummarizeTelemetry.
var DefaultTelemetry TelemetryFunc = SummarizeTelemetry

// TelemetryArm is what a TelemetryFunc gets for one arm.
type TelemetryArm struct {
	Arm    string
	Rounds []TelemetryRound // analysed rounds that have a directory
	// Metric and Source name the headline metric and the source it used;
	// Worst are its largest samples after warm-up over all rounds, largest
	// first (at most WorstSamples; empty when the metric was not computed).
	Metric, Source string
	Worst          []WorstSample
}

// TelemetryRound is one round of an arm, as Responder answered it.
type TelemetryRound struct {
	K         int
	Dir       string
	Responder uint32
}

// TelemetryPath is the round's telemetry file of the responder.
func (r TelemetryRound) TelemetryPath() string {
	return filepath.Join(r.Dir, rundir.TelemetryFile(r.Responder))
}

// WorstSamples is how many of an arm's largest headline samples the
// telemetry section lines up with the telemetry intervals.
const WorstSamples = 5

// WorstSample is one of an arm's largest headline samples after warm-up.
type WorstSample struct {
	Round   int    `json:"round"`
	Seq     uint64 `json:"seq"`
	ValueNS int64  `json:"value_ns"`
	// At is the first of the record's CLOCK_REALTIME stamps among
	// req_rx_sw, req_rx_user, rep_tx_user, rep_tx_sw (the responder host's
	// clock, the one telemetry uses), cap_req_sw, due, tx_user (another host's
	// realtime clock); AtNS is its value. NIC (PHC) stamps are never used:
	// they are not CLOCK_REALTIME. At is "" when the record has none.
	At   string `json:"at_stamp"`
	AtNS int64  `json:"at_ns"`
}

// TelemetryBlock is a paragraph (Text) or a table (Head, Rows; Text is
// then its caption) of a telemetry section. Samples is set on the table
// of the arm's worst samples: its rows in typed form, which the
// over-time plots mark.
type TelemetryBlock struct {
	Text    string         `json:"text,omitempty"`
	Head    []string       `json:"head,omitempty"`
	Rows    [][]string     `json:"rows,omitempty"`
	Samples []PlacedSample `json:"samples,omitempty"`
}

// PlacedSample is one of an arm's worst samples lined up with telemetry:
// Placed when it fell in a telemetry interval, Unusual the sources that
// moved more than twice their usual in that interval. The telemetry
// explains a sample when both are set.
type PlacedSample struct {
	WorstSample
	Placed  bool     `json:"placed"`
	Unusual []string `json:"unusual"`
}

// Explained says whether the telemetry saw something unusual when the
// sample was taken.
func (p *PlacedSample) Explained() bool { return p.Placed && len(p.Unusual) > 0 }

// TelemetrySection is one arm's telemetry summary.
type TelemetrySection struct {
	Arm    string           `json:"arm"`
	Blocks []TelemetryBlock `json:"blocks"`
}

// Options tune Analyze.
type Options struct {
	// OverrideWarmup replaces the warm-up of the manifest (else of the
	// sample headers) with Warmup. The zero Options use the run's own W.
	OverrideWarmup bool
	Warmup         int
	// ScatterPoints bounds the thinned headline points per arm and round
	// (default 2000).
	ScatterPoints int
	Telemetry     TelemetryFunc
}

// histogram range: 1 ns … 100 s at 3 significant digits.
const histMax = 100_000_000_000

// acc accumulates one candidate source of one metric of one arm.
type acc struct {
	src     Source
	first   int // position in the first round's candidate list
	rounds  []RoundStats
	hist    *hdrhistogram.Histogram
	dropped int64
	scatter []ScatterRound
	worst   []WorstSample // headline: each round's largest
}

// analyzer is Analyze's working state while it reads the rounds.
type analyzer struct {
	in   *Input
	opt  Options
	rep  *Report
	w    int // the warm-up: negative until a header names it
	bufs roundBufs
	// fallback is the clock fallback of each chosen source that has one
	// (Source.Fallback).
	fallback map[*MetricReport]string
}

// Analyze computes the report of in. Rounds that cannot be read become
// problems; the arms that remain are reported.
func Analyze(in *Input, opt Options) (*Report, error) {
	if opt.ScatterPoints <= 0 {
		opt.ScatterPoints = 2000
	}
	if opt.Telemetry == nil {
		opt.Telemetry = DefaultTelemetry
	}
	rep := &Report{
		Format: "rig-report", FormatVersion: FormatVersion, Run: filepath.Base(in.Run),
		RunID: in.RunID, Scenario: in.Scenario, Baseline: in.Baseline, Headline: Headline,
		Interrupted: strings.Join(strings.Fields(in.Interrupted), " "), // one line: it heads the tables
		Arms:        []*ArmReport{}, Comparisons: []Comparison{},
		Problems: append([]string{}, in.Problems...), Notes: []string{},
		side: side{startMs: msTime(in.StartedAt), endMs: msTime(in.EndedAt),
			hists: map[string]*hdrhistogram.Histogram{}, scatter: map[string][]ScatterRound{}, notComputed: map[string]string{}},
	}
	z := analyzer{in: in, opt: opt, rep: rep, w: in.Warmup}
	if rep.Interrupted != "" {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the run was interrupted (%s): the rounds it cut short are left out, the rounds it never ran are absent", rep.Interrupted))
	}
	if opt.OverrideWarmup {
		if opt.Warmup < 0 {
			return nil, fmt.Errorf("warm-up %d: must be ≥ 0", opt.Warmup)
		}
		z.w = opt.Warmup
	}
	facts := map[string]*armFacts{} // where each arm's programs ran
	var tel []*TelemetryArm
	for _, a := range in.Arms {
		ar := &ArmReport{Name: a.Name, Skipped: a.Skipped, Rounds: []int{}, Metrics: map[string]*MetricReport{}, Accounting: []RoundAccount{}}
		rep.Arms = append(rep.Arms, ar)
		if a.Skipped != "" {
			continue
		}
		af, ta := &armFacts{}, &TelemetryArm{Arm: a.Name, Metric: Headline}
		facts[a.Name], tel = af, append(tel, ta)
		z.arm(a, ar, af, ta)
	}
	z.w = max(z.w, 0)
	var hp []string
	rep.HostChanges, hp = hostChanges(in)
	rep.Problems = append(rep.Problems, hp...)
	if rep.TelemetryFiles > 0 && opt.Telemetry != nil {
		for _, ta := range tel {
			if len(ta.Rounds) == 0 {
				continue
			}
			blocks, err := opt.Telemetry(ta)
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q: telemetry: %v", ta.Arm, err))
				continue
			}
			rep.Telemetry = append(rep.Telemetry, TelemetrySection{Arm: ta.Arm, Blocks: blocks})
		}
	}
	rep.Rules = rules(z.w)
	if rep.Baseline != "" && !slices.ContainsFunc(rep.Arms, func(a *ArmReport) bool { return a.Name == rep.Baseline }) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("baseline arm %q has no data: no comparison", rep.Baseline))
	} else if rep.Baseline != "" {
		rep.Comparisons = CompareArms(rep, rep.Baseline)
	}
	var pp []string
	rep.Paired, rep.side.paired, pp = comparePaired(in, rep, z.w)
	rep.Problems = append(rep.Problems, pp...)
	z.buildSummary(facts)
	return rep, nil
}

// arm reads arm a's rounds into ar (accounting, rounds used, threads,
// requests), af (the facts the summary states) and ta (the telemetry
// index), then picks each metric's source (chooseSources). The warm-up
// stays negative until a header names it; the next arm inherits it.
func (z *analyzer) arm(a InputArm, ar *ArmReport, af *armFacts, ta *TelemetryArm) {
	rep, in := z.rep, z.in
	accs := map[string]map[string]*acc{} // metric → label → acc
	for _, rd := range a.Rounds {
		z.pcapFile(rd.Dir)
		j, err := rd.Load()
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q round %d: %v (round skipped)", a.Name, rd.K, err))
			ar.Accounting = append(ar.Accounting, RoundAccount{Round: rd.K, LeftOut: []string{"unreadable: " + err.Error()},
				Foreign: map[samples.Role]uint64{}, Malformed: map[samples.Role]uint64{}})
			continue
		}
		for _, p := range j.Problems {
			rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q round %d: %s (complete records used)", a.Name, rd.K, p))
		}
		af.add(j)
		// Only the sender knows the warm-up: another role's header
		// says 0 (a round without sender.samples is incomplete anyway).
		fromSender := j.Header.Role == samples.RoleSender
		if z.w < 0 && (fromSender || len(in.Expect) == 0) {
			z.w = j.Header.Warmup
		}
		if fromSender && j.Header.Warmup != z.w && !z.opt.OverrideWarmup {
			rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q round %d: sample header says warm-up %d; using W=%d for the whole run", a.Name, rd.K, j.Header.Warmup, z.w))
		}
		ra := account(j, rd.K, max(z.w, 0), in.Expect)
		ar.Accounting = append(ar.Accounting, ra)
		p, n := ra.lines(a.Name)
		rep.Problems, rep.Notes = append(rep.Problems, p...), append(rep.Notes, n...)
		if len(ra.LeftOut) > 0 {
			continue
		}
		ar.Rounds = append(ar.Rounds, rd.K)
		ar.addRequests(j.Header.Requests())
		if rt, ok := roundThreads(j, rd.K); ok {
			ar.Threads = append(ar.Threads, rt)
		}
		for _, n := range analyzeRound(j, rd.K, z.w, accs, z.opt, &z.bufs) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("arm %q %s", a.Name, n))
		}
		if rd.Dir != "" {
			tr := TelemetryRound{K: rd.K, Dir: rd.Dir, Responder: rd.Responder}
			ta.Rounds = append(ta.Rounds, tr)
			if _, err := os.Stat(tr.TelemetryPath()); err == nil {
				rep.TelemetryFiles++
			}
		}
	}
	if len(a.Rounds) == 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q: no rounds", a.Name))
	}
	ar.Freq = armFreq(ta.Rounds)
	var noiseProblems []string
	ar.Noise, noiseProblems = armNoise(a, ta.Rounds)
	for _, p := range noiseProblems {
		rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q: noise: %s", a.Name, p))
	}
	z.chooseSources(ar, accs, ta)
}

// chooseSources sets ar.Metrics from accs: per metric, of the sources
// every used round has, the one earliest in the first round's candidate
// list (network only from the rtt and turnaround sources chosen), or a
// note saying why it was not computed.
func (z *analyzer) chooseSources(ar *ArmReport, accs map[string]map[string]*acc, ta *TelemetryArm) {
	rep, arm := z.rep, ar.Name
	chosen := map[string]*acc{}
	for _, m := range MetricNames {
		var best *acc
		for _, c := range accs[m] {
			if len(c.rounds) != len(ar.Rounds) {
				continue // not available in every round: would mix clocks
			}
			if m == Network {
				// Network must use the rtt and turnaround sources chosen.
				t, r := chosen[Turnaround], chosen[RTT]
				if t == nil || r == nil || c.src.Label != r.src.Label+" − "+t.src.Label {
					continue
				}
			}
			if best == nil || c.first < best.first {
				best = c
			}
		}
		if best == nil {
			if len(ar.Rounds) > 0 {
				why := whyMissing(m, accs, chosen)
				rep.side.notComputed[arm+"/"+m] = why
				rep.Notes = append(rep.Notes, fmt.Sprintf("arm %q: %s not computed: %s", arm, m, why))
			}
			continue
		}
		chosen[m] = best
		for _, rs := range best.rounds {
			if rs.Negative > 0 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q round %d: %s (%s, %s): %d negative values, impossible on one clock (a forged or misfiled packet); counted as negative, never samples",
					arm, rs.Round, m, best.src.Label, best.src.Formula, rs.Negative))
			}
			if rs.Overflow > 0 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("arm %q round %d: %s (%s, %s): %d overflowing values, beyond int64: stamps no clock gives (a forged or damaged file); counted as overflow, never samples",
					arm, rs.Round, m, best.src.Label, best.src.Formula, rs.Overflow))
			}
		}
		mr := &MetricReport{
			Source: best.src.Label, Formula: best.src.Formula, Clock: best.src.Clock, Note: best.src.Note,
			Rounds: best.rounds, Summary: summarize(best.rounds), HistDropped: best.dropped,
		}
		ar.Metrics[m] = mr
		if best.src.Fallback != "" {
			if z.fallback == nil {
				z.fallback = map[*MetricReport]string{}
			}
			z.fallback[mr] = best.src.Fallback
		}
		rep.side.hists[arm+"/"+m] = best.hist
		if m == Headline {
			rep.side.scatter[arm] = best.scatter
			ta.Source = best.src.Label
			ta.Worst = largest(best.worst, WorstSamples)
		}
	}
}

func msTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

func whyMissing(m string, accs map[string]map[string]*acc, chosen map[string]*acc) string {
	switch {
	case m == Network:
		t, r := chosen[Turnaround], chosen[RTT]
		if t == nil || r == nil {
			return "needs both rtt and turnaround"
		}
		return fmt.Sprintf("needs hardware clocks for both rtt and turnaround (have %s, %s)", r.src.Label, t.src.Label)
	case len(accs[m]) == 0:
		return "no round has the stamps on one clock"
	default:
		var ls []string
		for l := range accs[m] {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		return fmt.Sprintf("no source is available in every round (some rounds have %s)", strings.Join(ls, ", "))
	}
}

// What became of one request after warm-up (the population rule).
const (
	answered uint8 = 1 << iota // a reply within the reply timeout
	late                       // a reply after it
	lost                       // no reply
	notSent                    // the sender never sent it
)

// classify says what became of record r. The sender decides when it
// recorded the sequence; a sequence absent from the sender file (truncated
// file) falls back to the capture (a request seen without its reply is
// lost), else counts as answered.
func classify(r *samples.Record, hasSender, hasCapture bool) uint8 {
	if r.Flags&samples.FlagNotSent != 0 {
		return notSent
	}
	t := &r.T
	rx := t[samples.RxHW] | t[samples.RxSW] | t[samples.RxUser]
	if hasSender && (t[samples.Due]|t[samples.TxUser]|t[samples.TxSW]|t[samples.TxHW]|rx) != 0 {
		switch {
		case rx == 0:
			return lost
		case r.Flags&samples.FlagLate != 0:
			return late
		}
		return answered
	}
	if hasCapture && t[samples.CapReqHW]|t[samples.CapReqSW] != 0 && t[samples.CapRepHW]|t[samples.CapRepSW] == 0 {
		return lost
	}
	return answered
}

// population is the set of classes metric m is computed over: lateness
// charges every sent request (a stalled send is what it exists to show),
// rtt_from_due every reply, the others the answers within the timeout.
func population(m string) uint8 {
	switch m {
	case Lateness:
		return answered | late | lost
	case RTTFromDue:
		return answered | late
	}
	return answered
}

// afterWarmup returns the records with sequence ≥ w (records are sorted).
func afterWarmup(recs []samples.Record, w int) []samples.Record {
	start, _ := slices.BinarySearchFunc(recs, uint64(w), func(r samples.Record, s uint64) int {
		switch {
		case r.Seq < s:
			return -1
		case r.Seq > s:
			return 1
		}
		return 0
	})
	return recs[start:]
}

// pcapFile lists round directory dir's pcap file, once (a fan-out arm's
// responders share the round), whatever became of the round.
func (z *analyzer) pcapFile(dir string) {
	if dir == "" {
		return
	}
	path := filepath.Join(dir, rundir.PcapFile)
	rel, err := filepath.Rel(z.in.Run, path)
	if _, serr := os.Stat(path); err != nil || serr != nil || slices.Contains(z.rep.PcapFiles, rel) {
		return
	}
	z.rep.PcapFiles = append(z.rep.PcapFiles, rel)
}

// account counts what became of a round's requests after warm-up, the
// garbage its roles saw, and whether the round is incomplete (Rules.
// Incomplete): a sample file in expect missing, the sender stopped early,
// the responder or capture failed.
func account(j *samples.Joined, k, w int, expect []samples.Role) RoundAccount {
	ra := RoundAccount{Round: k, LeftOut: []string{}, Foreign: map[samples.Role]uint64{}, Malformed: map[samples.Role]uint64{}}
	hasSender := slices.Contains(j.Roles, samples.RoleSender)
	hasCapture := slices.Contains(j.Roles, samples.RoleCapture)
	recs := afterWarmup(j.Records, w)
	for i := range recs {
		switch classify(&recs[i], hasSender, hasCapture) {
		case answered:
			ra.Answered++
		case late:
			ra.Late++
		case lost:
			ra.Lost++
		case notSent:
			ra.NotSent++
		}
	}
	ra.Sent = ra.Answered + ra.Late + ra.Lost
	for _, r := range expect {
		if !slices.Contains(j.Roles, r) {
			name := samples.FileName(r)
			if r == samples.RoleResponder {
				name = samples.ResponderFileName(j.Responder)
			}
			ra.LeftOut = append(ra.LeftOut, name+" is missing")
		}
	}
	if s := j.Stopped[samples.RoleSender]; s != "" {
		ra.LeftOut = append(ra.LeftOut, "the sender stopped early ("+s+")")
	}
	for _, r := range []samples.Role{samples.RoleResponder, samples.RoleCapture} {
		if s := j.Stopped[r]; strings.HasPrefix(s, samples.StoppedFailed) {
			ra.LeftOut = append(ra.LeftOut, fmt.Sprintf("the %s %s", r, s))
		}
	}
	for r, c := range j.Counters {
		ra.Foreign[r], ra.Malformed[r] = c.Foreign, c.Malformed
		if r == samples.RoleCapture {
			ra.CaptureDrops = c.KernelDrops
		}
	}
	return ra
}

// lines are the problems and notes a round's accounting calls for: a round
// left out (with its counts), frames the capture's kernel dropped, and
// garbage on the wire.
func (ra *RoundAccount) lines(arm string) (problems, notes []string) {
	at := fmt.Sprintf("arm %q round %d", arm, ra.Round)
	if len(ra.LeftOut) > 0 {
		problems = append(problems, fmt.Sprintf("%s: left out of every statistic: %s; after warm-up %d sent, %d answered, %d late, %d lost, %d not sent",
			at, strings.Join(ra.LeftOut, "; "), ra.Sent, ra.Answered, ra.Late, ra.Lost, ra.NotSent))
	}
	if ra.CaptureDrops > 0 {
		problems = append(problems, fmt.Sprintf("%s: the capture's kernel dropped %d frames (receive buffer full): their sequences lack capture stamps", at, ra.CaptureDrops))
	}
	if f, m := roleCounts(ra.Foreign), roleCounts(ra.Malformed); f != "" || m != "" {
		notes = append(notes, fmt.Sprintf("%s: datagrams that were not this round's requests or replies (never samples): foreign %s, malformed %s",
			at, orNone(f), orNone(m)))
	}
	return problems, notes
}

// roleCounts renders the non-zero counts per role, "sender 3, capture 9".
func roleCounts(m map[samples.Role]uint64) string {
	var parts []string
	for _, r := range samples.Roles {
		if m[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, m[r]))
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// roundBufs are analyzeRound's per-request buffers, kept from round to
// round of a run: 17 bytes a request (17 MB for a round of a million),
// allocated once per run instead of once per round.
type roundBufs struct {
	class         []uint8
	vals, scratch []int64
}

// sized returns the buffers for n requests (contents undefined).
func (b *roundBufs) sized(n int) (class []uint8, vals, scratch []int64) {
	if cap(b.class) < n {
		b.class, b.vals, b.scratch = make([]uint8, n), make([]int64, n), make([]int64, n)
	}
	return b.class[:n], b.vals[:0], b.scratch[:n]
}

// analyzeRound computes every candidate source of every metric of one round.
func analyzeRound(j *samples.Joined, k, w int, accs map[string]map[string]*acc, opt Options, bufs *roundBufs) []string {
	hasSender := slices.Contains(j.Roles, samples.RoleSender)
	hasCapture := slices.Contains(j.Roles, samples.RoleCapture)
	var base Counts
	recs := afterWarmup(j.Records, w)
	class, vals, scratch := bufs.sized(len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Flags&samples.FlagDuplicate != 0 {
			base.Duplicated++
		}
		if r.Flags&samples.FlagReordered != 0 {
			base.Reordered++
		}
		class[i] = classify(r, hasSender, hasCapture)
		switch class[i] {
		case notSent:
			base.NotSent++
		case lost:
			base.Lost++
		case late:
			base.Late++
		}
	}
	var top []WorstSample
	var notes []string
	for _, m := range MetricNames {
		pop := population(m)
		members := 0
		for _, c := range class {
			if c&pop != 0 {
				members++
			}
		}
		for pos, src := range candidates(m, j) {
			vals = vals[:0]
			top = top[:0]
			c := base
			for i := range recs {
				if class[i]&pop == 0 {
					continue
				}
				v, got := src.Value(&recs[i])
				switch got {
				case valMissing:
					continue
				case valNegative:
					c.Negative++
					continue
				case valOverflow:
					c.Overflow++
					continue
				}
				vals = append(vals, v)
				if m == Headline {
					top = keepLargest(top, WorstSample{Round: k, Seq: recs[i].Seq, ValueNS: v, AtNS: int64(i)}, WorstSamples)
				}
			}
			if len(vals)+c.Negative+c.Overflow == 0 && members > 0 {
				// The header lists the clocks but no record has the stamps
				// (e.g. hardware RX granted, TX not): the source does not
				// exist in this round.
				notes = append(notes, fmt.Sprintf("round %d: %s source %s (%s) has a clock but no record carries its stamps; not used", k, m, src.Label, src.Formula))
				continue
			}
			if accs[m] == nil {
				accs[m] = map[string]*acc{}
			}
			a := accs[m][src.Label]
			if a == nil {
				h := hdrhistogram.New(1, histMax, 3)
				h.SetTag(tagSafe(m))
				a = &acc{src: src, first: pos, hist: h}
				accs[m][src.Label] = a
			}
			for _, v := range vals {
				if v < 0 || a.hist.RecordValue(v) != nil {
					a.dropped++
				}
			}
			c.N = len(vals)
			c.Missing = members - len(vals) - c.Negative - c.Overflow
			sortInt64(vals, scratch[:len(vals)])
			st := computeSorted(vals)
			if m == Headline {
				sr := thin(recs, class, pop, &src, k, opt.ScatterPoints, &st)
				warmup(&sr, j.Records[:len(j.Records)-len(recs)], hasSender, hasCapture, pop, &src)
				a.scatter = append(a.scatter, sr)
				for _, ws := range top {
					ws.At, ws.AtNS = realtimeStamp(j, &recs[ws.AtNS]) // AtNS held the record index
					a.worst = append(a.worst, ws)
				}
			}
			a.rounds = append(a.rounds, roundStats(k, c, &st))
		}
	}
	return notes
}

func roundStats(k int, c Counts, st *Stats) RoundStats {
	rs := RoundStats{Round: k, Counts: c, Percentiles: st.Percentiles, MinNS: st.MinNS, WorstNS: st.WorstNS}
	if rs.Percentiles == nil {
		rs.Percentiles = []PercentileStat{}
	}
	get := func(q Quantile) *int64 {
		if v, ok := st.Value(q); ok {
			return ptr(v)
		}
		return nil
	}
	rs.MedianNS, rs.P90NS, rs.P99NS, rs.P999NS, rs.P9999NS = get(P50), get(P90), get(P99), get(P999), get(P9999)
	return rs
}

// thin keeps the headline samples of one round for the scatter plot: all
// above the round's p99 (the tail is what the plot is for) and every
// stride-th of the others.
func thin(recs []samples.Record, class []uint8, pop uint8, src *Source, k, maxPoints int, st *Stats) ScatterRound {
	sr := ScatterRound{Round: k, Stride: 1}
	p99, ok := st.Value(P99)
	if !ok {
		return sr
	}
	sr.Stride = max(1, (st.N+maxPoints-1)/maxPoints)
	n := 0
	for i := range recs {
		if class[i]&pop == 0 {
			continue
		}
		v, got := src.Value(&recs[i])
		if got != valSample {
			continue
		}
		if v > p99 || n%sr.Stride == 0 {
			sr.Seq = append(sr.Seq, recs[i].Seq)
			sr.NS = append(sr.NS, v)
		}
		n++
	}
	return sr
}

// warmup adds the warm-up samples of the metric's population to sr.
func warmup(sr *ScatterRound, warm []samples.Record, hasSender, hasCapture bool, pop uint8, src *Source) {
	for i := range warm {
		if classify(&warm[i], hasSender, hasCapture)&pop == 0 {
			continue
		}
		if v, got := src.Value(&warm[i]); got == valSample {
			sr.WarmSeq = append(sr.WarmSeq, warm[i].Seq)
			sr.WarmNS = append(sr.WarmNS, v)
		}
	}
}

func tagSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ',' || r == ' ' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, s)
}

// summarize computes the across-round summary of per-round statistics.
func summarize(rounds []RoundStats) Summary {
	s := Summary{Undersampled: []string{}, CI: []CIEnvelope{}}
	col := func(f func(*RoundStats) *int64) *Spread {
		var v []int64
		for i := range rounds {
			if p := f(&rounds[i]); p != nil {
				v = append(v, *p)
			}
		}
		if sp, ok := SpreadOf(v); ok {
			return &sp
		}
		return nil
	}
	for i := range rounds {
		r := &rounds[i]
		if r.N > 0 {
			s.Rounds++
		}
		s.N += r.N
		s.Lost += r.Lost
		s.Late += r.Late
		s.Negative += r.Negative
		s.Overflow += r.Overflow
		s.NotSent += r.NotSent
		s.Duplicated += r.Duplicated
		s.Reordered += r.Reordered
		s.Missing += r.Missing
	}
	s.Median = col(func(r *RoundStats) *int64 { return r.MedianNS })
	s.P90 = col(func(r *RoundStats) *int64 { return r.P90NS })
	s.P99 = col(func(r *RoundStats) *int64 { return r.P99NS })
	s.P999 = col(func(r *RoundStats) *int64 { return r.P999NS })
	s.P9999 = col(func(r *RoundStats) *int64 { return r.P9999NS })
	s.Worst = col(func(r *RoundStats) *int64 { return r.WorstNS })
	for _, q := range Percentiles {
		qs := q.Percent()
		env := CIEnvelope{Q: qs}
		under, lowOpen, highOpen, counted := false, false, false, false
		for i := range rounds {
			if rounds[i].N == 0 {
				continue
			}
			counted = true
			for _, p := range rounds[i].Percentiles {
				if p.Q != qs {
					continue
				}
				under = under || p.Undersampled
				if p.CILowNS == nil {
					lowOpen = true
				} else if env.LowNS == nil || *p.CILowNS < *env.LowNS {
					env.LowNS = ptr(*p.CILowNS)
				}
				if p.CIHighNS == nil {
					highOpen = true
				} else if env.HighNS == nil || *p.CIHighNS > *env.HighNS {
					env.HighNS = ptr(*p.CIHighNS)
				}
			}
		}
		if !counted {
			continue
		}
		if under {
			s.Undersampled = append(s.Undersampled, qs)
		}
		if lowOpen {
			env.LowNS = nil
		}
		if highOpen {
			env.HighNS = nil
		}
		s.CI = append(s.CI, env)
	}
	return s
}

// armFreq is the measured frequency of the named arm, or nil.
func (r *Report) armFreq(name string) *ArmFreq {
	if a := r.Arm(name); a != nil {
		return a.Freq
	}
	return nil
}

// Arm returns the arm with the given name, or nil.
func (r *Report) Arm(name string) *ArmReport {
	for _, a := range r.Arms {
		if a.Name == name {
			return a
		}
	}
	return nil
}
