package analysis

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Quantile is a percentile in parts per million (99.9 % = 999000). Integer
// ranks keep the nearest-rank rule exact: with float64, 99.9/100·10000 is
// 9990.000000000002 and its ceiling would be off by one.
type Quantile int64

// The percentiles every table carries.
const (
	P50   Quantile = 500000
	P90   Quantile = 900000
	P99   Quantile = 990000
	P999  Quantile = 999000
	P9999 Quantile = 999900
)

// Percentiles lists the percentiles computed for every round, in order.
var Percentiles = []Quantile{P50, P90, P99, P999, P9999}

// Name is the short label: "median", "p90", "p99", "p99.9", "p99.99".
func (q Quantile) Name() string {
	if q == P50 {
		return "median"
	}
	return "p" + q.Percent()
}

// percentOf is the percentage of the statistic Name calls stat ("p99.9":
// "99.9"); "" for one that is no percentile ("worst").
func percentOf(stat string) string {
	for _, q := range Percentiles {
		if q.Name() == stat {
			return q.Percent()
		}
	}
	return ""
}

// Percent is the percentage without trailing zeros: "99.9".
func (q Quantile) Percent() string {
	s := fmt.Sprintf("%d.%04d", q/10000, q%10000)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// Key is the JSON key stem: "median", "p90", "p99", "p999", "p9999".
func (q Quantile) Key() string {
	if q == P50 {
		return "median"
	}
	s := q.Percent()
	out := make([]byte, 0, len(s)+1)
	out = append(out, 'p')
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

// Rank is the 1-based nearest rank of q among n sorted samples:
// ceil(q/100 · n), at least 1. It is 0 when n is 0.
func Rank(q Quantile, n int) int {
	if n <= 0 {
		return 0
	}
	r := int((int64(q)*int64(n) + 999999) / 1000000)
	return max(r, 1)
}

// Percentile is the nearest-rank percentile of sorted (ascending):
// sorted[ceil(q/100·n)−1]. It panics on an empty slice; callers check n.
func Percentile(sorted []int64, q Quantile) int64 {
	return sorted[Rank(q, len(sorted))-1]
}

// MinTail is the undersampling rule: a percentile is "undersampled" when
// fewer than MinTail samples lie at or above its rank, n − rank + 1 <
// MinTail. For p99.9 that needs n ≥ 9 000, for p99.99 n ≥ 90 000.
const MinTail = 10

// Undersampled reports whether percentile q of n samples rests on fewer than
// MinTail samples (see MinTail).
func Undersampled(q Quantile, n int) bool {
	if n <= 0 {
		return true
	}
	return n-Rank(q, n)+1 < MinTail
}

// ConfidenceLevel is the coverage of the percentile intervals.
const ConfidenceLevel = 0.95

// CIRanks returns the 1-based order-statistic ranks [lo, hi] of the
// distribution-free 95 % confidence interval for percentile q from n
// samples: with X ~ Binomial(n, q) the number of samples below the true
// percentile, lo is the largest rank with P(X ≤ lo−1) ≤ 2.5 % and hi the
// smallest with P(X ≤ hi−1) ≥ 97.5 %, so P(x(lo) ≤ ξq < x(hi)) ≥ 95 %. The
// binomial is exact to float64 rounding: its terms are summed in log space
// over mean ± 12σ + 25 (the mass outside is below 1e-25, far below the
// 2.5 % thresholds). lo is 0 when no sample rank is low enough and
// hi is n+1 when none is high enough: that side of the interval is open.
func CIRanks(q Quantile, n int) (lo, hi int) {
	if n <= 0 {
		return 0, 1
	}
	key := ciKey{q, n}
	ciMu.Lock()
	r, ok := ciCache[key]
	ciMu.Unlock()
	if ok {
		return r[0], r[1]
	}
	lo, hi = ciRanks(q, n)
	ciMu.Lock()
	if len(ciCache) > 4096 {
		clear(ciCache)
	}
	ciCache[key] = [2]int{lo, hi}
	ciMu.Unlock()
	return lo, hi
}

// The rounds of a run mostly share n: remember the ranks.
type ciKey struct {
	q Quantile
	n int
}

var (
	ciMu    sync.Mutex
	ciCache = map[ciKey][2]int{}
)

func ciRanks(q Quantile, n int) (lo, hi int) {
	p := float64(q) / 1e6
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	from := max(0, int(mean-12*sd)-25)
	to := min(n, int(mean+12*sd)+25)
	lp, lq := math.Log(p), math.Log1p(-p)
	lgn, _ := math.Lgamma(float64(n) + 1)
	// log pmf(from) once, then the ratio pmf(k+1)/pmf(k) = (n−k)/(k+1)·p/(1−p).
	lf, _ := math.Lgamma(float64(from) + 1)
	lnf, _ := math.Lgamma(float64(n-from) + 1)
	lpmf := lgn - lf - lnf + float64(from)*lp + float64(n-from)*lq
	lratio := lp - lq
	const alpha = (1 - ConfidenceLevel) / 2
	// cdf before `from` is below 1e-300: treat it as 0.
	cdf := 0.0
	lo, hi = 0, n+1
	for k := from; k <= to; k++ {
		cdf += math.Exp(lpmf)
		lpmf += math.Log(float64(n-k)/float64(k+1)) + lratio
		// cdf = P(X ≤ k) = the condition for rank k+1.
		if cdf <= alpha {
			lo = k + 1
		}
		if cdf >= 1-alpha && hi == n+1 {
			hi = k + 1
		}
	}
	if hi > n {
		hi = n + 1
	}
	return lo, hi
}

// PercentileStat is one percentile of one round.
type PercentileStat struct {
	Q       string `json:"q"`    // "99.9"
	Rank    int    `json:"rank"` // 1-based nearest rank
	ValueNS int64  `json:"value_ns"`
	// CILowNS/CIHighNS bound the 95 % order-statistic interval; null when
	// that side is open (not enough samples below or above).
	CILowNS      *int64 `json:"ci_low_ns"`
	CIHighNS     *int64 `json:"ci_high_ns"`
	Undersampled bool   `json:"undersampled"`
}

// Stats are the exact statistics of one round of one metric.
type Stats struct {
	N           int              `json:"n"`
	MinNS       *int64           `json:"min_ns"`
	WorstNS     *int64           `json:"worst_ns"`
	Percentiles []PercentileStat `json:"percentiles"`
}

// Value returns the value of percentile q, or false when n is 0.
func (s *Stats) Value(q Quantile) (int64, bool) {
	p := s.Percentile(q)
	if p == nil {
		return 0, false
	}
	return p.ValueNS, true
}

// Percentile returns the entry of q, or nil.
func (s *Stats) Percentile(q Quantile) *PercentileStat {
	qs := q.Percent()
	for i := range s.Percentiles {
		if s.Percentiles[i].Q == qs {
			return &s.Percentiles[i]
		}
	}
	return nil
}

// Compute sorts values in place and returns their exact statistics.
func Compute(values []int64) Stats {
	sortInt64(values, make([]int64, len(values)))
	return computeSorted(values)
}

// sortInt64 sorts v ascending with an LSD radix sort (8 bits a pass, passes
// where every value has the same byte are skipped: latencies use 3–4 of 8),
// using buf (len ≥ len(v)) as scratch. It is several times faster than
// slices.Sort on the 10^4–10^7 values of a round.
func sortInt64(v, buf []int64) {
	if len(v) < 512 {
		slices.Sort(v)
		return
	}
	const flip = 1 << 63 // order negative values first
	var counts [8][256]int
	for _, x := range v {
		u := uint64(x) ^ flip
		for b := 0; b < 8; b++ {
			counts[b][byte(u>>(8*b))]++
		}
	}
	src, dst := v, buf[:len(v)]
	for b := 0; b < 8; b++ {
		c := &counts[b]
		shift := uint(8 * b)
		if c[byte((uint64(v[0])^flip)>>shift)] == len(v) {
			continue // one byte value for all: this pass would not move anything
		}
		var off [256]int
		sum := 0
		for i := range off {
			off[i] = sum
			sum += c[i]
		}
		for _, x := range src {
			k := byte((uint64(x) ^ flip) >> shift)
			dst[off[k]] = x
			off[k]++
		}
		src, dst = dst, src
	}
	if &src[0] != &v[0] {
		copy(v, src)
	}
}

func computeSorted(v []int64) Stats {
	s := Stats{N: len(v)}
	if len(v) == 0 {
		return s
	}
	s.MinNS, s.WorstNS = ptr(v[0]), ptr(v[len(v)-1])
	for _, q := range Percentiles {
		r := Rank(q, len(v))
		lo, hi := CIRanks(q, len(v))
		ps := PercentileStat{Q: q.Percent(), Rank: r, ValueNS: v[r-1], Undersampled: Undersampled(q, len(v))}
		if lo >= 1 {
			ps.CILowNS = ptr(v[lo-1])
		}
		if hi <= len(v) {
			ps.CIHighNS = ptr(v[hi-1])
		}
		s.Percentiles = append(s.Percentiles, ps)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// Spread is a statistic across rounds: the median of the per-round values
// (nearest-rank, so the lower middle for an even count: no interpolation)
// with the minimum and maximum.
type Spread struct {
	MedianNS int64 `json:"median_ns"`
	MinNS    int64 `json:"min_ns"`
	MaxNS    int64 `json:"max_ns"`
	Rounds   int   `json:"rounds"`
}

// SpreadOf summarizes per-round values; ok is false when there are none.
func SpreadOf(vals []int64) (Spread, bool) {
	if len(vals) == 0 {
		return Spread{}, false
	}
	v := slices.Clone(vals)
	slices.Sort(v)
	return Spread{MedianNS: Percentile(v, P50), MinNS: v[0], MaxNS: v[len(v)-1], Rounds: len(v)}, true
}

// MaxFalsePositive is the highest false-positive rate (the chance that two
// arms drawn from one distribution are called different) at which a
// comparison still gives a verdict; above it the verdict is indicative.
const MaxFalsePositive = 0.01

// RangesDisjointRate is the probability that the per-round values of two
// identical arms, r and s rounds drawn from one continuous distribution,
// have ranges [min–max] that do not overlap: of the (r+s)! equally likely
// orders of the r+s values, r!·s! put all of one arm below all of the
// other, and there are two such arrangements, so
//
//	2·r!·s!/(r+s)! = 2 / C(r+s, r)
//
// (1/3 at 2 and 2 rounds, 1/10 at 3 and 3, 2/252 ≈ 0.79 % at 5 and 5). It
// is 1 when a side has no round.
func RangesDisjointRate(r, s int) float64 {
	if r <= 0 || s <= 0 {
		return 1
	}
	// C(r+s, r) as a product of ratios: exact enough in float64 and free
	// of overflow for any round count a run can have.
	c := 1.0
	for i := 1; i <= min(r, s); i++ {
		c = c * float64(r+s-min(r, s)+i) / float64(i)
	}
	return min(1, 2/c)
}

// IntervalsDisjointRate bounds the probability that the 95 % interval
// envelopes (Summary.CI: the lowest low and highest high over the rounds)
// of two identical arms with r and s rounds do not overlap. Each round's
// interval lies wholly above the true percentile with probability at most
// 2.5 % and wholly below it with at most 2.5 % (CIRanks), so an envelope
// misses it on one side with at most 0.025^r; two envelopes can only be
// disjoint when one of them misses it, hence at most 2·(0.025^r + 0.025^s).
func IntervalsDisjointRate(r, s int) float64 {
	if r <= 0 || s <= 0 {
		return 1
	}
	return min(1, 2*(math.Pow(0.025, float64(r))+math.Pow(0.025, float64(s))))
}
