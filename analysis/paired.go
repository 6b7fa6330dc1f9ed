package analysis

import (
	"fmt"
	"slices"

	"github.com/rig-project/rig/internal/samples"
)

// Paired is the paired comparison of two responders of one arm: both
// answered the same requests (fan-out), so each request gives one
// difference turnaround_B − turnaround_A taken at the same instant, and
// the host's time-varying noise, common to both, cancels in it.
//
// Rule (PairedRule): the differences of every analysed round are pooled
// (after warm-up, requests both responders answered, each turnaround from
// the one source both sides' tables use); median, p99 and p99.9 carry the
// distribution-free 95 % order-statistic interval (CIRanks). Verdict:
// "real difference" when the median's interval excludes 0 and every
// round's median difference has the same sign; "within noise" otherwise;
// "undersampled" with fewer than MinTail pooled differences;
// "different clocks" when the two sides' turnarounds come from different
// sources.
type Paired struct {
	Arm    string `json:"arm"`
	A      string `json:"a"` // responder host of the reference side (responder 0)
	B      string `json:"b"`
	Source string `json:"source"` // the turnaround source of both sides
	Stats  Stats  `json:"difference"`
	// Rounds are the per-round medians of the difference (ns) and their
	// sample counts.
	Rounds  []PairedRound `json:"rounds"`
	Verdict string        `json:"verdict"`
}

// PairedRound is one round of a paired comparison.
type PairedRound struct {
	Round    int   `json:"round"`
	N        int   `json:"n"`
	MedianNS int64 `json:"median_ns"`
}

// PairedRule is the rule of the paired comparison, printed with its table.
const PairedRule = "per request, d = turnaround(B) − turnaround(A) of two responders answering the same request (fan-out), after warm-up, requests both answered, one turnaround source on both sides; the rounds' differences pooled; median, p99, p99.9 of d with the distribution-free 95 % order-statistic interval; real difference when the median's interval excludes 0 and every round's median of d has its sign"

// pairedSide is one responder's rounds of one arm.
type pairedSide struct {
	in  *InputArm
	rep *ArmReport
}

// comparePaired builds the paired comparison of every arm analysed with
// several responders: responder 0 against each other one, with each
// one's pooled differences (sorted, for the distribution plot).
func comparePaired(in *Input, rep *Report, w int) (out []Paired, diffs [][]int64, problems []string) {
	if len(in.Responders) < 2 {
		return nil, nil, nil
	}
	byArm := map[string][]pairedSide{}
	var arms []string
	for i := range in.Arms {
		a := &in.Arms[i]
		if a.Arm == "" || a.Skipped != "" {
			continue
		}
		if _, ok := byArm[a.Arm]; !ok {
			arms = append(arms, a.Arm)
		}
		byArm[a.Arm] = append(byArm[a.Arm], pairedSide{in: a, rep: rep.Arm(a.Name)})
	}
	for _, arm := range arms {
		sides := byArm[arm]
		for _, b := range sides[1:] {
			p, d, err := pair2(arm, sides[0], b, w)
			if err != nil {
				problems = append(problems, fmt.Sprintf("paired %s: %s vs %s: %v", arm, sides[0].in.Responder, b.in.Responder, err))
			}
			out, diffs = append(out, p), append(diffs, d)
		}
	}
	return out, diffs, problems
}

// pair2 computes the paired comparison of sides a and b of one arm and
// its pooled differences, sorted.
func pair2(arm string, a, b pairedSide, w int) (Paired, []int64, error) {
	p := Paired{Arm: arm, A: a.in.Responder, B: b.in.Responder, Rounds: []PairedRound{}, Verdict: VerdictNoData}
	ma, mb := a.rep.Metrics[Turnaround], b.rep.Metrics[Turnaround]
	if ma == nil || mb == nil {
		return p, nil, nil
	}
	p.Source = ma.Source
	if ma.Source != mb.Source {
		p.Source = ma.Source + " / " + mb.Source
		p.Verdict = VerdictClocks
		return p, nil, nil
	}
	var all []int64
	for _, k := range a.rep.Rounds {
		if !slices.Contains(b.rep.Rounds, k) {
			continue // left out on one side: never half a pair
		}
		ja, err := loadRound(a.in, k)
		if err != nil {
			return p, nil, err
		}
		jb, err := loadRound(b.in, k)
		if err != nil {
			return p, nil, err
		}
		d, err := differences(ja, jb, ma.Source, w)
		if err != nil {
			return p, nil, fmt.Errorf("round %d: %w", k, err)
		}
		if len(d) == 0 {
			continue
		}
		all = append(all, d...)
		st := Compute(d)
		med, _ := st.Value(P50)
		p.Rounds = append(p.Rounds, PairedRound{Round: k, N: st.N, MedianNS: med})
	}
	p.Stats = Compute(all) // sorts all
	p.Verdict = pairedVerdict(&p)
	return p, all, nil
}

func loadRound(a *InputArm, k int) (*samples.Joined, error) {
	for _, r := range a.Rounds {
		if r.K == k {
			return r.Load()
		}
	}
	return nil, fmt.Errorf("%s has no round %d", a.Name, k)
}

// differences returns, per sequence after warm-up that both joins have a
// turnaround for (from the source labelled label), b − a.
func differences(ja, jb *samples.Joined, label string, w int) ([]int64, error) {
	src := func(j *samples.Joined) (*Source, error) {
		for _, s := range candidates(Turnaround, j) {
			if s.Label == label {
				return &s, nil
			}
		}
		return nil, fmt.Errorf("responder %d's round has no %s turnaround", j.Responder, label)
	}
	sa, err := src(ja)
	if err != nil {
		return nil, err
	}
	sb, err := src(jb)
	if err != nil {
		return nil, err
	}
	ra, rb := afterWarmup(ja.Records, w), afterWarmup(jb.Records, w)
	var out []int64
	for i, k := 0, 0; i < len(ra) && k < len(rb); {
		switch {
		case ra[i].Seq < rb[k].Seq:
			i++
		case ra[i].Seq > rb[k].Seq:
			k++
		default:
			va, ga := sa.Value(&ra[i])
			vb, gb := sb.Value(&rb[k])
			if ga == valSample && gb == valSample {
				out = append(out, vb-va)
			}
			i++
			k++
		}
	}
	return out, nil
}

func pairedVerdict(p *Paired) string {
	if p.Stats.N == 0 {
		return VerdictNoData
	}
	med := p.Stats.Percentile(P50)
	if med == nil || med.Undersampled {
		return VerdictUndersampled
	}
	lo, hi := med.CILowNS, med.CIHighNS
	pos := lo != nil && *lo > 0
	neg := hi != nil && *hi < 0
	for _, r := range p.Rounds {
		pos = pos && r.MedianNS > 0
		neg = neg && r.MedianNS < 0
	}
	if pos || neg {
		return VerdictReal
	}
	return VerdictNoise
}
