package analysis

import (
	"testing"

	"github.com/rig-project/rig/internal/samples"
)

// benchInput is 2 arms × 5 rounds of perRound joined records each
// (sender, responder and capture, software clocks as on the CI VM). The two
// rounds are generated once and every round of an arm reuses them: Analyze
// only reads records, so the benchmark measures the analysis, not the
// generator.
func benchInput(b *testing.B, perRound int) *Input {
	b.Helper()
	spec := genSpec{Arms: []string{"base", "other"}, Count: perRound, Warmup: 2, Seed: 7, Capture: true}
	ck := clockMap(samples.TxSW, samples.RxSW, samples.ReqRxSW, samples.RepTxSW, samples.CapReqSW, samples.CapRepSW)
	in := &Input{Run: "bench", Warmup: 2, Baseline: "base"}
	for ai, name := range spec.Arms {
		snd, rsp, cpt := genRound(spec, ai, 0)
		j := &samples.Joined{Clocks: ck, Roles: []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture}}
		for s := samples.Stamp(0); s < samples.NumStamps; s++ {
			j.Present[s] = true
		}
		j.Records = make([]samples.Record, len(snd))
		for i := range snd {
			r := snd[i]
			for s := samples.Stamp(0); s < samples.NumStamps; s++ {
				r.T[s] |= rsp[i].T[s] | cpt[i].T[s]
			}
			j.Records[i] = r
		}
		arm := InputArm{Name: name}
		for k := 0; k < 5; k++ {
			arm.Rounds = append(arm.Rounds, InputRound{K: k, Load: func() (*samples.Joined, error) { return j, nil }})
		}
		in.Arms = append(in.Arms, arm)
	}
	return in
}

func benchAnalyze(b *testing.B, perRound int) {
	in := benchInput(b, perRound)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := Analyze(in, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Arm("other").Metrics[Turnaround].Summary.N != 5*(perRound-2) {
			b.Fatal("wrong n")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10*perRound), "ns/sample")
}

// BenchmarkAnalyze10M analyses 10 million samples (2 arms × 5 rounds × 1 M).
// Too heavy for -race; run with -bench Analyze10M -benchtime 1x.
func BenchmarkAnalyze10M(b *testing.B) { benchAnalyze(b, 1_000_000) }

// BenchmarkAnalyze1M is the same with 1 million samples, to check that time
// grows linearly.
func BenchmarkAnalyze1M(b *testing.B) { benchAnalyze(b, 100_000) }
