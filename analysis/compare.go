package analysis

import "fmt"

// Verdicts of a comparison.
const (
	VerdictReal         = "real difference"
	VerdictNoise        = "within noise"
	VerdictUndersampled = "undersampled"
	VerdictNoData       = "no data"
	VerdictClocks       = "different clocks: not comparable"
	// VerdictIndicative: the rule says different, but with these round
	// counts identical arms are called different too often (≥
	// MaxFalsePositive) for it to be a verdict.
	VerdictIndicative = "indicative only: too few rounds for a verdict"
)

// CompareStats are the statistics compared, in order.
var CompareStats = []string{"median", "p99", "p99.9", "worst"}

// Comparison is one statistic of one metric of an arm against a reference
// (the baseline arm, or the same arm of another run). Delta = this − ref,
// Ratio = this / ref, both from the across-round medians.
//
// Verdict rule: "real difference" when the round ranges [min–max] do not
// overlap AND the 95 % interval envelopes (Summary.CI) do not overlap (for
// worst, which has no interval, the ranges alone), and the rule's
// false-positive rate for two identical arms with these round counts
// (RangesDisjointRate; for percentiles the smaller of it and
// IntervalsDisjointRate) is below MaxFalsePositive; "indicative only" when
// the rule says different at a higher rate. "undersampled" when the
// percentile is undersampled in any round of either side; "different
// clocks" when the sources differ.
type Comparison struct {
	Metric        string   `json:"metric"`
	Stat          string   `json:"stat"`
	Arm           string   `json:"arm"`
	Ref           string   `json:"ref"`
	Source        string   `json:"source"`
	RefSource     string   `json:"ref_source"`
	This          *Spread  `json:"this"`
	RefValue      *Spread  `json:"ref_value"`
	DeltaNS       *int64   `json:"delta_ns"`
	Ratio         *float64 `json:"ratio"`
	RangesOverlap *bool    `json:"ranges_overlap"`
	CIsOverlap    *bool    `json:"cis_overlap"`
	// FalsePositive is the rule's false-positive rate (an upper bound for
	// percentiles) with these round counts; null without a verdict rule.
	FalsePositive *float64 `json:"false_positive_rate"`
	Verdict       string   `json:"verdict"`
	// Frequency says that the two sides' responder CPUs ran at
	// frequencies more than FreqDiffPct apart ("" when not, or unknown).
	Frequency string `json:"frequency,omitempty"`
}

// CompareArms compares every arm of r (except the baseline) against the
// baseline arm, per metric both have and per CompareStats.
func CompareArms(r *Report, baseline string) []Comparison {
	out := []Comparison{}
	base := r.Arm(baseline)
	if base == nil {
		return out
	}
	for _, m := range MetricNames {
		for _, a := range r.Arms {
			if a.Name == baseline || a.Skipped != "" {
				continue
			}
			out = append(out, compareMetric(m, a.Name, baseline, a.Metrics[m], base.Metrics[m])...)
		}
	}
	annotateFreq(out, r.armFreq, r.armFreq, "baseline")
	return out
}

// CompareRuns compares run b against run a arm by arm (same arm names).
// Arms present in only one run are listed in notes.
func CompareRuns(a, b *Report) (cmp []Comparison, notes []string) {
	cmp, notes = []Comparison{}, []string{}
	for _, m := range MetricNames {
		for _, bb := range b.Arms {
			aa := a.Arm(bb.Name)
			if aa == nil {
				continue
			}
			cmp = append(cmp, compareMetric(m, bb.Name, bb.Name, bb.Metrics[m], aa.Metrics[m])...)
		}
	}
	annotateFreq(cmp, b.armFreq, a.armFreq, "same arm in A")
	for _, bb := range b.Arms {
		if a.Arm(bb.Name) == nil {
			notes = append(notes, fmt.Sprintf("arm %q is only in %s", bb.Name, b.Run))
		}
	}
	for _, aa := range a.Arms {
		if b.Arm(aa.Name) == nil {
			notes = append(notes, fmt.Sprintf("arm %q is only in %s", aa.Name, a.Run))
		}
	}
	return cmp, notes
}

func compareMetric(m, arm, ref string, this, other *MetricReport) []Comparison {
	if this == nil && other == nil {
		return nil
	}
	var out []Comparison
	for _, st := range CompareStats {
		c := Comparison{Metric: m, Stat: st, Arm: arm, Ref: ref}
		if this != nil {
			c.Source, c.This = this.Source, this.Summary.Stat(st)
		}
		if other != nil {
			c.RefSource, c.RefValue = other.Source, other.Summary.Stat(st)
		}
		c.Verdict = verdict(&c, st, this, other)
		out = append(out, c)
	}
	return out
}

func verdict(c *Comparison, st string, this, other *MetricReport) string {
	if c.This == nil || c.RefValue == nil {
		return VerdictNoData
	}
	d := c.This.MedianNS - c.RefValue.MedianNS
	c.DeltaNS = &d
	if c.RefValue.MedianNS != 0 {
		c.Ratio = ptr(float64(c.This.MedianNS) / float64(c.RefValue.MedianNS))
	}
	ro := c.This.MinNS <= c.RefValue.MaxNS && c.RefValue.MinNS <= c.This.MaxNS
	c.RangesOverlap = &ro
	if this.Source != other.Source {
		return VerdictClocks
	}
	r, s := c.This.Rounds, c.RefValue.Rounds
	if st == "worst" {
		fp := RangesDisjointRate(r, s)
		c.FalsePositive = &fp
		switch {
		case ro:
			return VerdictNoise
		case fp >= MaxFalsePositive:
			return VerdictIndicative
		}
		return VerdictReal
	}
	q := percentOf(st)
	if contains(this.Summary.Undersampled, q) || contains(other.Summary.Undersampled, q) {
		return VerdictUndersampled
	}
	ea, _ := this.Summary.ciOf(q)
	eb, _ := other.Summary.ciOf(q)
	co := overlap(ea, eb)
	c.CIsOverlap = &co
	fp := min(RangesDisjointRate(r, s), IntervalsDisjointRate(r, s))
	c.FalsePositive = &fp
	switch {
	case ro || co:
		return VerdictNoise
	case fp >= MaxFalsePositive:
		return VerdictIndicative
	}
	return VerdictReal
}

// overlap treats an open side (nil) as unbounded.
func overlap(a, b CIEnvelope) bool {
	// a.low ≤ b.high and b.low ≤ a.high
	le := func(lo, hi *int64) bool { return lo == nil || hi == nil || *lo <= *hi }
	return le(a.LowNS, b.HighNS) && le(b.LowNS, a.HighNS)
}
