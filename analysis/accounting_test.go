package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// rewrite replaces one role's sample file of a round with edited records
// and footer.
func rewrite(t *testing.T, dir, arm string, k int, role samples.Role, edit func(recs []samples.Record, f *samples.Footer)) {
	t.Helper()
	p := filepath.Join(rundir.RoundDir(dir, arm, k), samples.FileName(role))
	f, err := samples.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edit(f.Records, f.Footer)
	if err := samples.WriteFile(p, f.Header, f.Records, *f.Footer); err != nil {
		t.Fatal(err)
	}
}

func hasLine(lines []string, parts ...string) bool {
	return slices.ContainsFunc(lines, func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	})
}

// TestIncompleteRounds: a Ctrl-C'd round, a round whose responder was
// killed (no responder.samples), a round whose capture failed and a round
// without capture.samples in a run with a capture are left out of every
// statistic, listed as problems with their counts, shown in the Rounds
// table, and the header says the run was interrupted.
func TestIncompleteRounds(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	spec.Rounds = 4
	writeRun(t, dir, spec)
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Interrupted = "arm base round 3: interrupt"
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	// base round 3: Ctrl-C after 120 of 200 requests.
	rewrite(t, dir, "base", 3, samples.RoleSender, func(recs []samples.Record, f *samples.Footer) {
		for i := 120; i < len(recs); i++ {
			recs[i].Flags |= samples.FlagNotSent
			recs[i].T = [samples.NumStamps]int64{samples.Due: recs[i].T[samples.Due]}
		}
		f.Stopped = "interrupted: interrupt"
	})
	// isolated round 1: the responder was killed at seq 50: no file, and
	// the sender saw no reply from then on.
	if err := os.Remove(filepath.Join(rundir.RoundDir(dir, "isolated", 1), samples.FileName(samples.RoleResponder))); err != nil {
		t.Fatal(err)
	}
	rewrite(t, dir, "isolated", 1, samples.RoleSender, func(recs []samples.Record, f *samples.Footer) {
		for i := 50; i < len(recs); i++ {
			recs[i].T[samples.RxSW], recs[i].T[samples.RxUser] = 0, 0
		}
	})
	// isolated round 2: the capture failed; isolated round 3: no capture file.
	rewrite(t, dir, "isolated", 2, samples.RoleCapture, func(recs []samples.Record, f *samples.Footer) {
		f.Stopped = "failed: capture recvmsg: network is down"
	})
	if err := os.Remove(filepath.Join(rundir.RoundDir(dir, "isolated", 3), samples.FileName(samples.RoleCapture))); err != nil {
		t.Fatal(err)
	}
	// The responder's "interrupted" is how every round ends: base round 0
	// stays in.
	rewrite(t, dir, "base", 0, samples.RoleResponder, func(recs []samples.Record, f *samples.Footer) {
		f.Stopped = "interrupted: interrupt"
	})

	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Arm("base").Rounds; !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("base rounds analysed %v, want 0 1 2", got)
	}
	if got := rep.Arm("isolated").Rounds; !slices.Equal(got, []int{0}) {
		t.Errorf("isolated rounds analysed %v, want 0", got)
	}
	for _, a := range rep.Arms {
		for name, mr := range a.Metrics {
			if len(mr.Rounds) != len(a.Rounds) || mr.Summary.Lost != 0 || mr.Summary.NotSent != 0 {
				t.Errorf("%s %s: %d rounds, summary %+v: an incomplete round got in", a.Name, name, len(mr.Rounds), mr.Summary.Counts)
			}
		}
	}
	for _, want := range [][]string{
		{"the run was interrupted (arm base round 3: interrupt)"},
		{`arm "base" round 3: left out of every statistic`, "the sender stopped early (interrupted: interrupt)", "118 sent", "118 answered", "80 not sent"},
		{`arm "isolated" round 1: left out of every statistic`, "responder.samples is missing", "198 sent", "48 answered", "150 lost"},
		{`arm "isolated" round 2: left out`, "the capture failed: capture recvmsg: network is down"},
		{`arm "isolated" round 3: left out`, "capture.samples is missing"},
	} {
		if !hasLine(rep.Problems, want...) {
			t.Errorf("no problem with %q in:\n%s", want, strings.Join(rep.Problems, "\n"))
		}
	}
	if hasLine(rep.Problems, `arm "base" round 0`) {
		t.Errorf("the responder's normal stop was taken for a failure:\n%s", strings.Join(rep.Problems, "\n"))
	}
	acct := rep.Arm("isolated").Accounting
	if len(acct) != 4 || len(acct[0].LeftOut) != 0 || acct[1].Lost != 150 || len(acct[1].LeftOut) != 1 {
		t.Errorf("isolated accounting %+v", acct)
	}
	var md bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**The run was interrupted** (arm base round 3: interrupt).",
		"**4 round(s) left out of every table**: base round 3, isolated round 1, isolated round 2, isolated round 3",
		"| isolated | 1 | left out: responder.samples is missing | 198 | 48 | 0 | 150 | 0 |",
		"| base | 0 | yes | 198 | 198 | 0 | 0 | 0 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("tables.md lacks %q:\n%s", want, md.String())
		}
	}
	var html bytes.Buffer
	if err := WriteReportHTML(&html, rep, nil); err != nil || !strings.Contains(html.String(), "<b>The run was interrupted</b>") {
		t.Errorf("report.html does not say the run was interrupted (%v)", err)
	}
}

