package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/samples"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fixtures are real sockperf 3.7 output from this VM: the ping-pong
// screen output (--full-rtt, 3 s at --mps=1000) and its --full-log file.
func TestParseSockperf(t *testing.T) {
	out := readFixture(t, "sockperf-pingpong.txt")
	full := readFixture(t, "sockperf-full.csv")

	s, err := ParseSockperf(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !s.FullRTT || s.Sent != 2549 || s.Received != 2549 || s.RunTimeSec != 2.546 || s.Dropped != 0 {
		t.Errorf("summary %+v", s)
	}
	if s.TotalSent != 2999 || s.TotalReceived != 2999 || s.TotalRunTimeSec != 3.003 {
		t.Errorf("total run %+v", s)
	}
	if s.Printed["50.000"] != 446305 || s.Printed["99.900"] != 3665222 || s.Printed["MAX"] != 4190144 || s.Printed["MIN"] != 31406 {
		t.Errorf("printed percentiles %v", s.Printed)
	}
	if len(s.RTTs) != 0 {
		t.Errorf("screen output has no full log, got %d RTTs", len(s.RTTs))
	}
	if r := s.Rate(); r < 1000 || r > 1002 {
		t.Errorf("rate %v, want ~1001/s", r)
	}

	s, err = ParseSockperf(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RTTs) != 2549 || s.Unanswered != 0 || !s.FullRTT {
		t.Fatalf("full log: %d RTTs, %d unanswered, full %v; want 2549, 0, true", len(s.RTTs), s.Unanswered, s.FullRTT)
	}
	if s.RTTs[0] != 439755 || s.RTTs[2548] != 65898 {
		t.Errorf("first/last RTT %d %d, want 439755 65898 ns", s.RTTs[0], s.RTTs[2548])
	}
	// Our nearest-rank figures match sockperf's own (its summary rounds
	// rx−tx, its log the rtt column: they may differ by 1 ns).
	printed, _ := ParseSockperf(bytes.NewReader(out))
	st := analysis.Compute(append([]int64(nil), s.RTTs...))
	near := func(a, b int64) bool { return a-b <= 1 && b-a <= 1 }
	if v, _ := st.Value(analysis.P50); v != printed.Printed["50.000"] || !near(*st.WorstNS, printed.Printed["MAX"]) || !near(*st.MinNS, printed.Printed["MIN"]) {
		t.Errorf("stats median %d worst %d min %d; sockperf max %d min %d", v, *st.WorstNS, *st.MinNS, s.Printed["MAX"], s.Printed["MIN"])
	}

	// Screen output and full log together (as the bench parses them).
	both, err := ParseSockperf(bytes.NewReader(append(append(out, '\n'), full...)))
	if err != nil || len(both.RTTs) != 2549 || both.Received != 2549 {
		t.Errorf("combined: %v, %d RTTs, %d received", err, len(both.RTTs), both.Received)
	}
}

func TestParseSockperfNoValid(t *testing.T) {
	// sockperf --mps=max for 1 s on a loaded VM: only the total run.
	s, err := ParseSockperf(bytes.NewReader(readFixture(t, "sockperf-novalid.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Received != 0 || s.TotalReceived != 1125 || s.Rate() < 1100 || s.Rate() > 1110 {
		t.Errorf("%+v rate %v", s, s.Rate())
	}
}

func TestParseSockperfErrors(t *testing.T) {
	if _, err := ParseSockperf(strings.NewReader("sockperf: no such interface\n")); !errors.Is(err, ErrNoSockperfResult) {
		t.Errorf("garbage: %v, want ErrNoSockperfResult", err)
	}
	bad := "packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 1.0, 1.1, 12.x\n"
	if _, err := ParseSockperf(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad row: %v, want an error naming line 2", err)
	}
	// A message without a reply (rxTime 0) is counted, not an RTT.
	s, err := ParseSockperf(strings.NewReader("packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 1.0, 0, 0\n1, 1.0, 1.00002, 20.5\n"))
	if err != nil || s.Unanswered != 1 || len(s.RTTs) != 1 || s.RTTs[0] != 20500 {
		t.Errorf("unanswered: %v %+v", err, s)
	}
}

func TestParseMicros(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1000, "439.755": 439755, "1.5": 1500, "2.0001": 2000, "31.406": 31406} {
		if got, err := parseMicros(in); err != nil || got != want {
			t.Errorf("parseMicros(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".5", "-1", "1e3", "1.2.3", "x", "1.x"} {
		if _, err := parseMicros(in); err == nil {
			t.Errorf("parseMicros(%q): no error", in)
		}
	}
}

// The fixture is real `cyclictest -q -a 0 -t 1 -i 1000 -l 2000 -h 2000`
// output from this VM (SCHED_OTHER, loaded): 1987 samples in the
// histogram, 13 overflows, max 3752 µs.
func TestParseCyclictest(t *testing.T) {
	c, err := ParseCyclictest(bytes.NewReader(readFixture(t, "cyclictest-hist.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Buckets) != 2000 || c.Overflows != 13 || c.N() != 2000 || c.MinUS != 15 || c.AvgUS != 130 || c.MaxUS != 3752 {
		t.Fatalf("buckets %d overflows %d n %d min %d avg %d max %d", len(c.Buckets), c.Overflows, c.N(), c.MinUS, c.AvgUS, c.MaxUS)
	}
	// Rank 2 (1/2000 → rank 1 is the min: 15 µs).
	if v, ok := c.Percentile(analysis.Quantile(1)); !ok || v != 15_000 {
		t.Errorf("lowest rank = %d, want 15000 ns", v)
	}
	// p99.9 of 2000 is rank 1998: among the 13 overflows, so the max.
	if v, _ := c.Percentile(analysis.P999); v != 3_752_000 {
		t.Errorf("p99.9 = %d, want the max 3752000 ns", v)
	}
	p50, _ := c.Percentile(analysis.P50)
	p99, _ := c.Percentile(analysis.P99)
	if p50 < 15_000 || p50 > p99 {
		t.Errorf("p50 %d p99 %d out of order", p50, p99)
	}
}

func TestParseCyclictestErrors(t *testing.T) {
	if _, err := ParseCyclictest(strings.NewReader("T: 0 ( 1234) P: 0 I:1000 C: 10 Min: 5 Act: 9 Avg: 8 Max: 20\n")); !errors.Is(err, ErrNoHistogram) {
		t.Errorf("no histogram: %v", err)
	}
	two := "# Histogram\n000000 000001 000002\n"
	if _, err := ParseCyclictest(strings.NewReader(two)); err == nil {
		t.Error("two threads: no error")
	}
	gap := "# Histogram\n000000 000001\n000002 000001\n"
	if _, err := ParseCyclictest(strings.NewReader(gap)); err == nil {
		t.Error("missing bucket: no error")
	}
	c, err := ParseCyclictest(strings.NewReader("# Histogram\n000000 000000\n000001 000003\n# Max Latencies: 00001\n"))
	if err != nil || c.N() != 3 {
		t.Fatalf("%v %+v", err, c)
	}
	if v, _ := c.Percentile(analysis.P50); v != 1000 {
		t.Errorf("p50 = %d, want 1000", v)
	}
	if _, ok := (&Cyclictest{}).Percentile(analysis.P50); ok {
		t.Error("percentile of nothing: ok")
	}
}

func TestParseSizesAndParts(t *testing.T) {
	got, err := ParseSizes("1M, 10M,100k,5")
	if err != nil || len(got) != 4 || got[0] != 1_000_000 || got[1] != 10_000_000 || got[2] != 100_000 || got[3] != 5 {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "1G", "2000M", "1,,2", "M"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q): no error", bad)
		}
	}
	if p, err := ParseParts("rtt,analysis"); err != nil || len(p) != 2 || p[1] != PartAnalysis {
		t.Errorf("ParseParts = %v, %v", p, err)
	}
	if _, err := ParseParts("rtt,pacing"); err == nil {
		t.Error("ParseParts(pacing): no error")
	}
}

func FuzzParseSockperf(f *testing.F) {
	f.Add([]byte("packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 1.0, 1.1, 12.5\n"))
	f.Add([]byte("sockperf: [Total Run] RunTime=1.017 sec; Warm up time=400 msec; SentMessages=1126; ReceivedMessages=1125\n"))
	f.Add([]byte("sockperf: ---> percentile 99.900 = 3665.222\n"))
	for _, name := range []string{"sockperf-pingpong.txt", "sockperf-novalid.txt"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSockperf(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, v := range s.RTTs {
			if v < 0 {
				t.Fatalf("negative RTT %d", v)
			}
		}
		_ = s.Rate()
	})
}

func FuzzParseCyclictest(f *testing.F) {
	f.Add([]byte("# Histogram\n000000 000000\n000001 000003\n# Max Latencies: 00001\n# Histogram Overflows: 00002\n"))
	f.Add([]byte("# Histogram\n000000 000001 000002\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCyclictest(bytes.NewReader(b))
		if err != nil {
			return
		}
		if c.N() < 0 {
			t.Fatalf("negative count %d", c.N())
		}
		for _, q := range analysis.Percentiles {
			if v, ok := c.Percentile(q); ok && v < 0 {
				t.Fatalf("negative percentile %d", v)
			}
		}
	})
}

func FuzzParseSizes(f *testing.F) {
	f.Add("1M,10M,100M")
	f.Add("100k")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSizes(s)
		if err != nil {
			return
		}
		for _, n := range v {
			if n <= 0 || n > 1_000_000_000 {
				t.Fatalf("ParseSizes(%q) gave %d", s, n)
			}
		}
	})
}

// A 3.2 ms stall at request 3 makes rig send 3–6 back to back: every
// request keeps its lateness, but only 3 and 7 onwards were waited for
// (cyclictest's rule: one sample per stall). A 2.5 ms responder stall at
// request 1 holds 1, 2 and 3's replies: a closed loop (sockperf) would have
// sent only 1 and waited, so 2 and the burst 4–6 leave the closed-loop row.
func TestRigFiguresWakeups(t *testing.T) {
	const ms = int64(time.Millisecond)
	base := int64(1_700_000_000) * int64(time.Second)
	f := &samples.File{Header: samples.Header{Role: samples.RoleSender, Warmup: 1}}
	tx := []int64{10_000, 10_000, 10_000, 3_200_000, 2_200_005, 1_200_010, 200_015, 10_000, 10_000} // lateness, ns
	rtt := []int64{100_000, 2_500_000, 1_600_000, 700_000, 100_000, 100_000, 100_000, 100_000, 100_000}
	for k, l := range tx {
		var r samples.Record
		r.Seq = uint64(k)
		r.T[samples.Due] = base + int64(k)*ms
		r.T[samples.TxUser] = r.T[samples.Due] + l
		r.T[samples.RxUser] = r.T[samples.TxUser] + rtt[k]
		f.Records = append(f.Records, r)
	}
	f.Records[8].Flags |= samples.FlagNotSent // never sent: neither late nor a wake-up
	f.Records[8].T[samples.TxUser] = 0
	g, err := rigFigures(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := tx[1:8]; !slices.Equal(g.late, want) {
		t.Errorf("late %v, want every sent request after warm-up %v", g.late, want)
	}
	if want := []int64{10_000, 10_000, 3_200_000, 10_000}; !slices.Equal(g.wake, want) {
		t.Errorf("wake %v, want %v (4, 5 and 6 were overdue when 3 left)", g.wake, want)
	}
	if want := rtt[1:8]; !slices.Equal(g.user, want) || g.lost != 0 {
		t.Errorf("user %v lost %d, want %v", g.user, g.lost, want)
	}
	// 1 follows 0's reply; 2 left (2.01 ms) while 1's reply was out (3.51);
	// 3 follows 2's reply; 4–6, the catch-up burst, left while 3's reply was
	// out (6.9 ms); 7 follows 6's.
	if want := []int64{2_500_000, 700_000, 100_000}; !slices.Equal(g.closed, want) {
		t.Errorf("closed %v, want %v", g.closed, want)
	}
}

// The receive path: a reply's rx_user − rx_sw when the kernel stamped it
// (not an unanswered request's, not one without a stamp); the responder's
// req_rx_user − req_rx_sw from the sender's warm-up on.
func TestRecvFigures(t *testing.T) {
	f := &samples.File{Header: samples.Header{Role: samples.RoleSender, Warmup: 1}}
	rsp := &samples.File{Header: samples.Header{Role: samples.RoleResponder}}
	for k := range 5 {
		var r, q samples.Record
		r.Seq, q.Seq = uint64(k), uint64(k)
		r.T[samples.Due] = 1_000_000 * int64(k+1)
		r.T[samples.TxUser] = r.T[samples.Due]
		r.T[samples.TxSW] = r.T[samples.TxUser] + 1_000
		r.T[samples.RxSW] = r.T[samples.TxUser] + 60_000
		r.T[samples.RxUser] = r.T[samples.RxSW] + int64(100_000+k)
		q.T[samples.ReqRxSW] = r.T[samples.TxUser] + 20_000
		q.T[samples.ReqRxUser] = q.T[samples.ReqRxSW] + int64(40_000+k)
		f.Records, rsp.Records = append(f.Records, r), append(rsp.Records, q)
	}
	f.Records[2].T[samples.RxSW] = 0                                    // no kernel stamp
	f.Records[3].T[samples.RxSW], f.Records[3].T[samples.RxUser] = 0, 0 // unanswered
	rsp.Records[4].T[samples.ReqRxSW] = 0
	if g, err := rigFigures(f); err != nil || !slices.Equal(g.recv, []int64{100_001, 100_004}) {
		t.Errorf("sender recv %v (%v), want [100001 100004]", g.recv, err)
	}
	if got, err := responderRecv(rsp, 1); err != nil || !slices.Equal(got, []int64{40_001, 40_002, 40_003}) {
		t.Errorf("responder recv %v (%v), want [40001 40002 40003]", got, err)
	}
	// Stamps no clock gives (valid CRCs, forged values): rx_sw − tx_sw
	// overflows int64 to 2 ns, rx_user − rx_sw is below 0. Neither is a
	// figure: the bench says which request and stops.
	r := &f.Records[1]
	tx, rx := r.T[samples.TxSW], r.T[samples.RxSW]
	r.T[samples.TxSW], r.T[samples.RxSW] = math.MaxInt64, -math.MaxInt64
	if _, err := rigFigures(f); err == nil || !strings.Contains(err.Error(), "seq 1: rx_sw − tx_sw") {
		t.Errorf("overflowing stamps of seq 1: %v", err)
	}
	r.T[samples.TxSW], r.T[samples.RxSW] = tx, r.T[samples.RxUser]+1
	if _, err := rigFigures(f); err == nil || !strings.Contains(err.Error(), "seq 1: rx_user − rx_sw") {
		t.Errorf("rx_sw after rx_user in seq 1: %v", err)
	}
	r.T[samples.RxSW] = rx
	rsp.Records[2].T[samples.ReqRxSW] = math.MinInt64
	if _, err := responderRecv(rsp, 1); err == nil || !strings.Contains(err.Error(), "seq 2: req_rx_user − req_rx_sw") {
		t.Errorf("forged stamps of seq 2: %v", err)
	}
}

func TestPaired(t *testing.T) {
	s := func(ns ...int64) []Summary {
		var out []Summary
		for i, v := range ns {
			out = append(out, Summary{Round: i, N: 1, P50: v})
		}
		return out
	}
	rig, ref := s(110, 90, 100, 500), s(100, 100, 100, 100)
	rig[3].N = 0 // a round rig lost: not compared
	if got := paired(rig, ref, p50); got.N != 3 || got.Median != 1 || got.Min != 0.9 || got.Max != 1.1 || got.CI() != "[…–…]" || got.Decide(EquivalenceBound) != Undecided {
		t.Errorf("paired = %+v: want 3 rounds, median 1 in 0.9–1.1, and no 95 %% CI from 3 rounds", got)
	}
	// Rounds are paired by their number, not their position: a round one
	// side lacks is left out.
	if got := paired(s(110, 90, 100), []Summary{{Round: 2, N: 1, P50: 50}, {Round: 0, N: 1, P50: 100}}, p50); got.N != 2 || got.Min != 1.1 || got.Max != 2 {
		t.Errorf("paired by round = %+v, want rounds 0 (1.10) and 2 (2.00)", got)
	}
	// 8 rounds: the 95 % CI of the median is the smallest to the largest
	// ratio; met when it lies at or below the bound, not met when above.
	eight := s(100, 100, 100, 100, 100, 100, 100, 100)
	if got := paired(s(80, 85, 90, 95, 96, 97, 98, 105), eight, p50); got.CI() != "[0.80–1.05]" || got.Decide(EquivalenceBound) != Met {
		t.Errorf("8 rounds within 5 %%: %+v %s, want CI [0.80–1.05], met", got, got.CI())
	}
	if got := paired(s(80, 85, 90, 95, 96, 97, 98, 130), eight, p50); got.CI() != "[0.80–1.30]" || got.Decide(EquivalenceBound) != Undecided {
		t.Errorf("8 rounds, one slower: %+v %s, want CI [0.80–1.30], undecided", got, got.CI())
	}
	if got := paired(s(106, 110, 120, 130, 130, 140, 150, 160), eight, p50); got.Decide(EquivalenceBound) != NotMet {
		t.Errorf("8 rounds all > 1.05: %+v, want not met", got)
	}
	if got := paired(s(100, 120), s(100, 100), p50); got.N != 2 || got.Median != 1.1 {
		t.Errorf("even count: %+v, want the mean of the middle two (1.1)", got)
	}
	if got := paired(nil, ref, p50); got.N != 0 || got.String() != "" {
		t.Errorf("no rounds: %+v %q", got, got)
	}
	// The goal follows the per-round ratios: one loud round that inflates
	// the pooled figure does not decide it.
	row := func(tool string, per []Summary, pooled int64) RTTRow {
		for i := range per {
			per[i].P999 = per[i].P50
		}
		return RTTRow{Mode: "block", Tool: tool, Stats: Summary{N: 4, P50: pooled, P999: pooled}, PerRound: per}
	}
	res := Results{RTT: []RTTRow{row(ToolClosedLoop, s(95, 95, 95, 95), 120), row("sockperf", s(100, 100, 100, 100), 100)}}
	g := res.Goals()
	if len(g) != 2 || g[0].Decision != Undecided || g[0].Rounds != 4 || !strings.Contains(g[0].Measured, "pooled 1.20") || !strings.Contains(g[0].Goal, "median ≤ 1.05") {
		t.Errorf("goals %+v: want block median undecided by 4 rounds, the pooled 1.20 shown", g)
	}
	// 4 rounds all at 0.95 would decide at 6, the first count with a CI.
	if v := verdict(g[0]); v != "*undecided* (4 rounds; deciding takes ≈ 6 rounds at this spread)" {
		t.Errorf("verdict %q", v)
	}
	if v := verdict(Goal{Decision: NotMet}); v != "**not met**" {
		t.Errorf("verdict %q", v)
	}
	if v := verdict(Goal{Decision: Met, Rounds: 24}); v != "met (24 rounds)" {
		t.Errorf("verdict %q", v)
	}
	// Undecided RTT goals ask for more rounds of their mode only.
	if p := res.undecided(); !slices.Equal(p.modes, []string{"block"}) || p.pacing || p.noStamps {
		t.Errorf("plan %+v: want block rounds (rig and sockperf) only", p)
	}
	// A round in which rig's sender never waited (no wake-ups) leaves the
	// pacing goal undecided, not absent: --until-decided adds a round of
	// its mode instead of stopping as if it were decided.
	res.Pacing = []PacingRow{{Tool: PacingRigWake, PerRound: []Summary{{}}}, {Tool: PacingCyclictest, Stats: Summary{N: 2000, P999: 900_000}, PerRound: []Summary{{N: 2000, P999: 900_000}}}}
	pg := res.Goals()
	if len(pg) != 3 || pg[2].Decision != Undecided || pg[2].mode != ModeBlockDefault || verdict(pg[2]) != "*undecided* (deciding takes a round with samples on both sides first)" {
		t.Errorf("goals %+v: want the pacing goal undecided without rounds", pg)
	}
	if p := res.undecided(); !p.pacing || !slices.Contains(p.modes, ModeBlockDefault) {
		t.Errorf("plan %+v: want a pacing round (block, rig default)", p)
	}
	res.Pacing = nil
	// Rounds without kernel stamps are shown beside the goal and in the
	// stamp-cost table; the verdict stays with the stamped rounds.
	res.RTT = append(res.RTT, row(ToolNoStamps, s(90, 90, 90, 90), 90))
	if g := res.Goals(); len(g) != 2 || !strings.Contains(g[0].Measured, "without kernel stamps 0.90 […–…]") {
		t.Errorf("goals %+v: want the unstamped 0.90 shown", g)
	}
	var md strings.Builder
	res.stampCost(&md)
	if !strings.Contains(md.String(), "| block | go | 4 | 0.12 | 0.09 | 1.06 (1.06–1.06) |") || !strings.Contains(md.String(), "| 4 | 4 |\n") {
		t.Errorf("stamp cost table:\n%s", md.String())
	}
	// The native engine without kernel stamps has goals of its own against
	// sockperf; undecided, they ask --until-decided for its rounds, which
	// no other goal does.
	if p := res.undecided(); p.nativeOff {
		t.Errorf("plan %+v: native rounds without stamps asked for with none run", p)
	}
	res.RTT = append(res.RTT, row(ToolNativeNoStamps, s(95, 95, 95, 95), 95))
	g = res.Goals()
	if len(g) != 4 || !g[2].nativeOff || !strings.Contains(g[2].Goal, "block: rig native without kernel stamps/sockperf median") || g[2].Decision != Undecided {
		t.Fatalf("goals %+v: want the native engine's unstamped median and p99.9 goals, undecided over 4 rounds", g)
	}
	if p := res.undecided(); !p.nativeOff || !slices.Contains(p.modes, "block") {
		t.Errorf("plan %+v: want native rounds without stamps in block", p)
	}
}

// TestRoundsToDecide: the rounds a goal would need at the observed spread.
func TestRoundsToDecide(t *testing.T) {
	mk := func(r ...float64) Paired {
		var s, ref []Summary
		for i, v := range r {
			s = append(s, Summary{Round: i, N: 1, P50: int64(v * 1000)})
			ref = append(ref, Summary{Round: i, N: 1, P50: 1000})
		}
		return paired(s, ref, p50)
	}
	// Decided already: the rounds run.
	if n, ok := mk(0.9, 0.92, 0.94, 0.96, 0.98, 1.0, 1.01, 1.02).RoundsToDecide(EquivalenceBound); !ok || n != 8 {
		t.Errorf("decided: %d %v, want 8", n, ok)
	}
	// Spread around 1.00 (well below 1.05): more rounds narrow the CI to
	// the quantiles near the median; a wider spread needs more.
	narrow := mk(0.90, 0.95, 0.98, 1.00, 1.00, 1.02, 1.04, 1.10)
	wide := mk(0.70, 0.85, 0.95, 1.00, 1.00, 1.06, 1.15, 1.30)
	nn, ok1 := narrow.RoundsToDecide(EquivalenceBound)
	nw, ok2 := wide.RoundsToDecide(EquivalenceBound)
	if !ok1 || !ok2 || nn <= 8 || nw <= nn {
		t.Errorf("narrow %d %v, wide %d %v: want both above 8, the wide spread needing more", nn, ok1, nw, ok2)
	}
	// At the bound itself no count decides.
	if n, ok := mk(1.0, 1.02, 1.04, 1.05, 1.06, 1.08, 1.1).RoundsToDecide(EquivalenceBound); ok {
		t.Errorf("median at the bound: %d rounds, want none", n)
	}
	if q := quantile([]float64{1, 2, 3}, 0.5); q != 2 {
		t.Errorf("quantile 0.5 of 1,2,3 = %v", q)
	}
	if q := quantile([]float64{1, 2, 3}, 0.375); q != 1.5 {
		t.Errorf("quantile 0.375 of 1,2,3 = %v, want 1.5", q)
	}
	if q := quantile([]float64{1, 2, 3}, 0.01); q != 1 {
		t.Errorf("quantile below the range = %v, want the smallest", q)
	}
}

// TestRotate: each tool goes first in turn, round by round, and the first
// error stops the round.
func TestRotate(t *testing.T) {
	var got []string
	run := func(name string, err error) func() error {
		return func() error { got = append(got, name); return err }
	}
	for k := 0; k < 3; k++ {
		if err := rotate(k, run("rig", nil), run("off", nil), run("sockperf", nil)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"rig", "off", "sockperf", "off", "sockperf", "rig", "sockperf", "rig", "off"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	got = nil
	boom := errors.New("boom")
	if err := rotate(1, run("rig", nil), run("sockperf", boom)); err != boom || !slices.Equal(got, []string{"sockperf"}) {
		t.Errorf("error in the first tool: err %v, ran %v; want boom and only sockperf", err, got)
	}
}

// The fixture is real `perf stat -x, --per-thread` output (perf 6.1) of a
// rig block round on this VM: the sender (tid 24462 sends) and the
// responder (24452), every thread, the events grouped by event, recvmsg
// twice (first filtered on MSG_ERRQUEUE), threads that did not run
// "<not counted>".
func TestParsePerfStat(t *testing.T) {
	text := string(readFixture(t, "perf-stat-per-thread.csv"))
	ev, err := parsePerfStat(text, len(perfEvents), func(i int) string { return perfEvents[i].event })
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 14 {
		t.Errorf("%d threads, want 14", len(ev))
	}
	snd, rsp := ev[24462], ev[24452]
	if snd[evAll] != 16698 || snd[evErrqueue] != 4004 || snd[2] != 8007 || snd[evSendmsg] != 2002 || snd[6] != 4005 {
		t.Errorf("sender thread %v: want 16698 syscalls, 4004 errqueue of 8007 recvmsg, 2002 sendmsg, 4005 ppoll", snd)
	}
	if rsp[evAll] != 8809 || rsp[evErrqueue] != 4004 || rsp[2] != 6006 || rsp[evSendmsg] != 2002 {
		t.Errorf("responder thread %v", rsp)
	}
	if idle := ev[24448]; idle == nil || idle[evAll] != 0 {
		t.Errorf("a thread that did not run: %v, want zeros", idle)
	}
	c := costRow("sender", 1, map[int]*taskCount{
		10: {pid: 1, tid: 10, vol: 2002, invol: 30, runNS: 1e9, ev: snd},
		11: {pid: 1, tid: 11, vol: 900, runNS: 1e6, ev: ev[24463]},
		12: {pid: 2, tid: 12, ev: rsp}, // another process
	}, countedWindow{took: 2 * time.Second, skew: 3 * time.Millisecond})
	if c.Window != 2*time.Second || c.Skew != 3*time.Millisecond {
		t.Errorf("cost row window %v, skew %v: want the counted window's 2s and 3ms", c.Window, c.Skew)
	}
	if c.Threads != 2 || c.RoundTrips != 2002 || c.ThreadSyscalls != 16698 || c.Syscalls != 16698+836 || c.StampReads != 4004 ||
		c.Voluntary != 2902 || c.ThreadVoluntary != 2002 || c.perSecond(c.ThreadInvoluntary) != 15 || c.BySyscall["sendmsg"] != 2002 {
		t.Errorf("cost row %+v", c)
	}
	for name, bad := range map[string]string{
		"no thread id":   "rig,1,,raw_syscalls:sys_enter,1,100.00,,\n",
		"wrong order":    "rig-7,1,,syscalls:sys_enter_recvmsg,1,100.00,,\n",
		"not supported":  "rig-7,<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n",
		"missing events": "rig-7,5,,raw_syscalls:sys_enter,1,100.00,,\n",
		"short line":     "rig-7,5\n",
	} {
		if _, err := parsePerfStat(bad, len(perfEvents), func(i int) string { return perfEvents[i].event }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParsePerfStat(f *testing.F) {
	if b, err := os.ReadFile("testdata/perf-stat-per-thread.csv"); err == nil {
		f.Add(string(b))
	}
	f.Add("a-1,3,,x,1,100.00,,\na-1,4,,y,1,100.00,,\n")
	events := []string{"x", "y"}
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := parsePerfStat(s, len(events), func(i int) string { return events[i] })
		if err != nil {
			return
		}
		for tid, v := range ev {
			if tid <= 0 || len(v) != len(events) {
				t.Fatalf("thread %d: %v", tid, v)
			}
		}
	})
}

// TestCostGoals: rig's syscalls without its TX-stamp reads and its
// wake-ups per round trip against sockperf's on each side, the busy
// threads' preemptions within 2 × sockperf's, and no allocation.
func TestCostGoals(t *testing.T) {
	zero, some := uint64(13), uint64(2513) // the short round made 13: one more per round trip
	row := func(mode, tool, side string, sys, stamps, vol, invol uint64, allocs *uint64) CostRow {
		short := uint64(13)
		return CostRow{Mode: mode, Tool: tool, Side: side, Window: time.Second, RoundTrips: 1000, Syscalls: sys, StampReads: stamps,
			Voluntary: vol, ThreadInvoluntary: invol, HeapAllocs: allocs, AllocRequests: 5000, ShortAllocs: &short, ShortRequests: 2500}
	}
	res := Results{Cost: []CostRow{
		row("block", CostRig, "sender", 4000, 2000, 1000, 5, &zero), row("block", CostRig, "responder", 4000, 2000, 1000, 5, &zero),
		row("block", CostSockperf, "sender", 2000, 0, 1000, 1, nil), row("block", CostSockperf, "responder", 2000, 0, 1000, 1, nil),
		row("busy", CostRig, "sender", 30000, 2000, 10, 250, &zero), row("busy", CostRig, "responder", 900000, 2000, 0, 150, &some),
		row("busy", CostSockperf, "sender", 31000, 0, 0, 100, nil), row("busy", CostSockperf, "responder", 3000000, 0, 0, 100, nil),
	}}
	want := map[string]Decision{
		"block: syscalls": Met, "block: wake-ups": Met, "block: rig's probe": Met,
		"busy: syscalls": Met, "busy: wake-ups": NotMet, "busy: measuring threads": NotMet, "busy: rig's probe": NotMet,
	}
	g := res.costGoals()
	if len(g) != len(want) {
		t.Fatalf("%d goals, want %d: %+v", len(g), len(want), g)
	}
	for _, x := range g {
		found := false
		for prefix, d := range want {
			if strings.HasPrefix(x.Goal, prefix) {
				found = true
				if x.Decision != d {
					t.Errorf("%s (%s): %v, want %v", x.Goal, x.Measured, x.Decision, d)
				}
			}
		}
		if !found {
			t.Errorf("unexpected goal %q", x.Goal)
		}
	}
	var b strings.Builder
	res.costTables(&b)
	if !strings.Contains(b.String(), "| block | rig | sender | 1000 | 4.00 | 2.00 | 2.00 |") || !strings.Contains(b.String(), "| busy | rig | responder | 1000 | 900.00 |") {
		t.Errorf("cost table:\n%s", b.String())
	}
}

// TestAllocRoundsResolve: the allocation rounds differ by enough requests
// at the default counting round that the few allocations a round's start
// and end vary by (up to 7 measured) stay under half the goal's bound.
func TestAllocRoundsResolve(t *testing.T) {
	c := Config{Rig: "rig", Dir: "d"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	reqs := float64(c.CostTime/time.Millisecond) * (allocLong - allocShort)
	if noise := 7 / reqs; noise >= MaxAllocsPerRT/2 {
		t.Errorf("allocation rounds %v and %v differ by %.0f requests: 7 allocations of noise are %.4f per round trip, not under %.4f",
			scaleDur(c.CostTime, allocShort), scaleDur(c.CostTime, allocLong), reqs, noise, MaxAllocsPerRT/2)
	}
}

// TestEnvRigVersion: the table names the rig binary measured, by its own
// `rig version`, not rigbench's build; a binary that cannot say is named so.
func TestEnvRigVersion(t *testing.T) {
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig")
	if err := os.WriteFile(rig, []byte("#!/bin/sh\necho 'rig 9.9.9 (commit 0123456789ab)'\necho 'wire format 2'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if e := snapshotEnv(context.Background(), rig); e.Rig != "rig 9.9.9 (commit 0123456789ab)" {
		t.Errorf("Rig = %q, want the measured binary's first version line", e.Rig)
	}
	missing := filepath.Join(dir, "none")
	if e := snapshotEnv(context.Background(), missing); !strings.HasPrefix(e.Rig, "unknown ("+missing+" version failed); rigbench ") {
		t.Errorf("Rig = %q, want it said that the measured binary could not tell", e.Rig)
	}
}
