package analysis

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rig-project/rig/internal/samples"
)

// TestP999Of10000 pins the published rule: with n = 10 000 samples after
// warm-up, p99.9 is the 9 990th smallest (a float computation of
// ceil(99.9/100·10000) gives 9 991).
func TestP999Of10000(t *testing.T) {
	v := make([]int64, 10000)
	for i := range v {
		v[i] = int64(i + 1) // the k-th smallest is k
	}
	rand.Shuffle(len(v), func(i, j int) { v[i], v[j] = v[j], v[i] })
	st := Compute(v)
	want := map[Quantile]int64{P50: 5000, P90: 9000, P99: 9900, P999: 9990, P9999: 9999}
	for q, w := range want {
		if got, _ := st.Value(q); got != w {
			t.Errorf("%s of 1..10000 = %d, want the %d-th smallest", q.Name(), got, w)
		}
	}
	if *st.WorstNS != 10000 || *st.MinNS != 1 {
		t.Fatalf("worst %d min %d", *st.WorstNS, *st.MinNS)
	}
}

// bruteRank is the nearest-rank definition by linear search: the smallest
// r with r/n ≥ q/100, compared exactly as r·10⁶ ≥ q_ppm·n.
func bruteRank(q Quantile, n int) int {
	for r := 1; r <= n; r++ {
		if int64(r)*1_000_000 >= int64(q)*int64(n) {
			return r
		}
	}
	return n
}

func TestRankMatchesDefinition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 9, 10, 99, 100, 101, 999, 1000, 1001, 9998, 9999, 10000, 10001, 12345, 99999, 100000} {
		for _, q := range Percentiles {
			if got, want := Rank(q, n), bruteRank(q, n); got != want {
				t.Errorf("Rank(%s, %d) = %d, want %d", q.Percent(), n, got, want)
			}
		}
	}
	if Rank(P50, 0) != 0 {
		t.Fatal("rank of empty")
	}
}

func TestQuantileNames(t *testing.T) {
	for q, want := range map[Quantile][3]string{
		P50: {"median", "50", "median"}, P90: {"p90", "90", "p90"}, P999: {"p99.9", "99.9", "p999"}, P9999: {"p99.99", "99.99", "p9999"},
	} {
		if got := [3]string{q.Name(), q.Percent(), q.Key()}; got != want {
			t.Errorf("%d: %v want %v", q, got, want)
		}
	}
}

// TestPercentOf: the compared statistics' percentiles, which the undersampled
// marks of the tables, comparisons and summary look up, come from Percentiles.
func TestPercentOf(t *testing.T) {
	for st, want := range map[string]string{"median": "50", "p99": "99", "p99.9": "99.9", "p99.99": "99.99", "worst": "", "p42": ""} {
		if got := percentOf(st); got != want {
			t.Errorf("percentOf(%q) = %q, want %q", st, got, want)
		}
	}
}

func TestUndersampledRule(t *testing.T) {
	for _, c := range []struct {
		q     Quantile
		n     int
		under bool
	}{
		{P999, 10000, false}, {P999, 9998, false}, {P999, 9000, false}, {P999, 8999, true},
		{P9999, 9998, true}, {P9999, 90000, false}, {P9999, 89999, true},
		{P99, 1000, false}, {P99, 899, true}, {P50, 1, true}, {P50, 19, false}, {P999, 0, true},
	} {
		if got := Undersampled(c.q, c.n); got != c.under {
			t.Errorf("Undersampled(%s, %d) = %v, want %v", c.q.Percent(), c.n, got, c.under)
		}
	}
}

// binomCDFs returns P(X ≤ k), k = 0..n, for X ~ Binomial(n, p) in exact
// rationals.
func binomCDFs(n int, p *big.Rat) []*big.Rat {
	q := new(big.Rat).Sub(big.NewRat(1, 1), p)
	pow := func(r *big.Rat, e int) *big.Rat {
		return new(big.Rat).SetFrac(new(big.Int).Exp(r.Num(), big.NewInt(int64(e)), nil), new(big.Int).Exp(r.Denom(), big.NewInt(int64(e)), nil))
	}
	out := make([]*big.Rat, n+1)
	sum := new(big.Rat)
	for i := 0; i <= n; i++ {
		term := new(big.Rat).SetInt(new(big.Int).Binomial(int64(n), int64(i)))
		term.Mul(term, pow(p, i))
		term.Mul(term, pow(q, n-i))
		sum = new(big.Rat).Add(sum, term)
		out[i] = sum
	}
	return out
}