// TestMissingSenderNamed: a round without sender.samples names the file,
// not a warm-up mismatch read off the responder's header.
func TestMissingSenderNamed(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	if err := os.Remove(filepath.Join(rundir.RoundDir(dir, "base", 1), samples.FileName(samples.RoleSender))); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(rep.Problems, `arm "base" round 1: left out`, "sender.samples is missing") {
		t.Errorf("problems do not name the missing file:\n%s", strings.Join(rep.Problems, "\n"))
	}
	if hasLine(rep.Problems, "sample header says warm-up") {
		t.Errorf("a missing sender file reported as a warm-up mismatch:\n%s", strings.Join(rep.Problems, "\n"))
	}
}

// TestRunDirDamage: damage that used to pass silently with exit 0 is a
// problem: a manifest listing an arm twice or a negative warm-up, stray
// round directories, a FIFO named like a sample file, a sample file with
// every record twice.
func TestRunDirDamage(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Arms = append(m.Arms, m.Arms...)
	m.Warmup = -5
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"round--1", "round-abc", "round-01"} {
		if err := os.MkdirAll(filepath.Join(dir, rundir.ArmsDir, "base", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(rundir.RoundDir(dir, "isolated", 1), samples.FileName(samples.RoleSender))
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(rundir.RoundDir(dir, "base", 0), rundir.Telemetry), 0o644); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(rundir.RoundDir(dir, "isolated", 2), samples.FileName(samples.RoleCapture))
	cf, err := samples.ReadFile(twice)
	if err != nil {
		t.Fatal(err)
	}
	if err := samples.WriteFile(twice, cf.Header, append(cf.Records, cf.Records...), *cf.Footer); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var rep *Report
	go func() {
		defer close(done)
		rep, err = Run(dir, Options{})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the analysis blocked (on the FIFO?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"manifest.json", `arm "base" listed twice`},
		{"manifest.json", "warmup -5 is not a count"},
		{"round--1", "not a round directory"},
		{"round-abc", "not a round directory"},
		{"round-01", "not a round directory"},
		{fifo, "not a regular file"},
		{filepath.Dir(twice), "capture file has sequence 0 twice"},
	} {
		if !hasLine(rep.Problems, want...) {
			t.Errorf("no problem with %q in:\n%s", want, strings.Join(rep.Problems, "\n"))
		}
	}
	if len(rep.Telemetry) == 0 || !strings.Contains(telemetryText(rep), "not a regular file") {
		t.Errorf("a FIFO telemetry.json is not a line of the telemetry section:\n%s", telemetryText(rep))
	}
	if len(rep.Arms) != 2 || rep.Rules.Warmup != 2 {
		t.Errorf("arms %v, warm-up %d: want each arm once and the headers' W=2", rep.armNames(), rep.Rules.Warmup)
	}
}

// TestLatenessKeepsEveryRequest: a sender stall delays sends; the late and
// lost requests stay in lateness, late replies in rtt_from_due, and late
// is counted apart from lost.
func TestLatenessKeepsEveryRequest(t *testing.T) {
	ck := map[string]samples.Clock{"tx_sw": {Source: "sw"}, "rx_sw": {Source: "sw"}}
	j := joined(ck, samples.RoleSender)
	// Seq 10..19 were sent 800 ms late (a stall); 10..14 were flagged late
	// (an older sender judged from due) and 15 was lost.
	for i := 10; i < 20; i++ {
		r := &j.Records[i]
		for _, s := range []samples.Stamp{samples.TxUser, samples.TxSW, samples.RxSW, samples.RxUser} {
			r.T[s] += 800_000_000
		}
		if i < 15 {
			r.Flags |= samples.FlagLate
		}
	}
	j.Records[15].T[samples.RxHW], j.Records[15].T[samples.RxSW], j.Records[15].T[samples.RxUser] = 0, 0, 0
	a := analyzeJoined(t, j).Arm("a")
	ln, rd, rtt := a.Metrics[Lateness].Rounds[0], a.Metrics[RTTFromDue].Rounds[0], a.Metrics[RTT].Rounds[0]
	if ln.N != 48 || ln.Late != 5 || ln.Lost != 1 || *ln.WorstNS < 800_000_000 {
		t.Errorf("lateness %+v worst %d: want all 48 sent requests and the 800 ms stall", ln.Counts, *ln.WorstNS)
	}
	if rd.N != 47 || *rd.WorstNS < 800_000_000 {
		t.Errorf("rtt_from_due %+v: want the 47 replies, late ones included", rd.Counts)
	}
	if rtt.N != 42 || rtt.Late != 5 || rtt.Lost != 1 {
		t.Errorf("rtt %+v: want the 42 answered in time", rtt.Counts)
	}
}

// TestNegativeNeverASample: forged replies seen before their requests give
// cap_rep < cap_req: a problem line, never a sample.
func TestNegativeNeverASample(t *testing.T) {
	ck := map[string]samples.Clock{"cap_req_sw": {Source: "sw"}, "cap_rep_sw": {Source: "sw"}}
	j := joined(ck, samples.RoleCapture)
	for _, i := range []int{5, 6, 7} {
		j.Records[i].T[samples.CapRepSW] = j.Records[i].T[samples.CapReqSW] - 767_000_000
	}
	rep := analyzeJoined(t, j)
	ta := rep.Arm("a").Metrics[Turnaround]
	r := ta.Rounds[0]
	if r.N != 45 || r.Negative != 3 || *r.MinNS < 0 || ta.Summary.Negative != 3 {
		t.Fatalf("turnaround %+v min %d: want the 3 negative values counted apart", r.Counts, *r.MinNS)
	}
	if !hasLine(rep.Problems, `arm "a" round 0: turnaround (capture sw`, "3 negative values") {
		t.Errorf("problems %q", rep.Problems)
	}
	var md bytes.Buffer
	WriteTablesMD(&md, rep)
	if !strings.Contains(md.String(), "| 0 + 3 negative |") {
		t.Errorf("tables.md does not show the negative values:\n%s", md.String())
	}
}

// TestWireCountsReachTheReport: foreign and malformed datagrams and the
// capture's kernel drops, counted in the sample footers, reach the Rounds
// table, report.json, and the notes or problems.
func TestWireCountsReachTheReport(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	rewrite(t, dir, "base", 1, samples.RoleResponder, func(recs []samples.Record, f *samples.Footer) {
		f.Counters.Foreign, f.Counters.Malformed = 2000, 3
	})
	rewrite(t, dir, "base", 1, samples.RoleCapture, func(recs []samples.Record, f *samples.Footer) {
		f.Counters.Foreign, f.Counters.KernelDrops = 58000, 545
	})
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Arm("base").Accounting[1]
	if ra.Foreign[samples.RoleResponder] != 2000 || ra.Foreign[samples.RoleCapture] != 58000 || ra.Malformed[samples.RoleResponder] != 3 || ra.CaptureDrops != 545 {
		t.Fatalf("accounting %+v", ra)
	}
	if !hasLine(rep.Notes, `arm "base" round 1`, "foreign responder 2000, capture 58000", "malformed responder 3") {
		t.Errorf("notes %q", rep.Notes)
	}
	if !hasLine(rep.Problems, `arm "base" round 1`, "kernel dropped 545 frames") {
		t.Errorf("problems %q", rep.Problems)
	}
	var md, js bytes.Buffer
	WriteTablesMD(&md, rep)
	if !strings.Contains(md.String(), "| base | 1 | yes | 198 | 198 | 0 | 0 | 0 | 0/2000/58000 | 0/3/0 | 545 |") {
		t.Errorf("Rounds table:\n%s", md.String())
	}
	WriteJSON(&js, rep)
	if !strings.Contains(js.String(), `"foreign": {`) || !strings.Contains(js.String(), `"capture": 58000`) || !strings.Contains(js.String(), `"capture_drops": 545`) {
		t.Errorf("report.json lacks the wire counts")
	}
}

// TestReportJSONLists: every list field of report.json is an array, never
// null, on a clean run; checked on the decoded file and on every slice
// field of the Go value that is not omitempty.
func TestReportJSONLists(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("clean run has problems %q", rep.Problems)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"problems", "notes", "comparisons", "arms"} {
		if _, ok := top[k].([]any); !ok {
			t.Errorf("report.json %q is %v, want an array", k, top[k])
		}
	}
	checkLists(t, "report", reflect.ValueOf(rep))
	// A report of nothing but a skipped arm and no baseline data.
	in := &Input{Run: "x", Warmup: 2, Baseline: "gone", Arms: []InputArm{{Name: "s", Skipped: "needs SMT"}}}
	rep, err = Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkLists(t, "skipped-only report", reflect.ValueOf(rep))
}

