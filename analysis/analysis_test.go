package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

func hwClock(iface string, phc int) samples.Clock {
	return samples.Clock{Source: "hw", Clock: "phc", Iface: iface, PHCIndex: phc}
}

// joined builds a round with the given clocks; every record carries every
// stamp (value = base + offset per stamp) so only the clocks decide.
func joined(clocks map[string]samples.Clock, roles ...samples.Role) *samples.Joined {
	j := &samples.Joined{Clocks: clocks, Roles: roles}
	for _, r := range roles {
		for _, s := range samples.ColumnsFor(r) {
			j.Present[s] = true
		}
	}
	for i := 0; i < 50; i++ {
		var rec samples.Record
		rec.Seq = uint64(i)
		for s := samples.Stamp(0); s < samples.NumStamps; s++ {
			rec.T[s] = 1_000_000 + int64(s)*1000 + int64(i)
		}
		j.Records = append(j.Records, rec)
	}
	return j
}

func analyzeJoined(t *testing.T, rounds ...*samples.Joined) *Report {
	t.Helper()
	arm := InputArm{Name: "a"}
	for k, j := range rounds {
		arm.Rounds = append(arm.Rounds, InputRound{K: k, Load: func() (*samples.Joined, error) { return j, nil }})
	}
	rep, err := Analyze(&Input{Run: "t", Warmup: 2, Arms: []InputArm{arm}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSourceSelection(t *testing.T) {
	all := []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture}
	hw := map[string]samples.Clock{
		"tx_hw": hwClock("eth1", 0), "rx_hw": hwClock("eth1", 0),
		"req_rx_hw": hwClock("eth2", 1), "rep_tx_hw": hwClock("eth2", 1),
		"req_rx_sw": {Source: "sw"}, "rep_tx_sw": {Source: "sw"}, "tx_sw": {Source: "sw"}, "rx_sw": {Source: "sw"},
	}
	// No capture clocks: the responder NIC wins; network = rtt hw − turnaround hw.
	rep := analyzeJoined(t, joined(hw, all...))
	a := rep.Arm("a")
	if got := a.Metrics[Turnaround].Source; got != "responder hw" {
		t.Fatalf("turnaround source %q", got)
	}
	if got := a.Metrics[RTT].Source; got != "sender hw" {
		t.Fatalf("rtt source %q", got)
	}
	nw := a.Metrics[Network]
	if nw == nil || nw.Source != "sender hw − responder hw" {
		t.Fatalf("network %+v", nw)
	}
	// value: (rx_hw − tx_hw) − (rep_tx_hw − req_rx_hw) = (10−3)·1000 − (9−4)·1000
	if *nw.Rounds[0].MedianNS != 2000 {
		t.Fatalf("network median %d", *nw.Rounds[0].MedianNS)
	}
	// rtt_from_due must not pair due (CLOCK_REALTIME) with rx_hw (PHC).
	if got := a.Metrics[RTTFromDue].Source; got != "sender user→sw" {
		t.Fatalf("rtt_from_due source %q", got)
	}

	// With capture clocks the capture wins.
	hwc := map[string]samples.Clock{"cap_req_hw": hwClock("eth3", 2), "cap_rep_hw": hwClock("eth3", 2)}
	for k, v := range hw {
		hwc[k] = v
	}
	if got := analyzeJoined(t, joined(hwc, all...)).Arm("a").Metrics[Turnaround].Source; got != "capture hw" {
		t.Fatalf("with capture: %q", got)
	}

	// Sender TX and RX stamps on two different PHCs are not one clock: rtt
	// falls back to software, and network is not computed.
	mixed := map[string]samples.Clock{}
	for k, v := range hw {
		mixed[k] = v
	}
	mixed["rx_hw"] = hwClock("eth9", 5)
	rep = analyzeJoined(t, joined(mixed, all...))
	if got := rep.Arm("a").Metrics[RTT].Source; got != "sender sw" {
		t.Fatalf("mixed PHCs: rtt source %q", got)
	}
	if rep.Arm("a").Metrics[Network] != nil {
		t.Fatal("network computed without hardware rtt")
	}

	// One round without capture: the arm uses the responder for every round
	// rather than mixing clocks across rounds.
	rep = analyzeJoined(t, joined(hwc, all...), joined(hw, all...))
	mr := rep.Arm("a").Metrics[Turnaround]
	if mr.Source != "responder hw" || len(mr.Rounds) != 2 {
		t.Fatalf("rounds with different clocks: %q, %d rounds", mr.Source, len(mr.Rounds))
	}
}

// A record lacking a stamp the source needs is missing, never filled in
// from another clock.
func TestMissingNotFilled(t *testing.T) {
	ck := map[string]samples.Clock{"cap_req_sw": {Source: "sw"}, "cap_rep_sw": {Source: "sw"}, "req_rx_sw": {Source: "sw"}, "rep_tx_sw": {Source: "sw"}, "rx_sw": {Source: "sw"}, "tx_sw": {Source: "sw"}}
	j := joined(ck, samples.RoleSender, samples.RoleResponder, samples.RoleCapture)
	j.Records[10].T[samples.CapRepSW] = 0
	j.Records[11].T[samples.CapReqSW] = 0
	rs := analyzeJoined(t, j).Arm("a").Metrics[Turnaround]
	if rs.Source != "capture sw" || rs.Rounds[0].Missing != 2 || rs.Rounds[0].N != 46 {
		t.Fatalf("%s %+v", rs.Source, rs.Rounds[0].Counts)
	}
}

func TestMalformedRunDir(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	// Truncate base round 1's sender file in the middle of the records.
	snd := filepath.Join(rundir.RoundDir(dir, "base", 1), samples.FileName(samples.RoleSender))
	b, err := os.ReadFile(snd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snd, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// Garbage in isolated round 2's responder file.
	bad := filepath.Join(rundir.RoundDir(dir, "isolated", 2), samples.FileName(samples.RoleResponder))
	if err := os.WriteFile(bad, []byte("not a sample file"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A broken manifest.
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"bad manifest", snd, bad, "truncated", "round skipped"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems do not mention %q:\n%s", want, probs)
		}
	}
	if len(rep.Arms) != 2 || rep.Baseline != "base" {
		t.Fatalf("arms %v baseline %q", rep.armNames(), rep.Baseline)
	}
	if got := rep.Arm("isolated").Rounds; len(got) != 2 {
		t.Fatalf("isolated rounds %v, want 0 and 1", got)
	}
	// The truncated round still reports its complete records.
	r1 := rep.Arm("base").Metrics[RTT].Rounds[1]
	if r1.Round != 1 || r1.N == 0 || r1.N >= spec.Count-spec.Warmup {
		t.Fatalf("truncated round %+v", r1.Counts)
	}
	// Sequences cut from the sender file are not "lost": the capture saw
	// both packets, so the turnaround keeps them and rtt counts them missing.
	if r1.Lost != 0 || r1.Missing != spec.Count-spec.Warmup-r1.N {
		t.Fatalf("truncated sender file: rtt %+v", r1.Counts)
	}
	if ta := rep.Arm("base").Metrics[Turnaround].Rounds[1]; ta.N != spec.Count-spec.Warmup || ta.Lost != 0 {
		t.Fatalf("truncated sender file: turnaround %+v", ta.Counts)
	}
	// Every output still renders, and the problems are printed.
	var md bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Problems") || !strings.Contains(md.String(), bad) {
		t.Fatal("tables.md does not list the bad file")
	}
	if err := WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}

	// A directory with no arms is an error that says so.
	if _, err := Run(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no arms") {
		t.Fatalf("empty dir: %v", err)
	}
}

func TestWriteAllAndHistLog(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, goldenSpec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{TablesMD, TablesCSV, ReportJSON, ReportMD, ReportHTML, HistLog,
		"plots/percentiles-turnaround.svg", "plots/percentiles-turnaround.png", "plots/turnaround-over-time-round-2.png", "plots/turnaround-over-time-round-0.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// report.json round-trips and carries the documented fields.
	var js struct {
		FormatVersion int `json:"format_version"`
		Arms          []struct {
			Name    string
			Metrics map[string]struct {
				Source string
				Rounds []map[string]any
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if js.FormatVersion != FormatVersion || len(js.Arms) != 2 || js.Arms[0].Metrics["turnaround"].Source != "capture sw" {
		t.Fatalf("report.json: %+v", js)
	}
	for _, k := range []string{"n", "lost", "median_ns", "p99_ns", "p999_ns", "worst_ns"} {
		if _, ok := js.Arms[0].Metrics["turnaround"].Rounds[0][k]; !ok {
			t.Errorf("report.json rounds[] lacks %q", k)
		}
	}
	// hist.hlog reads back with the HdrHistogram log reader: one histogram
	// per arm × metric, tagged arm/metric, counting every sample.
	f, err := os.Open(filepath.Join(dir, HistLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := hdrhistogram.NewHistogramLogReader(f)
	got := map[string]int64{}
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		got[h.Tag()] = h.TotalCount()
	}
	for _, a := range rep.Arms {
		for m, mr := range a.Metrics {
			if got[a.Name+"/"+m] != int64(mr.Summary.N)-mr.HistDropped {
				t.Errorf("hlog %s/%s count %d, want %d", a.Name, m, got[a.Name+"/"+m], mr.Summary.N)
			}
		}
	}
	if len(got) != 14 { // 7 metrics (no network on sw clocks) × 2 arms
		t.Errorf("hlog has %d histograms: %v", len(got), got)
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportMD))
	if !strings.Contains(string(md), "](plots/percentiles-turnaround.svg)") || !strings.Contains(string(md), "No round carries telemetry.json") {
		t.Fatal("report.md lacks plots or the telemetry section")
	}
}

func TestTelemetryHook(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Rounds = 1
	writeRun(t, dir, spec)
	if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, "base", 0), rundir.Telemetry), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []*TelemetryArm
	rep, err := Run(dir, Options{Telemetry: func(a *TelemetryArm) ([]TelemetryBlock, error) {
		got = append(got, a)
		return []TelemetryBlock{{Text: "stress-ng on CPU 3 for 12 ms"}, {Text: "cap", Head: []string{"a", "b"}, Rows: [][]string{{"x|y", "1"}}}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The hook is called once per arm (the run has telemetry), with the
	// arm's rounds and its worst headline samples, largest first.
	if rep.TelemetryFiles != 1 || len(got) != 2 || got[0].Arm != "base" || len(got[0].Rounds) != 1 || got[0].Source != "capture sw" {
		t.Fatalf("hook calls: %d files, %+v", rep.TelemetryFiles, got)
	}
	w := got[0].Worst
	if len(w) != WorstSamples || w[0].ValueNS < w[len(w)-1].ValueNS || w[0].At != "req_rx_sw" || w[0].AtNS == 0 {
		t.Fatalf("worst: %+v", w)
	}
	if w[0].ValueNS != *rep.Arm("base").Metrics[Headline].Rounds[0].WorstNS {
		t.Fatalf("worst[0] %d, table worst %d", w[0].ValueNS, *rep.Arm("base").Metrics[Headline].Rounds[0].WorstNS)
	}
	var b bytes.Buffer
	if err := WriteReportMD(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "### base\n\nstress-ng on CPU 3 for 12 ms\n\ncap\n\n| a | b |\n|---|---|\n| x\\|y | 1 |") {
		t.Fatalf("telemetry section:\n%s", b.String())
	}
	b.Reset()
	if err := WriteReportHTML(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<h3>base</h3>\n<p>stress-ng on CPU 3 for 12 ms</p>") || !strings.Contains(b.String(), "<td>x|y</td>") {
		t.Fatalf("telemetry section in HTML:\n%s", b.String())
	}
	// A failing hook is a problem, not an error.
	rep, err = Run(dir, Options{Telemetry: func(*TelemetryArm) ([]TelemetryBlock, error) { return nil, errors.New("boom") }})
	if err != nil || len(rep.Telemetry) != 0 || !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, "boom") }) {
		t.Fatalf("failing hook: %v %v", err, rep.Problems)
	}
}

func TestCompare(t *testing.T) {
	mk := func(src string, rounds ...[2]int64) *MetricReport { // (median, p99.9) per round
		var rs []RoundStats
		for k, v := range rounds {
			rs = append(rs, RoundStats{Round: k, Counts: Counts{N: 10000}, MedianNS: ptr(v[0]), P99NS: ptr(v[0]), P999NS: ptr(v[1]), WorstNS: ptr(v[1] + 1),
				Percentiles: []PercentileStat{
					{Q: "50", ValueNS: v[0], CILowNS: ptr(v[0] - 10), CIHighNS: ptr(v[0] + 10)},
					{Q: "99", ValueNS: v[0], CILowNS: ptr(v[0] - 10), CIHighNS: ptr(v[0] + 10)},
					{Q: "99.9", ValueNS: v[1], CILowNS: ptr(v[1] - 100), CIHighNS: nil, Undersampled: true}}})
		}
		return &MetricReport{Source: src, Rounds: rs, Summary: summarize(rs)}
	}
	base := mk("capture hw", [2]int64{1000, 5000}, [2]int64{1010, 5100}, [2]int64{1005, 5050})
	far := mk("capture hw", [2]int64{2000, 9000}, [2]int64{2010, 9100}, [2]int64{2005, 9050})
	near := mk("capture hw", [2]int64{1008, 5000}, [2]int64{1030, 5100}, [2]int64{1020, 5050})
	other := mk("responder sw", [2]int64{2000, 9000}, [2]int64{2010, 9100}, [2]int64{2005, 9050})
	verdicts := func(cs []Comparison) map[string]string {
		m := map[string]string{}
		for _, c := range cs {
			m[c.Stat] = c.Verdict
		}
		return m
	}
	// 3 rounds a side: the worst ranges are disjoint, but identical arms'
	// are 10 % of the time: indicative. The median's intervals decide.
	v := verdicts(compareMetric(Turnaround, "far", "base", far, base))
	if v["median"] != VerdictReal || v["p99.9"] != VerdictUndersampled || v["worst"] != VerdictIndicative {
		t.Fatalf("far: %v", v)
	}
	if c := compareMetric(Turnaround, "far", "base", far, base)[3]; c.Stat != "worst" || c.FalsePositive == nil || *c.FalsePositive != 0.1 {
		t.Fatalf("worst false-positive rate with 3 and 3 rounds: %+v", c)
	}
	// 5 rounds a side: 0.79 %, a verdict.
	base5 := mk("capture hw", [2]int64{1000, 5000}, [2]int64{1010, 5100}, [2]int64{1005, 5050}, [2]int64{1001, 5070}, [2]int64{1002, 5020})
	far5 := mk("capture hw", [2]int64{2000, 9000}, [2]int64{2010, 9100}, [2]int64{2005, 9050}, [2]int64{2001, 9070}, [2]int64{2002, 9020})
	if v := verdicts(compareMetric(Turnaround, "far", "base", far5, base5)); v["worst"] != VerdictReal || v["median"] != VerdictReal {
		t.Fatalf("far, 5 rounds: %v", v)
	}
	c := compareMetric(Turnaround, "far", "base", far, base)[0]
	if *c.DeltaNS != 1000 || *c.Ratio < 1.99 || *c.Ratio > 2.0 {
		t.Fatalf("delta %d ratio %f", *c.DeltaNS, *c.Ratio)
	}
	if v := verdicts(compareMetric(Turnaround, "near", "base", near, base)); v["median"] != VerdictNoise || v["worst"] != VerdictNoise {
		t.Fatalf("near: %v", v)
	}
	if v := verdicts(compareMetric(Turnaround, "other", "base", other, base)); v["median"] != VerdictClocks {
		t.Fatalf("different sources: %v", v)
	}
	if v := verdicts(compareMetric(Turnaround, "x", "base", nil, base)); v["median"] != VerdictNoData {
		t.Fatalf("no data: %v", v)
	}
	// One round a side: any two values have disjoint ranges (rate 1), and
	// disjoint intervals of one round each happen up to 10 % of the time.
	one := mk("capture hw", [2]int64{1000, 5000})
	one2 := mk("capture hw", [2]int64{3000, 9000})
	if v := verdicts(compareMetric(Turnaround, "x", "base", one2, one)); v["worst"] != VerdictIndicative || v["median"] != VerdictIndicative {
		t.Fatalf("one round: %v", v)
	}
}

func TestCompareRuns(t *testing.T) {
	da, db := t.TempDir(), t.TempDir()
	writeRun(t, da, goldenSpec)
	spec := goldenSpec
	spec.Arms = []string{"base", "other"}
	writeRun(t, db, spec)
	ra, _ := Run(da, Options{})
	rb, _ := Run(db, Options{})
	cs, notes := CompareRuns(ra, rb)
	for _, c := range cs {
		if c.Arm != "base" {
			t.Fatalf("compared arm %q", c.Arm)
		}
		if c.Stat == "median" && c.Metric == Turnaround && *c.DeltaNS != 0 {
			t.Fatalf("same data, delta %d", *c.DeltaNS)
		}
	}
	if len(notes) != 2 {
		t.Fatalf("notes %v", notes)
	}
	var b bytes.Buffer
	if err := WriteComparisonMD(&b, ra, rb, cs, notes); err != nil || !strings.Contains(b.String(), `arm "other" is only in`) {
		t.Fatalf("%v\n%s", err, b.String())
	}
	// The CSV form: the header, then one row per comparison whose cells
	// are the comparison's integer ns.
	b.Reset()
	if err := WriteComparisonCSV(&b, ra.Run, rb.Run, cs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != len(cs)+1 || !slices.Equal(rows[0], ComparisonCSVHeader) {
		t.Fatalf("CSV: %v, %d rows for %d comparisons, header %q", err, len(rows), len(cs), rows[0])
	}
	col := func(name string) int { return slices.Index(ComparisonCSVHeader, name) }
	for i, c := range cs {
		r := rows[i+1]
		if r[col("metric")] != c.Metric || r[col("stat")] != c.Stat || r[col("verdict")] != c.Verdict || r[col("run_ref")] != ra.Run {
			t.Fatalf("row %d %q for %+v", i, r, c)
		}
		if c.This != nil && r[col("this_median_ns")] != strconv.FormatInt(c.This.MedianNS, 10) {
			t.Fatalf("row %d this_median_ns %q, want %d", i, r[col("this_median_ns")], c.This.MedianNS)
		}
		if c.DeltaNS == nil && r[col("delta_ns")] != "" || c.DeltaNS != nil && r[col("delta_ns")] != strconv.FormatInt(*c.DeltaNS, 10) {
			t.Fatalf("row %d delta_ns %q", i, r[col("delta_ns")])
		}
	}
}

func TestOnly(t *testing.T) {
	rep, err := Run(goldenRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := rep.Only(RTT)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteTablesMD(&b, o)
	if strings.Contains(b.String(), "## turnaround") || !strings.Contains(b.String(), "## rtt") {
		t.Fatal("--metric rtt output")
	}
	if _, err := rep.Only("bogus"); err == nil || !strings.Contains(err.Error(), "known: turnaround") {
		t.Fatalf("bogus metric: %v", err)
	}
}

// FuzzRoundFile feeds arbitrary bytes as a round's sample file (decoded by
// the sample reader, joined) through the whole analysis and every writer: whatever the sample reader accepts (any
// stamps, flags, sequences) must produce a report, not a panic.
func FuzzRoundFile(f *testing.F) {
	var seed bytes.Buffer
	snd, _, _ := genRound(genSpec{Arms: []string{"a"}, Count: 30, Warmup: 2, Seed: 1}, 0, 0)
	snd[3].T[samples.RxSW] = -5
	snd[4].T[samples.TxSW] = 1 << 62
	snd[5].T[samples.TxSW], snd[5].T[samples.RxSW] = math.MaxInt64, -math.MaxInt64
	h := samples.Header{Role: samples.RoleSender, RunID: "00000000000000aa", Warmup: 2, Clocks: clockMap(samples.TxSW, samples.RxSW)}
	if err := samples.Write(&seed, h, snd, samples.Footer{}); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add(seed.Bytes()[:seed.Len()/2])
	f.Add([]byte("RIGSMPL\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		load := func() (*samples.Joined, error) {
			sf, err := samples.Read(bytes.NewReader(data))
			if sf == nil {
				return nil, err
			}
			return samples.JoinResponder(0, sf)
		}
		in := &Input{Run: "fuzz", Warmup: -1, Baseline: "a", Arms: []InputArm{
			{Name: "a", Rounds: []InputRound{{K: 0, Load: load}}},
			{Name: "b", Rounds: []InputRound{{K: 0, Load: load}, {K: 1, Load: load}}}}}
		rep, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, w := range []func(*bytes.Buffer, *Report) error{
			func(b *bytes.Buffer, r *Report) error { return WriteTablesMD(b, r) },
			func(b *bytes.Buffer, r *Report) error { return WriteTablesCSV(b, r) },
			func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) },
			func(b *bytes.Buffer, r *Report) error { return WriteHistLog(b, r) },
		} {
			if err := w(&b, rep); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A clock listed in the header whose stamps no record carries (hardware RX
// granted but not TX) is not a source: the next best one is used and a note
// says why.
func TestListedClockWithoutStamps(t *testing.T) {
	ck := map[string]samples.Clock{
		"req_rx_hw": hwClock("eth2", 1), "rep_tx_hw": hwClock("eth2", 1),
		"req_rx_sw": {Source: "sw"}, "rep_tx_sw": {Source: "sw"},
	}
	j := joined(ck, samples.RoleResponder)
	for i := range j.Records {
		j.Records[i].T[samples.RepTxHW] = 0
	}
	rep := analyzeJoined(t, j)
	if got := rep.Arm("a").Metrics[Turnaround].Source; got != "responder sw" {
		t.Fatalf("source %q", got)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "responder hw (rep_tx_hw − req_rx_hw) has a clock but no record carries its stamps") {
		t.Fatalf("notes %q", rep.Notes)
	}
}

// TestThreadsTable: the measuring threads' usage from the footers reaches
// the report per round (rounds without it are left out) and tables.md.
func TestThreadsTable(t *testing.T) {
	with := joined(map[string]samples.Clock{}, samples.RoleSender, samples.RoleResponder)
	with.Threads = map[samples.Role]samples.ThreadUsage{
		samples.RoleSender:    {WallNS: 4e9, CPUNS: 1e9, Voluntary: 4000, Involuntary: 800},
		samples.RoleResponder: {WallNS: 4e9, CPUNS: 3.96e9, Involuntary: 40},
	}
	without := joined(map[string]samples.Clock{}, samples.RoleSender, samples.RoleResponder)
	rep := analyzeJoined(t, with, without)
	a := rep.Arms[0]
	if len(a.Threads) != 1 || a.Threads[0].Round != 0 || a.Threads[0].Sender == nil || a.Threads[0].Responder.Involuntary != 40 {
		t.Fatalf("threads %+v: want round 0 only, both sides", a.Threads)
	}
	var md bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	if want := "| a | 0 | 25.0 % | 200 | 1000 | 99.0 % | 10 | 0 |"; !strings.Contains(md.String(), want) {
		t.Errorf("tables.md lacks %q:\n%s", want, md.String())
	}
	rep = analyzeJoined(t, without)
	md.Reset()
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Measuring threads") {
		t.Error("a run without thread figures must not get an empty Measuring threads section")
	}
}

// TestFallbackNoteInCaption: a capture whose hardware stamps were asked
// for and never came is analysed on its software column, and every table
// says so.
func TestFallbackNoteInCaption(t *testing.T) {
	note := "hardware RX stamps were requested on cap0, but none of the first 16 frames carried one: software stamps"
	ck := map[string]samples.Clock{"cap_req_sw": {Source: "sw", Note: note}, "cap_rep_sw": {Source: "sw", Note: note}}
	rep := analyzeJoined(t, joined(ck, samples.RoleCapture))
	mr := rep.Arm("a").Metrics[Turnaround]
	if mr == nil || mr.Source != "capture sw" || mr.Note != note {
		t.Fatalf("turnaround %+v", mr)
	}
	var b strings.Builder
	mt := metricTable(rep, Turnaround)
	mt.md(&b)
	if !strings.Contains(b.String(), "Arm a, source capture sw: "+note) {
		t.Fatalf("caption lacks the note:\n%s", b.String())
	}
}

// TestReflectorFloorSource: a round the reflector answered (rig respond
// --engine xdp: a responder file with counts, no stamps) takes its
// turnaround from the capture, labelled as the floor, never from a
// responder stamp; without a capture it has none.
func TestReflectorFloorSource(t *testing.T) {
	ck := map[string]samples.Clock{"cap_req_sw": {Source: "sw"}, "cap_rep_sw": {Source: "sw"}, "rx_sw": {Source: "sw"}, "tx_sw": {Source: "sw"}}
	reflected := func(ck map[string]samples.Clock, roles ...samples.Role) *samples.Joined {
		j := joined(ck, roles...)
		j.Present[samples.ReqRxUser], j.Present[samples.RepTxUser] = false, false // the reflector's file lists no user columns
		j.Headers = map[samples.Role]samples.Header{samples.RoleResponder: {Role: samples.RoleResponder, Settings: map[string]any{"engine": "xdp"}}}
		return j
	}
	a := analyzeJoined(t, reflected(ck, samples.RoleSender, samples.RoleResponder, samples.RoleCapture)).Arm("a")
	m := a.Metrics[Turnaround]
	if m == nil || m.Source != "reflector floor: capture sw" || !strings.Contains(m.Note, "reflector (--engine xdp): it takes no stamps") {
		t.Fatalf("turnaround %+v", m)
	}
	if a.Metrics[KernelToUser] != nil || a.Metrics[UserProcessing] != nil {
		t.Errorf("a responder metric computed for the reflector: %+v %+v", a.Metrics[KernelToUser], a.Metrics[UserProcessing])
	}
	delete(ck, "cap_req_sw")
	delete(ck, "cap_rep_sw")
	if m := analyzeJoined(t, reflected(ck, samples.RoleSender, samples.RoleResponder)).Arm("a").Metrics[Turnaround]; m != nil {
		t.Errorf("the reflector without a capture has a turnaround: %+v", m)
	}
}

// TestPcapFilesListed: the rounds' capture.pcap files are in report.json
// and report.md, relative to the run directory; a run without any lists
// none.
func TestPcapFilesListed(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Rounds = 2
	writeRun(t, dir, spec)
	rep, err := Run(dir, Options{})
	if err != nil || rep.PcapFiles != nil {
		t.Fatalf("without pcap files: %v, %v", rep.PcapFiles, err)
	}
	if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, "base", 1), rundir.PcapFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err = Run(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"arms/base/round-1/capture.pcap"}; !slices.Equal(rep.PcapFiles, want) {
		t.Fatalf("pcap_files %v, want %v", rep.PcapFiles, want)
	}
	var b bytes.Buffer
	if err := WriteReportMD(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "## Packet captures\n\nThe capture's frames as pcap (one file a round, 1 in all)") || !strings.Contains(b.String(), "- arms/base/round-1/capture.pcap\n") {
		t.Fatalf("report.md:\n%s", b.String())
	}
	b.Reset()
	if err := WriteReportHTML(&b, rep, nil); err != nil || !strings.Contains(b.String(), "<li>arms/base/round-1/capture.pcap</li>") {
		t.Fatalf("report.html (%v) lacks the pcap file", err)
	}
}