// TestCIRanksExact checks the interval ranks against exact rational
// binomial sums, and that the interval covers ≥ 95 %.
func TestCIRanksExact(t *testing.T) {
	lowA, highA := big.NewRat(25, 1000), big.NewRat(975, 1000)
	for _, n := range []int{5, 20, 57, 200} {
		for _, q := range Percentiles {
			p := big.NewRat(int64(q), 1_000_000)
			wantLo, wantHi := 0, n+1
			cdfs := binomCDFs(n, p)
			for k := 0; k <= n; k++ {
				cdf := cdfs[k]
				if cdf.Cmp(lowA) <= 0 {
					wantLo = k + 1
				}
				if cdf.Cmp(highA) >= 0 && wantHi == n+1 {
					wantHi = k + 1
				}
			}
			if wantHi > n {
				wantHi = n + 1
			}
			lo, hi := CIRanks(q, n)
			if lo != wantLo || hi != wantHi {
				t.Errorf("CIRanks(%s, %d) = [%d, %d], want [%d, %d]", q.Percent(), n, lo, hi, wantLo, wantHi)
			}
			if lo >= 1 && hi <= n {
				// coverage P(lo ≤ X ≤ hi−1) ≥ 95 %
				cov := new(big.Rat).Sub(cdfs[hi-1], cdfs[lo-1])
				if cov.Cmp(big.NewRat(95, 100)) < 0 {
					t.Errorf("CIRanks(%s, %d): coverage %s < 95 %%", q.Percent(), n, cov.FloatString(4))
				}
			}
		}
	}
	// For 10 000 samples the p99.9 interval brackets rank 9 990 and is
	// about ±2σ wide (σ ≈ 3.2 ranks).
	lo, hi := CIRanks(P999, 10000)
	if !(lo < 9990 && hi > 9990 && lo > 9980 && hi <= 10000) {
		t.Fatalf("p99.9 of 10000: [%d, %d]", lo, hi)
	}
}

func TestFormatUS(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0.00", 3904: "3.90", 3905: "3.91", 1548860: "1548.86", 4: "0.00", 5: "0.01", -3905: "-3.91", -4: "0.00", 10240: "10.24",
	} {
		if got := FormatUS(ns); got != want {
			t.Errorf("FormatUS(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	sp, ok := SpreadOf([]int64{40, 10, 30, 20})
	// nearest-rank median of 4 values is the 2nd smallest: no interpolation.
	if !ok || sp.MedianNS != 20 || sp.MinNS != 10 || sp.MaxNS != 40 || sp.Rounds != 4 {
		t.Fatalf("%+v", sp)
	}
	if _, ok := SpreadOf(nil); ok {
		t.Fatal("empty spread")
	}
}

// TestWarmupBruteForce checks Analyze against a brute-force reference on
// random rounds: records with random sequence gaps, random warm-up W; the
// statistics must equal sorting the values of records with seq ≥ W and
// indexing by the exact rational nearest rank.
func TestWarmupBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 60; iter++ {
		w := r.IntN(30)
		var recs []samples.Record
		seq := uint64(r.IntN(5))
		for n := 20 + r.IntN(400); n > 0; n-- {
			var rec samples.Record
			rec.Seq = seq
			seq += 1 + uint64(r.IntN(3)) // gaps: warm-up is by sequence, not position
			rec.T[samples.CapReqSW] = 1_000_000 + int64(r.IntN(1000))
			rec.T[samples.CapRepSW] = rec.T[samples.CapReqSW] + int64(r.ExpFloat64()*5000) + 1
			rec.T[samples.RxSW] = 1 // a reply arrived: not lost
			recs = append(recs, rec)
		}
		j := &samples.Joined{Records: recs, Roles: []samples.Role{samples.RoleCapture},
			Clocks: clockMap(samples.CapReqSW, samples.CapRepSW)}
		j.Present[samples.CapReqSW], j.Present[samples.CapRepSW] = true, true
		in := &Input{Run: "x", Warmup: w, Arms: []InputArm{{Name: "a", Rounds: []InputRound{{K: 0, Load: func() (*samples.Joined, error) { return j, nil }}}}}}
		rep, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ref []int64
		for _, rec := range recs {
			if rec.Seq >= uint64(w) {
				ref = append(ref, rec.T[samples.CapRepSW]-rec.T[samples.CapReqSW])
			}
		}
		slices.Sort(ref)
		rs := rep.Arm("a").Metrics[Turnaround].Rounds[0]
		if rs.N != len(ref) {
			t.Fatalf("iter %d W=%d: n %d, reference %d", iter, w, rs.N, len(ref))
		}
		if len(ref) == 0 {
			continue
		}
		for _, c := range []struct {
			q   Quantile
			got *int64
		}{{P50, rs.MedianNS}, {P90, rs.P90NS}, {P99, rs.P99NS}, {P999, rs.P999NS}, {P9999, rs.P9999NS}} {
			if want := ref[bruteRank(c.q, len(ref))-1]; *c.got != want {
				t.Fatalf("iter %d W=%d n=%d: %s = %d, reference %d", iter, w, len(ref), c.q.Name(), *c.got, want)
			}
		}
		if *rs.WorstNS != ref[len(ref)-1] {
			t.Fatalf("iter %d: worst %d, reference %d", iter, *rs.WorstNS, ref[len(ref)-1])
		}
	}
}

func TestSortInt64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 511, 512, 513, 5000, 70000} {
		for _, gen := range []func() int64{
			func() int64 { return int64(r.Uint64()) },        // full range, negatives
			func() int64 { return 3000 + r.Int64N(100_000) }, // latencies: high bytes equal
			func() int64 { return 42 },                       // all equal
			func() int64 { return r.Int64N(7) - 3 },          // around zero
		} {
			v := make([]int64, n)
			for i := range v {
				v[i] = gen()
			}
			want := slices.Clone(v)
			slices.Sort(want)
			sortInt64(v, make([]int64, n))
			if !slices.Equal(v, want) {
				t.Fatalf("n=%d: radix sort differs from slices.Sort", n)
			}
		}
	}
}

