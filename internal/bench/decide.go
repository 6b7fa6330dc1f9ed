package bench

import (
	"fmt"
	"math"
	"slices"

	"github.com/rig-project/rig/analysis"
)

// EquivalenceBound is the bound of every ratio goal (rig / reference): the
// goal is met when the 95 % confidence interval of the median per-round
// ratio lies at or below it, not met when it lies wholly above it, and
// undecided otherwise. A goal "rig ≤ reference" tested against 1.00 is
// undecidable when the two are equal, which is the case the goal hopes
// for; the bound says how close counts as equal (5 %), so more rounds
// always decide it.
const EquivalenceBound = 1.05

// Decision is the verdict of one goal.
type Decision int

const (
	Undecided Decision = iota
	Met
	NotMet
)

func (d Decision) String() string {
	switch d {
	case Met:
		return "met"
	case NotMet:
		return "not met"
	}
	return "undecided"
}

// Paired is one figure compared round by round: the ratio rig/reference in
// each round both ran, and the median, smallest and largest of those
// ratios. Neighbouring rounds share the machine's state, so on a host whose
// noise drifts from minute to minute the per-round ratio is the fairer
// comparison; the pooled percentiles let a few loud minutes decide.
type Paired struct {
	N                int
	Median, Min, Max float64
	// CILow, CIHigh bound the distribution-free 95 % confidence interval
	// of the median ratio (analysis.CIRanks at 50 %: for 8 rounds the
	// smallest and largest ratio); NaN when that side is open (fewer than
	// 6 rounds).
	CILow, CIHigh float64
	ratios        []float64 // sorted
}

// Decide applies the equivalence rule with bound b: met when the CI's
// upper end is ≤ b, not met when its lower end is > b, else undecided (an
// open side never decides).
func (p Paired) Decide(b float64) Decision {
	switch {
	case p.N == 0:
		return Undecided
	case !math.IsNaN(p.CIHigh) && p.CIHigh <= b:
		return Met
	case !math.IsNaN(p.CILow) && p.CILow > b:
		return NotMet
	}
	return Undecided
}

// MaxRoundsToDecide bounds the search of RoundsToDecide.
const MaxRoundsToDecide = 10_000

// RoundsToDecide estimates how many rounds the rule needs to decide against
// bound b if the per-round ratios keep the spread observed: the smallest n
// (from the rounds run) at which the CI's order statistics, read off the
// observed ratios as quantiles (rank k of n ≈ quantile k/(n+1), linear
// between observed ratios), lie wholly at or below b or wholly above it.
// ok is false when no n up to MaxRoundsToDecide does: the observed median
// is b itself.
func (p Paired) RoundsToDecide(b float64) (n int, ok bool) {
	if p.Decide(b) != Undecided {
		return p.N, true
	}
	if len(p.ratios) == 0 {
		return 0, false
	}
	for n = max(p.N+1, 6); n <= MaxRoundsToDecide; n++ {
		lo, hi := analysis.CIRanks(analysis.P50, n)
		if hi <= n && quantile(p.ratios, float64(hi)/float64(n+1)) <= b {
			return n, true
		}
		if lo >= 1 && quantile(p.ratios, float64(lo)/float64(n+1)) > b {
			return n, true
		}
	}
	return 0, false
}

// quantile is the q-quantile (0 < q < 1) of sorted values, position
// q·(m+1) with linear interpolation, clamped to the smallest and largest.
func quantile(sorted []float64, q float64) float64 {
	m := len(sorted)
	x := q * float64(m+1)
	switch {
	case x <= 1:
		return sorted[0]
	case x >= float64(m):
		return sorted[m-1]
	}
	i := int(x) // 1 ≤ i < m
	f := x - float64(i)
	return sorted[i-1] + f*(sorted[i]-sorted[i-1])
}

// paired compares fig of a and b round by round: the summaries of the
// same round (Summary.Round) are paired; rounds one side lacks, or in
// which either side has no samples, are left out.
func paired(a, b []Summary, fig func(Summary) int64) Paired {
	var r []float64
	for _, x := range a {
		for _, y := range b {
			if x.Round == y.Round && x.N > 0 && y.N > 0 && fig(y) > 0 {
				r = append(r, float64(fig(x))/float64(fig(y)))
				break
			}
		}
	}
	if len(r) == 0 {
		return Paired{}
	}
	slices.Sort(r)
	m := r[len(r)/2]
	if len(r)%2 == 0 {
		m = (r[len(r)/2-1] + r[len(r)/2]) / 2
	}
	p := Paired{N: len(r), Median: m, Min: r[0], Max: r[len(r)-1], CILow: math.NaN(), CIHigh: math.NaN(), ratios: r}
	if lo, hi := analysis.CIRanks(analysis.P50, len(r)); lo >= 1 && hi <= len(r) {
		p.CILow, p.CIHigh = r[lo-1], r[hi-1]
	}
	return p
}

// CI formats the 95 % confidence interval of the median ratio:
// "[0.92–1.20]", with "…" for an open side.
func (p Paired) CI() string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "…"
		}
		return fmt.Sprintf("%.2f", v)
	}
	return "[" + f(p.CILow) + "–" + f(p.CIHigh) + "]"
}

// String formats a paired ratio: "1.05 (0.92–1.20)".
func (p Paired) String() string {
	if p.N == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", p.Median, p.Min, p.Max)
}

// toDecide says how many rounds a paired goal needs at the observed
// spread: "decided", "≈ N rounds", "more than MaxRoundsToDecide", or,
// with no paired round yet, that one is needed first.
func (p Paired) toDecide(b float64) string {
	if p.Decide(b) != Undecided {
		return "decided"
	}
	if p.N == 0 {
		return "a round with samples on both sides first"
	}
	n, ok := p.RoundsToDecide(b)
	if !ok {
		return fmt.Sprintf("more than %d rounds (the observed median is the bound)", MaxRoundsToDecide)
	}
	return fmt.Sprintf("≈ %d rounds", n)
}
