package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// TestSummaryCompared: the summary names the hosts (manifest and
// env/<host>.json) and, per arm, where each program ran (sample headers)
// and the headline's clock and count.
func TestSummaryCompared(t *testing.T) {
	rep, err := Run(goldenRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s.TimestampsRequested != "software" || len(s.Hosts) != 3 || len(s.Arms) != 2 {
		t.Fatalf("summary %+v", s)
	}
	// Sender first; facts from env/<host>.json, the interface the run used.
	for i, want := range []string{"sender", "responder", "capture"} {
		h := s.Hosts[i]
		if h.Name != want || h.EnvError != "" || h.Hostname != "vm" || h.Clocksource != "tsc" || len(h.CPUsOnline) != 2 ||
			len(h.NICs) != 1 || h.NICs[0].Driver != "veth" || h.NICs[0].Iface != genIface[samples.Role(want)] {
			t.Errorf("host %d: %+v", i, h)
		}
	}
	for i, a := range s.Arms {
		rsp, snd := a.Roles["responder"], a.Roles["sender"]
		mr := rep.Arms[i].Metrics[Headline]
		if a.RoundsUsed != 3 || a.RoundsOnDisk != 3 || rsp.CPU != []string{"2", "3"}[i] || rsp.Poll != "busy" || snd.CPU != "not pinned" ||
			a.Source != mr.Source || a.Clock != "CLOCK_REALTIME" || a.N != mr.Summary.N {
			t.Errorf("arm %s: %+v", a.Name, a)
		}
	}
	var md strings.Builder
	writeSummaryMD(&md, rep)
	for _, want := range []string{
		"| base | 3 of 3 | 2 | go, busy, other | go, block, not pinned | capture sw | CLOCK_REALTIME | 591 |",
		"| responder (responder; ip netns exec) | vm, 6.18.44-fc-v1147 | Intel(R) Xeon(R) Processor @ 2.60GHz | online 0-1; isolated —; nohz_full —; no SMT | tsc | rig-rsp0 veth 10000 Mb/s, no PHC |",
		"Timestamps requested: software.",
		noProblems,
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, md.String())
		}
	}
}

