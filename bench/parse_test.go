package bench

import (
	"bytes"
	"errors"
	"os"
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
	g := rigFigures(f)
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

func TestPaired(t *testing.T) {
	s := func(ns ...int64) []Summary {
		var out []Summary
		for _, v := range ns {
			out = append(out, Summary{N: 1, P50: v})
		}
		return out
	}
	rig, ref := s(110, 90, 100, 500), s(100, 100, 100, 100)
	rig[3].N = 0 // a round rig lost: not compared
	if got := paired(rig, ref, p50); got.N != 3 || got.Median != 1 || got.Min != 0.9 || got.Max != 1.1 || got.CI() != "[…–…]" || got.Resolved() {
		t.Errorf("paired = %+v: want 3 rounds, median 1 in 0.9–1.1, and no 95 %% CI from 3 rounds", got)
	}
	// 8 rounds: the 95 % CI of the median is the smallest to the largest
	// ratio; resolved only when it lies on one side of 1.00.
	eight := s(100, 100, 100, 100, 100, 100, 100, 100)
	if got := paired(s(80, 85, 90, 95, 96, 97, 98, 99), eight, p50); got.CI() != "[0.80–0.99]" || !got.Resolved() {
		t.Errorf("8 rounds all faster: %+v %s, want CI [0.80–0.99], resolved", got, got.CI())
	}
	if got := paired(s(80, 85, 90, 95, 96, 97, 98, 130), eight, p50); got.CI() != "[0.80–1.30]" || got.Resolved() || got.Median > 1 {
		t.Errorf("8 rounds, one slower: %+v %s, want median ≤ 1, CI [0.80–1.30], not resolved", got, got.CI())
	}
	if got := paired(s(100, 120), s(100, 100), p50); got.N != 2 || got.Median != 1.1 {
		t.Errorf("even count: %+v, want the mean of the middle two (1.1)", got)
	}
	if got := paired(nil, ref, p50); got.N != 0 || got.String() != "" {
		t.Errorf("no rounds: %+v %q", got, got)
	}
	// The goal follows the per-round ratios: one loud round that inflates
	// the pooled p99.9 does not decide it.
	row := func(tool string, per []Summary, pooled int64) RTTRow {
		for i := range per {
			per[i].P999 = per[i].P50
		}
		return RTTRow{Mode: "block", Tool: tool, Stats: Summary{N: 4, P50: pooled, P999: pooled}, PerRound: per}
	}
	res := Results{RTT: []RTTRow{row(ToolClosedLoop, s(95, 95, 95, 95), 120), row("sockperf", s(100, 100, 100, 100), 100)}}
	g := res.Goals()
	if len(g) != 1 || !g[0].Met || g[0].Resolved || !strings.Contains(g[0].Measured, "pooled 1.20") {
		t.Errorf("goals %+v: want block met on the paired 0.95 and the pooled 1.20 shown, unresolved by 4 rounds", g)
	}
	if v := verdict(g[0]); v != "met (within noise: a 95 % CI includes 1.00)" {
		t.Errorf("verdict %q", v)
	}
	if v := verdict(Goal{Met: false, Resolved: true}); v != "**not met**" {
		t.Errorf("verdict %q", v)
	}
	// Rounds without kernel stamps are shown beside the goal and in the
	// stamp-cost table; the verdict stays with the stamped rounds.
	res.RTT = append(res.RTT, row(ToolNoStamps, s(90, 90, 90, 90), 90))
	if g := res.Goals(); len(g) != 1 || !g[0].Met || !strings.Contains(g[0].Measured, "without kernel stamps 0.90, 0.90") {
		t.Errorf("goals %+v: want the unstamped 0.90 shown", g)
	}
	var md strings.Builder
	res.stampCost(&md)
	if !strings.Contains(md.String(), "| block | 4 | 0.12 | 0.09 | 1.06 (1.06–1.06) |") || !strings.Contains(md.String(), "| 4 | 4 |\n") {
		t.Errorf("stamp cost table:\n%s", md.String())
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