// checkLists fails for a nil slice or map in a field that JSON would
// write as null (no omitempty).
func checkLists(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkLists(t, path, v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			fv := v.Field(i)
			if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil() && !strings.Contains(tag, "omitempty") && !f.Anonymous {
				t.Errorf("%s.%s is nil: report.json would say null, not an empty list", path, f.Name)
			}
			checkLists(t, path+"."+f.Name, fv)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkLists(t, path+"[]", v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			checkLists(t, path+"["+k.String()+"]", v.MapIndex(k))
		}
	}
}

// TestFalsePositiveRates: the formulas against brute force over every
// order of the r+s values, and the documented values.
func TestFalsePositiveRates(t *testing.T) {
	for r := 1; r <= 4; r++ {
		for s := 1; s <= 4; s++ {
			// Every permutation of 0..r+s−1: the first r values are arm A.
			n := r + s
			perm := make([]int, n)
			for i := range perm {
				perm[i] = i
			}
			total, disjoint := 0, 0
			var walk func(k int)
			walk = func(k int) {
				if k == n {
					total++
					a, b := perm[:r], perm[r:]
					if slices.Max(a) < slices.Min(b) || slices.Max(b) < slices.Min(a) {
						disjoint++
					}
					return
				}
				for i := k; i < n; i++ {
					perm[k], perm[i] = perm[i], perm[k]
					walk(k + 1)
					perm[k], perm[i] = perm[i], perm[k]
				}
			}
			walk(0)
			want := float64(disjoint) / float64(total)
			if got := RangesDisjointRate(r, s); math.Abs(got-want) > 1e-12 {
				t.Errorf("RangesDisjointRate(%d, %d) = %v, brute force %v", r, s, got, want)
			}
		}
	}
	for _, c := range []struct {
		r, s int
		want float64
	}{{2, 2, 1.0 / 3}, {3, 3, 0.1}, {5, 5, 2.0 / 252}, {1, 1, 1}, {0, 3, 1}, {50, 50, 2 / 1.0089134454556417e29}} {
		if got := RangesDisjointRate(c.r, c.s); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("RangesDisjointRate(%d, %d) = %v, want %v", c.r, c.s, got, c.want)
		}
	}
	if RangesDisjointRate(4, 4) < MaxFalsePositive || RangesDisjointRate(5, 5) >= MaxFalsePositive {
		t.Error("5 rounds a side must be the first equal split below 1 %")
	}
	if got := IntervalsDisjointRate(2, 2); math.Abs(got-0.0025) > 1e-12 {
		t.Errorf("IntervalsDisjointRate(2, 2) = %v, want 0.0025", got)
	}
}

