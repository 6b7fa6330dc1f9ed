package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/samples"
)

// fanoutJoin is one responder's join of a synthetic fan-out round: every
// request answered, capture turnarounds turn(seq) on the capture's kernel
// clock.
func fanoutJoin(id uint32, n int, turn func(seq int) int64) *samples.Joined {
	sw := samples.Clock{Source: "sw", Clock: "CLOCK_REALTIME"}
	j := &samples.Joined{Responder: id, Responders: 2,
		Header:   samples.Header{Role: samples.RoleSender, Warmup: 0},
		Headers:  map[samples.Role]samples.Header{},
		Clocks:   map[string]samples.Clock{"tx_sw": sw, "rx_sw": sw, "cap_req_sw": sw, "cap_rep_sw": sw},
		Roles:    []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture},
		Counters: map[samples.Role]samples.Counters{}, Threads: map[samples.Role]samples.ThreadUsage{}, Stopped: map[samples.Role]string{}}
	for _, s := range []samples.Stamp{samples.TxSW, samples.RxSW, samples.CapReqSW, samples.CapRepSW} {
		j.Present[s] = true
	}
	for seq := range n {
		r := samples.Record{Seq: uint64(seq), Responder: id}
		t0 := int64(1_000_000 * (seq + 1))
		r.T[samples.TxSW], r.T[samples.CapReqSW] = t0, t0+10_000
		r.T[samples.CapRepSW] = r.T[samples.CapReqSW] + turn(seq)
		r.T[samples.RxSW] = r.T[samples.CapRepSW] + 10_000
		j.Records = append(j.Records, r)
	}
	return j
}