// TestSummaryHostEnvUnknown: a missing, damaged or error env/<host>.json
// is that host's EnvError and a line of the summary's problems, never a
// failure and never a problem of the run (rig report's exit code).
func TestSummaryHostEnvUnknown(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Rounds, spec.Events = 1, nil
	writeRun(t, dir, spec)
	env := filepath.Join(dir, rundir.EnvDir)
	if err := os.Remove(filepath.Join(env, "capture.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "sender.json"), []byte(`{"error": "agent sender: env: context deadline exceeded"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "responder.json"), []byte(`{"hostname": "rsp`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("problems %v", rep.Problems)
	}
	want := map[string]string{
		"sender":    "the snapshot could not be taken: agent sender: env: context deadline exceeded",
		"responder": "responder.json: damaged: unexpected end of JSON input",
		"capture":   "capture.json is missing",
	}
	for _, h := range rep.Summary.Hosts {
		if !strings.Contains(h.EnvError, want[h.Name]) {
			t.Errorf("host %s: env error %q, want %q", h.Name, h.EnvError, want[h.Name])
		}
	}
	lines, more := rep.summaryProblems(summaryProblemLines)
	if len(lines) != 3 || more != 0 || !strings.HasPrefix(lines[0], "Host sender: environment unknown (") {
		t.Fatalf("summary problems %q", lines)
	}
}

// TestSummaryVerdictSentences: each statistic lands in the group of its
// verdict with the reason, the baseline is named once, and the sentence
// carries the clock, the sample counts and the warm-up.
func TestSummaryVerdictSentences(t *testing.T) {
	sp := func(med int64, rounds int) *Spread {
		return &Spread{MedianNS: med, MinNS: med, MaxNS: med, Rounds: rounds}
	}
	no, yes := ptr(false), ptr(true)
	cs := []Comparison{
		{Metric: Turnaround, Stat: "median", Arm: "iso", Ref: "base", This: sp(6100, 5), RefValue: sp(9800, 5), Ratio: ptr(6100.0 / 9800), RangesOverlap: no, CIsOverlap: no, FalsePositive: ptr(0.0079), Verdict: VerdictReal},
		{Metric: Turnaround, Stat: "p99", Arm: "iso", Ref: "base", This: sp(9000, 5), RefValue: sp(9100, 5), Ratio: ptr(9000.0 / 9100), RangesOverlap: yes, Verdict: VerdictNoise},
		{Metric: Turnaround, Stat: "p99.9", Arm: "iso", Ref: "base", This: sp(20000, 5), RefValue: sp(21000, 5), Ratio: ptr(20000.0 / 21000), RangesOverlap: no, CIsOverlap: yes, Verdict: VerdictNoise},
		{Metric: Turnaround, Stat: "worst", Arm: "iso", Ref: "base", This: sp(50000, 2), RefValue: sp(90000, 2), Ratio: ptr(50000.0 / 90000), RangesOverlap: no, FalsePositive: ptr(1.0 / 3), Verdict: VerdictIndicative},
	}
	mr := &MetricReport{Source: "capture hw", Clock: "phc hw:eth1:phc0", Summary: Summary{Counts: Counts{N: 49990}, Rounds: 5}}
	ref := &MetricReport{Source: "capture hw", Clock: "phc hw:eth1:phc0", Summary: Summary{Counts: Counts{N: 49980}, Rounds: 5}}
	r := &Report{Baseline: "base", Headline: Turnaround, Rules: rules(1000), Arms: []*ArmReport{
		{Name: "base", Metrics: map[string]*MetricReport{Turnaround: ref}}, {Name: "iso", Metrics: map[string]*MetricReport{Turnaround: mr}}}}
	v, s := r.compareSentence("iso", Turnaround, mr, cs)
	want := "iso: turnaround median 6.10 µs vs 9.80 µs on base (-37.8 %) — a real difference (ranges and 95 % intervals apart, 5 rounds a side); " +
		"p99 9.00 µs vs 9.10 µs (-1.1 %) — within noise (ranges overlap); p99.9 20.00 µs vs 21.00 µs (-4.8 %) — within noise (95 % intervals overlap); " +
		"worst 50.00 µs vs 90.00 µs (-44.4 %) — indicative only (apart, but identical arms look this different 33 % of the time with 2 rounds a side) " +
		"(capture hw, phc hw:eth1:phc0; medians across 5 rounds a side of 49990 vs 49980 samples after warm-up W=1000)."
	if v != VerdictReal || s != want {
		t.Fatalf("verdict %q, sentence\n%s\nwant\n%s", v, s, want)
	}
	// A frequency difference (the comparisons carry it) closes the sentence.
	fq := "the CPU ran at 2000 MHz vs 3000 MHz on the baseline (-33 %, aperf/mperf): part of this difference may be frequency"
	for i := range cs {
		cs[i].Frequency = fq
	}
	if _, s := r.compareSentence("iso", Turnaround, mr, cs); s != strings.TrimSuffix(want, ".")+"; "+fq+"." {
		t.Fatalf("frequency: %s", s)
	}
	// Two statistics with one verdict and reason share it.
	cs[2].CIsOverlap, cs[2].RangesOverlap = nil, yes
	if _, s := r.compareSentence("iso", Turnaround, mr, cs); !strings.Contains(s, "p99 9.00 µs vs 9.10 µs (-1.1 %), p99.9 20.00 µs vs 21.00 µs (-4.8 %) — within noise (ranges overlap);") {
		t.Fatalf("not grouped: %s", s)
	}
	// Different clocks: nothing compared, both clocks named.
	other := *mr
	other.Source, other.Clock = "responder sw", "CLOCK_REALTIME"
	for i := range cs {
		cs[i].Verdict = VerdictClocks
	}
	if v, s := r.compareSentence("iso", Turnaround, &other, cs); v != VerdictClocks ||
		!strings.Contains(s, "not comparable with base — different clocks (responder sw on CLOCK_REALTIME, capture hw on phc hw:eth1:phc0)") {
		t.Fatalf("clocks: %q %s", v, s)
	}
}

// TestSummaryVerdictsPerArm: one sentence per arm, the baseline first,
// including skipped arms and arms whose headline was not computed.
func TestSummaryVerdictsPerArm(t *testing.T) {
	dir := t.TempDir()
	spec := genSpec{Arms: []string{"z-base", "a-iso", "skipped", "nocap"}, Rounds: 2, Count: 200, Warmup: 2, Seed: 3, Capture: true}
	writeRun(t, dir, spec)
	// The manifest skips one arm (it never ran: no directory).
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Baseline = "z-base"
	m.Arms[2].Skipped = "needs isolcpus"
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, rundir.ArmsDir, "skipped")); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range rep.Summary.Verdicts {
		got = append(got, v.Arm+"="+v.Verdict)
	}
	if len(got) != 4 || got[0] != "z-base=baseline" || got[2] != "skipped=skipped" {
		t.Fatalf("verdicts %v", got)
	}
	if s := rep.Summary.Verdicts[2].Sentence; s != "skipped: skipped — needs isolcpus." {
		t.Errorf("skipped: %q", s)
	}
	for _, v := range rep.Summary.Verdicts[1:] {
		if v.Arm != "skipped" && (v.Ref != "z-base" || !strings.Contains(v.Sentence, " on z-base (")) {
			t.Errorf("%s: %+v", v.Arm, v)
		}
	}
	// --metric rtt: the verdicts follow the metric.
	only, err := rep.Only(RTT)
	if err != nil {
		t.Fatal(err)
	}
	if v := only.Summary.Verdicts[1]; v.Metric != RTT || !strings.HasPrefix(v.Sentence, "a-iso: rtt median ") {
		t.Errorf("--metric rtt: %+v", v)
	}
	if rep.Summary.Verdicts[1].Metric != Turnaround {
		t.Error("Only changed the report it copied")
	}
	// An arm without the headline says why.
	rep.side.notComputed["nocap/"+Turnaround] = "no round has the stamps on one clock"
	delete(rep.Arm("nocap").Metrics, Turnaround)
	vs := rep.verdicts(Turnaround)
	if v := vs[3]; v.Verdict != SummaryNotComputed || v.Sentence != "nocap: turnaround not computed — no round has the stamps on one clock." {
		t.Errorf("not computed: %+v", v)
	}
}

// TestSummaryClockFallbacks: a software clock's note (hardware stamps
// requested and absent) is a problem line naming the arm and metrics; a
// descriptive note (due = start + k·interval) is not; a software headline
// in a run that asked for hardware is one too.
func TestSummaryClockFallbacks(t *testing.T) {
	note := "hardware RX stamps were requested on cap0, but none of the first 16 frames carried one: software stamps"
	ck := map[string]samples.Clock{"cap_req_sw": {Source: "sw", Note: note}, "cap_rep_sw": {Source: "sw", Note: note},
		"due": {Source: "user", Clock: "CLOCK_REALTIME", Note: "start + k·interval"}}
	j := joined(ck, samples.RoleCapture, samples.RoleSender)
	rep := analyzeJoined(t, j)
	want := []string{"Hardware RX stamps were requested on cap0, but none of the first 16 frames carried one: software stamps — arm a: turnaround (capture sw)."}
	if !slices.Equal(rep.Summary.ClockFallbacks, want) {
		t.Fatalf("fallbacks %q", rep.Summary.ClockFallbacks)
	}
	arm := InputArm{Name: "a", Rounds: []InputRound{{Load: func() (*samples.Joined, error) { return j, nil }}}}
	hw, err := Analyze(&Input{Run: "t", Warmup: 2, Timestamps: "hardware", Arms: []InputArm{arm}}, Options{})
	if got := hw.Summary.ClockFallbacks; err != nil || len(got) != 2 || got[1] != "Hardware timestamps were asked for (timestamps: hardware), but arm a's turnaround uses capture sw stamps (CLOCK_REALTIME)." {
		t.Fatalf("hardware asked: %v %q", err, got)
	}
	var html bytes.Buffer
	if err := WriteReportHTML(&html, rep, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "<h3>Problems of this run</h3>\n<ul class=\"problems\"><li>Hardware RX stamps were requested on cap0") {
		t.Fatalf("report.html does not list the fallback under the summary:\n%s", html.String())
	}
}

// TestSummaryProblemsCapped: the summary lists the first problems and
// points to the rest.
func TestSummaryProblemsCapped(t *testing.T) {
	r := &Report{Headline: Turnaround, Summary: RunSummary{ClockFallbacks: []string{"F."}}}
	for i := 0; i < summaryProblemLines+4; i++ {
		r.Problems = append(r.Problems, "arm \"a\" round 1: left out of every statistic: the sender stopped early (interrupted)")
	}
	lines, more := r.summaryProblems(summaryProblemLines)
	if len(lines) != summaryProblemLines+1 || more != 4 || lines[0] != "F." ||
		lines[1] != "Arm \"a\" round 1: left out of every statistic: the sender stopped early (interrupted)." {
		t.Fatalf("%d lines, %d more: %q", len(lines), more, lines)
	}
	var html bytes.Buffer
	if err := WriteReportHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "… and 4 more: <a href=\"#problems\">Problems</a>") || !strings.Contains(html.String(), "<h2 id=\"problems\">Problems</h2>") {
		t.Fatal("report.html does not point to the other problems")
	}
}

// TestHTMLCells: a "median [min–max]" cell wraps between its two parts,
// text is left-aligned, numbers right.
func TestHTMLCells(t *testing.T) {
	for in, want := range map[string]string{
		"48.03 [48.03–51.13] †":                  `<td><span class="v">48.03 †</span> <span class="rng">[48.03–51.13]</span></td>`,
		"3.90":                                   `<td>3.90</td>`,
		"capture sw":                             `<td class="t s">capture sw</td>`,
		"left out: responder.samples is missing": `<td class="t">left out: responder.samples is missing</td>`,
		"a<b":                                    `<td class="t s">a&lt;b</td>`,
	} {
		if got := string(htmlCell(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}