// TestCIRanksLarge checks the float computation for large n against the
// normal approximation: the ranks must sit about 1.96σ from the mean.
func TestCIRanksLarge(t *testing.T) {
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		for _, q := range []Quantile{P50, P99, P999} {
			p := float64(q) / 1e6
			mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
			lo, hi := CIRanks(q, n)
			if d := (mean - float64(lo)) / sd; d < 1.7 || d > 2.3 {
				t.Errorf("n=%d %s: lo %d is %.2fσ below the mean", n, q.Name(), lo, d)
			}
			if d := (float64(hi) - mean) / sd; d < 1.7 || d > 2.4 {
				t.Errorf("n=%d %s: hi %d is %.2fσ above the mean", n, q.Name(), hi, d)
			}
		}
	}
}

// The per-sample path of a round (metric value, radix sort into a reused
// buffer) allocates nothing.
func TestHotPathAllocs(t *testing.T) {
	j := joined(clockMap(samples.CapReqSW, samples.CapRepSW), samples.RoleCapture)
	src, ok := pair(j, "capture", samples.CapReqSW, samples.CapRepSW, true)
	if !ok {
		t.Fatal("no capture source")
	}
	vals := make([]int64, 0, 4096)
	buf := make([]int64, 4096)
	r := rand.New(rand.NewPCG(5, 6))
	raw := make([]int64, 4096)
	for i := range raw {
		raw[i] = r.Int64N(1 << 30)
	}
	allocs := testing.AllocsPerRun(20, func() {
		vals = vals[:0]
		for i := range j.Records {
			if v, got := src.Value(&j.Records[i]); got == valSample {
				vals = append(vals, v)
			}
		}
		vals = append(vals[:0], raw...)
		sortInt64(vals, buf)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round", allocs)
	}
}

func BenchmarkSortInt64(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	raw := make([]int64, 10_000)
	for i := range raw {
		raw[i] = 3000 + r.Int64N(1_000_000)
	}
	v, buf := make([]int64, len(raw)), make([]int64, len(raw))
	b.ReportAllocs()
	for b.Loop() {
		copy(v, raw)
		sortInt64(v, buf)
	}
}

// FuzzValue checks a metric value against exact arithmetic for any four
// stamps: a one-clock difference below 0 is negative, one or the network
// difference beyond int64 is overflow, never a sample (2^63−1 and
// −(2^63−1) once gave an rtt of 2 ns).
func FuzzValue(f *testing.F) {
	f.Add(int64(math.MaxInt64), -int64(math.MaxInt64), int64(1), int64(2))
	f.Add(int64(1), int64(5), int64(math.MinInt64), int64(math.MaxInt64))
	f.Add(int64(math.MinInt64), int64(-1), int64(1), int64(math.MaxInt64))
	f.Add(int64(10), int64(3), int64(0), int64(4))
	rtt := Source{A: samples.TxHW, B: samples.RxHW}
	net := Source{A: samples.TxHW, B: samples.RxHW, Sub: true, C: samples.ReqRxHW, D: samples.RepTxHW}
	f.Fuzz(func(t *testing.T, a, b, c, d int64) {
		var r samples.Record
		r.T[samples.TxHW], r.T[samples.RxHW], r.T[samples.ReqRxHW], r.T[samples.RepTxHW] = a, b, c, d
		diff := func(b, a int64) *big.Int { return new(big.Int).Sub(big.NewInt(b), big.NewInt(a)) }
		want := func(ds ...*big.Int) (int64, uint8) {
			for _, d := range ds { // the first impossible difference decides
				if !d.IsInt64() {
					return 0, valOverflow
				}
				if d.Sign() < 0 {
					return 0, valNegative
				}
			}
			if len(ds) == 1 {
				return ds[0].Int64(), valSample
			}
			n := new(big.Int).Sub(ds[0], ds[1])
			if !n.IsInt64() {
				return 0, valOverflow
			}
			return n.Int64(), valSample
		}
		check := func(s *Source, ds ...*big.Int) {
			wv, wg := want(ds...)
			if a == 0 || b == 0 || s.Sub && (c == 0 || d == 0) {
				wv, wg = 0, valMissing
			}
			v, got := s.Value(&r)
			if got != wg || got == valSample && v != wv {
				t.Fatalf("stamps %d %d %d %d, sub %v: value %d (%d), want %d (%d)", a, b, c, d, s.Sub, v, got, wv, wg)
			}
		}
		check(&rtt, diff(b, a))
		check(&net, diff(b, a), diff(d, c))
	})
}