// TestIdenticalArmsVerdicts draws two arms from one distribution, many
// times: a "real difference" must stay below the stated rate, and with
// 2 or 3 rounds a side the worst is never called real (it was in about a
// third of the runs at 2 rounds); the worst's ranges are disjoint as often
// as RangesDisjointRate says.
func TestIdenticalArmsVerdicts(t *testing.T) {
	g := rng(7)
	round := func(k int) RoundStats {
		v := make([]int64, 300)
		for i := range v {
			// A heavy-ish tail: the minimum of two uniforms' reciprocal.
			v[i] = 10_000 + g.intn(5_000) + 1_000_000/(1+g.intn(1000))
		}
		st := Compute(v)
		return roundStats(k, Counts{N: len(v)}, &st)
	}
	arm := func(rounds int) *MetricReport {
		var rs []RoundStats
		for k := 0; k < rounds; k++ {
			rs = append(rs, round(k))
		}
		return &MetricReport{Source: "capture sw", Rounds: rs, Summary: summarize(rs)}
	}
	const trials = 600
	for _, rounds := range []int{2, 3, 5} {
		real, disjoint := map[string]int{}, 0
		for i := 0; i < trials; i++ {
			for _, c := range compareMetric(Turnaround, "b", "a", arm(rounds), arm(rounds)) {
				if c.Verdict == VerdictReal {
					real[c.Stat]++
				}
				if c.Stat == "worst" && c.RangesOverlap != nil && !*c.RangesOverlap {
					disjoint++
				}
			}
		}
		p := RangesDisjointRate(rounds, rounds)
		sd := math.Sqrt(p * (1 - p) / trials)
		if got := float64(disjoint) / trials; math.Abs(got-p) > 4*sd+0.005 {
			t.Errorf("%d rounds: worst ranges disjoint in %.3f of identical pairs, formula %.3f", rounds, got, p)
		}
		if rounds < 5 && real["worst"] != 0 {
			t.Errorf("%d rounds: worst called a real difference %d times in %d identical pairs", rounds, real["worst"], trials)
		}
		for st, n := range real {
			if float64(n)/trials > 0.03 { // stated < 1 %; 3 % leaves room for chance
				t.Errorf("%d rounds: %s called a real difference in %d of %d identical pairs", rounds, st, n, trials)
			}
		}
		t.Logf("%d rounds a side: worst ranges disjoint %d/%d (formula %.1f %%), real differences %v", rounds, disjoint, trials, 100*p, real)
	}
}
