package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/hostfs"
	rigrun "github.com/rig-project/rig/internal/runner"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

// The fan-out measurement: on the emulated topology, the paired verdict
// (two responders answering the same requests) against the rotated
// one-at-a-time verdict (one responder, two arms taking turns) for the
// same two placements over the same wall time a round, with a real
// difference (stress-ng on one placement's CPU) and with identical
// placements. It takes minutes: it runs only with RIG_FANOUT_MEASURE=1 and
// writes its table to RIG_FANOUT_MEASURE_OUT (default: the test log).

const measureTraffic = `traffic:
  group: 239.77.0.9:7709
  reply: unicast
  interval: 1ms
  count: %d
  warmup: 2
timestamps: software
rounds: %d
order: rotate
`

// pairedScenario: responder on CPU 0, responder1 on CPU 1; stress puts
// stress-ng on CPU 1 (real difference); identical pins both to CPU 1.
func pairedScenario(rounds, count int, identical bool) string {
	s := "name: measure-paired\nemulate: netns\nresponders: 2\n" + fmt.Sprintf(measureTraffic, count, rounds) +
		"defaults:\n  responder: {poll: block}\n"
	if identical {
		return s + "  responders:\n    responder: {responder: {cpu: 1}}\n    responder1: {responder: {cpu: 1}}\narms:\n  - name: x\n"
	}
	return s + "  responders:\n    responder: {responder: {cpu: 0}}\n    responder1: {responder: {cpu: 1}}\n" +
		"arms:\n  - name: x\n    responders:\n      responder1:\n        load: {stress-ng: --cpu 1 --cpu-method fft, cpus: \"1\"}\n"
}

// rotatedScenario: one responder, arm a on CPU 0 and arm b on CPU 1
// (stress-ng there: real difference), or both on CPU 1 (identical), each
// arm half of the paired round's requests: the same wall time a round.
func rotatedScenario(rounds, count int, identical bool) string {
	s := "name: measure-rotated\nemulate: netns\n" + fmt.Sprintf(measureTraffic, count/2, rounds) +
		"baseline: a\ndefaults:\n  responder: {poll: block}\narms:\n"
	if identical {
		return s + "  - name: a\n    responder: {cpu: 1}\n  - name: b\n    responder: {cpu: 1}\n"
	}
	return s + "  - name: a\n    responder: {cpu: 0}\n  - name: b\n    responder: {cpu: 1}\n" +
		"    load: {stress-ng: --cpu 1 --cpu-method fft, cpus: \"1\"}\n"
}

// verdicts analyses the run directory with only its first r rounds, for
// r = 1..rounds, and returns the verdict on the turnaround median each
// time: the paired comparison's, or arm b's against the baseline a.
func verdicts(t *testing.T, dir string, rounds int, paired bool) []string {
	var out []string
	for r := 1; r <= rounds; r++ {
		in, err := analysis.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in.Arms {
			a := &in.Arms[i]
			if len(a.Rounds) > r {
				a.Rounds = a.Rounds[:r]
			}
		}
		rep, err := analysis.Analyze(in, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := analysis.VerdictNoData
		if paired {
			if len(rep.Paired) == 1 {
				v = rep.Paired[0].Verdict
			}
		} else {
			for _, c := range rep.Comparisons {
				if c.Arm == "b" && c.Metric == analysis.Turnaround && c.Stat == "median" {
					v = c.Verdict
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// firstReal is the number of rounds after which the verdict is first
// "real difference" (0: never).
func firstReal(vs []string) int {
	for i, v := range vs {
		if v == analysis.VerdictReal {
			return i + 1
		}
	}
	return 0
}

func TestFanoutMeasure(t *testing.T) {
	if os.Getenv("RIG_FANOUT_MEASURE") != "1" {
		t.Skip("set RIG_FANOUT_MEASURE=1: runs the emulated topology for minutes")
	}
	testbin.Integration(t)
	testbin.StressNG(t)
	rounds, count, reps := envInt("RIG_FANOUT_ROUNDS", 6), envInt("RIG_FANOUT_COUNT", 2000), envInt("RIG_FANOUT_REPS", 2)
	run := func(name, text string) string {
		dir := t.TempDir()
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		res, err := rigrun.Run(context.Background(), rigrun.Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
			Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "state"), FS: hostfs.Default(), Log: &log})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log.String())
		}
		return res.Dir
	}
	start := time.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "## Fan-out: paired vs rotated rounds-to-decide\n\n- date: %s\n- emulated lab, software stamps, 2 CPUs; %d rounds a run; a round is %d requests at 1 ms for the paired method (both responders answer each) and %d per arm for the rotated one (two arms take turns: the same wall time a round)\n", start.UTC().Format(time.RFC3339), rounds, count, count/2)
	fmt.Fprintf(&b, "- real difference: stress-ng --cpu 1 on CPU 1 where placement B runs (A on CPU 0); identical: A and B both on CPU 1; verdicts on the turnaround median after the first r rounds, r = 1..%d (paired: interval of the median of d excludes 0 and every round agrees; rotated: the comparison rule of the tables)\n\n", rounds)
	b.WriteString("| placements | method | run | verdict after r = 1… rounds | rounds to \"real difference\" |\n|---|---|---:|---|---:|\n")
	for _, identical := range []bool{false, true} {
		n := 1
		what := "real difference"
		if identical {
			n, what = reps, "identical"
		}
		for k := range n {
			for _, paired := range []bool{true, false} {
				text, method := rotatedScenario(rounds, count, identical), "rotated"
				if paired {
					text, method = pairedScenario(rounds, count, identical), "paired"
				}
				vs := verdicts(t, run("measure-"+method, text), rounds, paired)
				fr := "never"
				if f := firstReal(vs); f > 0 {
					fr = strconv.Itoa(f)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", what, method, k+1, strings.Join(vs, "; "), fr)
			}
		}
	}
	fmt.Fprintf(&b, "\nwall time: %s\n", time.Since(start).Round(time.Second))
	if out := os.Getenv("RIG_FANOUT_MEASURE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Log("\n" + b.String())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