// TestPaired: two responders answer the same requests; their shared noise
// (up to 200 µs, different every request and round) swamps a 3 µs
// difference in the per-arm tables, and the paired difference finds it:
// "real difference" for the arm where B is 3 µs slower, "within noise"
// where both are alike. The tables get one row per arm × responder.
func TestPaired(t *testing.T) {
	const n, rounds = 5000, 2
	g := rng(7)
	noise := make([][]int64, rounds) // per round and request: shared by both
	own := make([][2][]int64, rounds)
	for k := range rounds {
		for range n {
			noise[k] = append(noise[k], g.intn(200_000))
			own[k][0] = append(own[k][0], g.intn(1_000))
			own[k][1] = append(own[k][1], g.intn(1_000))
		}
	}
	in := &Input{Run: "fanout", Warmup: 0, Responders: []string{"r0", "r1"}, Baseline: ArmResponderName("quiet", "r0")}
	for _, arm := range []string{"quiet", "slow1"} {
		for id, h := range in.Responders {
			ia := InputArm{Name: ArmResponderName(arm, h), Arm: arm, Responder: h}
			for k := range rounds {
				extra := int64(0)
				if arm == "slow1" && id == 1 {
					extra = 3_000
				}
				ia.Rounds = append(ia.Rounds, InputRound{K: k, Load: func() (*samples.Joined, error) {
					return fanoutJoin(uint32(id), n, func(seq int) int64 { return 20_000 + noise[k][seq] + own[k][id][seq] + extra }), nil
				}})
			}
			in.Arms = append(in.Arms, ia)
		}
	}
	rep, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Arms) != 4 || rep.Arms[3].Name != "slow1@r1" {
		t.Fatalf("arms %v", rep.armNames())
	}
	if len(rep.Paired) != 2 {
		t.Fatalf("%d paired comparisons", len(rep.Paired))
	}
	for _, p := range rep.Paired {
		med := p.Stats.Percentile(P50)
		want := VerdictNoise
		if p.Arm == "slow1" {
			want = VerdictReal
			if med.ValueNS < 2_500 || med.ValueNS > 3_500 || *med.CILowNS <= 0 {
				t.Errorf("slow1: median difference %d ns [%v, %v], want ≈ 3000 with the interval above 0", med.ValueNS, *med.CILowNS, *med.CIHighNS)
			}
		}
		if p.Verdict != want || p.A != "r0" || p.B != "r1" || p.Source != "capture sw" || p.Stats.N != rounds*n || len(p.Rounds) != rounds {
			t.Errorf("%s: %+v, want verdict %q over %d differences", p.Arm, p, want, rounds*n)
		}
	}
	// Unpaired, the same 3 µs is lost in the noise.
	for _, c := range rep.Comparisons {
		if c.Arm == "slow1@r1" && c.Metric == Turnaround && c.Stat == "median" && c.Verdict == VerdictReal {
			t.Errorf("the unpaired comparison found the difference through 200 µs of noise: %+v", c)
		}
	}
	var md strings.Builder
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Paired comparison of responders (same requests)", "| slow1 | r0 | r1 | capture sw | 10000 |", "| quiet@r1 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("tables.md lacks %q", want)
		}
	}
	var rmd strings.Builder
	if err := WriteReportMD(&rmd, rep, nil); err != nil || !strings.Contains(rmd.String(), "## Paired comparison of responders (same requests)") {
		t.Errorf("report.md lacks the paired table (%v)", err)
	}
	var js strings.Builder
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"paired": [`) {
		t.Error("report.json lacks the paired comparisons")
	}
	// report.html: both responders' turnaround over time on one axis (the
	// round's over-time plot has a series per arm × responder) and the
	// paired differences' distribution.
	plots, err := Plots(rep)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plots {
		names = append(names, p.Name)
		if strings.HasPrefix(p.Name, Turnaround+"-over-time-round-") && !(strings.Contains(string(p.SVG), "slow1@r0") && strings.Contains(string(p.SVG), "slow1@r1")) {
			t.Errorf("%s lacks a responder's series", p.Name)
		}
	}
	if !slices.Contains(names, Turnaround+"-over-time-round-1") || !slices.Contains(names, "paired-"+Turnaround) {
		t.Errorf("plots %v lack the paired difference", names)
	}
	var html strings.Builder
	if err := WriteReportHTML(&html, rep, plots); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Paired comparison of responders") || !strings.Contains(html.String(), "paired difference of responders") {
		t.Error("report.html lacks the paired table or plot")
	}
}

// TestResponderDied: responder 1 died in round 1 (its file is missing, its
// replies stop half-way): that round is left out for responder 1 alone,
// with the file named; responder 0's rows keep both rounds, and the paired
// comparison uses the round both have.
func TestResponderDied(t *testing.T) {
	const n = 3000
	in := &Input{Run: "died", Warmup: 0, Responders: []string{"r0", "r1"}, Baseline: ArmResponderName("a", "r0"),
		Expect: []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture}}
	for id, h := range in.Responders {
		ia := InputArm{Name: ArmResponderName("a", h), Arm: "a", Responder: h}
		for k := range 2 {
			ia.Rounds = append(ia.Rounds, InputRound{K: k, Load: func() (*samples.Joined, error) {
				j := fanoutJoin(uint32(id), n, func(int) int64 { return 20_000 })
				if id == 1 && k == 1 {
					j.Roles = []samples.Role{samples.RoleSender, samples.RoleCapture}
					for i := n / 2; i < n; i++ {
						r := &j.Records[i]
						r.T[samples.RxSW], r.T[samples.CapRepSW] = 0, 0
					}
				}
				return j, nil
			}})
		}
		in.Arms = append(in.Arms, ia)
	}
	rep, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := rep.Arm("a@r0"), rep.Arm("a@r1")
	if !slices.Equal(r0.Rounds, []int{0, 1}) || !slices.Equal(r1.Rounds, []int{0}) {
		t.Fatalf("rounds analysed: r0 %v, r1 %v", r0.Rounds, r1.Rounds)
	}
	if lo := r1.Accounting[1]; len(lo.LeftOut) != 1 || lo.LeftOut[0] != "responder-1.samples is missing" || lo.Lost != n/2 {
		t.Errorf("responder 1 round 1: %+v", lo)
	}
	for _, p := range rep.Problems {
		if strings.Contains(p, "a@r0") {
			t.Errorf("a problem charged to responder 0: %s", p)
		}
	}
	if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, `arm "a@r1" round 1`) }) {
		t.Errorf("no problem names responder 1's round: %v", rep.Problems)
	}
	if len(rep.Paired) != 1 || rep.Paired[0].Stats.N != n || len(rep.Paired[0].Rounds) != 1 {
		t.Errorf("paired: %+v", rep.Paired)
	}
}
