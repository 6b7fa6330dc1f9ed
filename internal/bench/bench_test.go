package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestSmoke runs the bench-smoke code path end to end on a lab of its own:
// rig (Go and native responder) and sockperf rounds in both modes, cyclictest, the rate test, the
// counting rounds, rig noise against cyclictest, `rig report` on a small synthetic run, and with
// --until-decided one more round (one round decides nothing). It checks
// that every part produced figures and the table, not their values (noisy
// VM).
//
// It runs with RIG_BENCH_SMOKE=1 (make bench-smoke, which CI runs), not
// in make test: it is the bench's own path, minutes of rounds that test
// no code the other packages' tests leave unexercised.
func TestSmoke(t *testing.T) {
	if os.Getenv("RIG_BENCH_SMOKE") != "1" {
		t.Skip("the bench smoke runs with RIG_BENCH_SMOKE=1 (make bench-smoke)")
	}
	testbin.Integration(t) // builds namespaces, runs the tools for ~20 s
	for _, tool := range []string{"sockperf", "cyclictest", "taskset", "perf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (make deps installs sockperf and rt-tests): %v", tool, err)
		}
	}
	t.Setenv(native.EnvDir, testbin.Native(t)) // the agents' rig finds rig-respond-native there
	cfg := SmokeConfig(testbin.Rig(t), t.TempDir())
	cfg.AnalysisSizes = []int{20_000}
	cfg.UntilDecided, cfg.MaxRounds = true, 2
	var log bytes.Buffer
	cfg.Log = &log
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // a -race rig on a loaded 2-vCPU VM: 4 min were not enough with the native rounds
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if len(res.RTT) != 17 {
		t.Fatalf("%d RTT rows, want 17 (block and busy × rig user, closed loop, closed loop without kernel stamps, rig sw, sockperf, rig native, rig native without kernel stamps; rig default × rig user, closed loop, rig sw)", len(res.RTT))
	}
	for _, r := range res.RTT {
		if r.Tool == "rig sw" {
			continue // software TX stamps may all be late on a loaded VM; rig user is checked
		}
		s := r.Stats
		if s.N == 0 || !(s.P50 > 0 && s.P50 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) {
			t.Errorf("%s %s: %+v: want samples and ordered percentiles", r.Mode, r.Tool, s)
		}
	}
	// Measuring threads: rig's two sides in its three modes, rig native's
	// and sockperf's in two; a busy thread runs most of its round and
	// never blocks for long.
	if len(res.Threads) != 14 {
		t.Errorf("%d thread rows, want 14 (rig sender + responder × 3 modes, rig native and sockperf × 2): %+v", len(res.Threads), res.Threads)
	}
	for _, th := range res.Threads {
		u := th.Usage
		if th.Rounds != 2 || u.WallNS <= 0 || u.CPUNS <= 0 || u.CPUNS > u.WallNS+int64(100*time.Millisecond) {
			t.Errorf("%s %s %s: %+v: want two rounds with CPU time within their wall time", th.Mode, th.Tool, th.Side, th)
		}
		// A busy thread never sleeps: its context switches are the
		// scheduler's (involuntary), not its own. Its share of the CPU is
		// the machine's to give (other load takes it), so it is logged,
		// not asserted; a thread that blocked per request would show
		// ~1000 voluntary switches a second.
		if th.Mode == "busy" && (th.Tool == "rig" || th.Tool == RigNative) {
			if v := u.PerSecond(u.Voluntary); v > 100 {
				t.Errorf("busy %s %s thread blocked %.0f times a second (%+v), want a thread that never sleeps", th.Tool, th.Side, v, u)
			}
			t.Logf("busy %s %s thread on CPU %.0f %% of its round", th.Tool, th.Side, 100*u.OnCPU())
		}
	}
	all, wake, cyc := res.pacingRow(PacingRigAll), res.pacingRow(PacingRigWake), res.pacingRow(PacingCyclictest)
	if all == nil || wake == nil || cyc == nil || all.Stats.N == 0 || wake.Stats.N == 0 || wake.Stats.N > all.Stats.N || cyc.Stats.N != 4000 {
		t.Errorf("pacing %+v: want rig lateness of every request, of its wake-ups (a subset), and 2 × 2000 cyclictest loops", res.Pacing)
	}
	// The extra round ran rig, rig native and sockperf in every mode (their
	// goals were undecided), not the rounds without kernel stamps.
	for _, r := range res.RTT {
		if want := map[bool]int{true: 1, false: 2}[r.Tool == ToolNoStamps]; r.Rounds != want || len(r.PerRound) != want || r.PerRound[want-1].Round != want-1 {
			t.Errorf("%s %s: %d rounds %+v, want %d", r.Mode, r.Tool, r.Rounds, r.PerRound, want)
		}
	}
	for _, g := range res.Goals() {
		if g.mode != "" && (g.Decision != Undecided || g.Rounds != 2 || !strings.Contains(verdict(g), "deciding takes")) {
			t.Errorf("goal %+v (%s): want undecided after 2 rounds, with the rounds it would take", g, verdict(g))
		}
	}
	if rt := res.Rate; rt == nil || rt.Sent != 50_000 || rt.SockperfRate <= 0 {
		t.Errorf("rate %+v: want 50000 sent at 20µs for 1 s and a sockperf rate", rt)
	}
	if len(res.Analysis) != 1 || res.Analysis[0].Samples != 20_000 || res.Analysis[0].PeakRSSKB <= 0 || res.Analysis[0].Wall <= 0 {
		t.Errorf("analysis %+v", res.Analysis)
	}
	if res.RTTRounds != 1 || res.ExtraRounds != 1 || len(res.RoundTimes) != 1 {
		t.Errorf("rounds %d + %d (%v), want the 1 planned and 1 added", res.RTTRounds, res.ExtraRounds, res.RoundTimes)
	}
	// Work per round trip: 4 tools × 2 modes × 2 sides, each counted over
	// about a second of round trips; every side sends once per round trip
	// and makes at least that syscall; rig's Go processes count their
	// allocations, and its senders and responders read their TX stamps;
	// the native sender's and responder's processes make no futex or
	// tgkill call.
	if len(res.Cost) != 16 {
		t.Errorf("%d cost rows, want 16: %+v", len(res.Cost), res.Cost)
	}
	for _, c := range res.Cost {
		if c.RoundTrips < 500 || c.RoundTrips > 1500 || c.Syscalls < c.RoundTrips || c.BySyscall["sendmsg"]+c.BySyscall["sendto"] < c.RoundTrips || c.CPUNS == 0 {
			t.Errorf("cost %s %s %s: %+v: want ~1000 round trips, a send each", c.Mode, c.Tool, c.Side, c)
		}
		nat := c.Tool == RigNative
		if (c.Tool != CostSockperf && !nat) != (c.HeapAllocs != nil) {
			t.Errorf("cost %s %s %s: allocations %v: want a count for rig's Go processes only", c.Mode, c.Tool, c.Side, c.HeapAllocs)
		}
		if nat {
			t.Logf("cost %s native %s: %d threads, %d futex, %d tgkill, %d preempted in %v", c.Mode, c.Side, c.Threads,
				c.BySyscall["futex"], c.BySyscall["tgkill"], c.ThreadInvoluntary, c.Window)
			if c.BySyscall["futex"] != 0 || c.BySyscall["tgkill"] != 0 || c.Threads != 1 {
				t.Errorf("cost %s native %s: %d threads, %d futex, %d tgkill: want one thread and no runtime's calls", c.Mode, c.Side, c.Threads, c.BySyscall["futex"], c.BySyscall["tgkill"])
			}
		}
		if _, ok := c.AllocsPerRT(); ok != (c.Tool == CostRig) {
			t.Errorf("cost %s %s %s: allocations per round trip computed %v: want them for rig (a long and a short round)", c.Mode, c.Tool, c.Side, ok)
		}
		// One read per send, made right after it: the window may close
		// between the last send it counts and that send's read, and perf
		// switches the sendmsg and the errqueue counters at moments up to
		// Skew apart (CI saw 1008 reads for 1010 sends), so the reads may
		// miss the sends of that long too.
		slack := 1 + uint64(math.Ceil(c.Skew.Seconds()*float64(c.RoundTrips)/c.Window.Seconds()))
		if c.Tool == CostRig {
			t.Logf("cost %s rig %s: %d TX-stamp reads, %d round trips, counters switched within %v", c.Mode, c.Side, c.StampReads, c.RoundTrips, c.Skew)
		}
		if (c.Tool == CostRig || c.Tool == RigNative) && (c.Skew <= 0 || c.StampReads+slack < c.RoundTrips) {
			t.Errorf("cost %s rig %s: %d TX-stamp reads for %d round trips, counters switched within %v: want one at least per request or reply (less %d at the window's ends)", c.Mode, c.Side, c.StampReads, c.RoundTrips, c.Skew, slack)
		}
		if c.Tool == CostSockperf && c.StampReads != 0 {
			t.Errorf("cost %s sockperf %s: %d TX-stamp reads, want none", c.Mode, c.Side, c.StampReads)
		}
	}
	// Noise: two rounds of 1 s, each tool first once, on the responder
	// CPU; osnoise either counted or said why not.
	if nr := res.Noise; nr == nil || len(nr.Rounds) != 2 || nr.CPU != res.Config.ResponderCPU {
		t.Errorf("noise: %v, want 2 rounds on CPU %d", nr != nil, res.Config.ResponderCPU)
		if nr != nil {
			t.Errorf("noise: %d rounds on CPU %d", len(nr.Rounds), nr.CPU)
		}
	} else {
		for k, rd := range nr.Rounds {
			p := rd.Probe
			if rd.ProbeFirst != (k == 0) || len(p.Gaps) != 4 || p.DurationNS < int64(900*time.Millisecond) || p.Floor.Reads == 0 || rd.Cyc.N() != 1000 ||
				(p.OSNoise == nil) == (p.OSNoiseMissing == "") {
				t.Errorf("noise round %d: probe first %v, %d gap rows over %d ns, %d reads, %d wake-ups, osnoise %v / %q", k, rd.ProbeFirst, len(p.Gaps), p.DurationNS,
					p.Floor.Reads, rd.Cyc.N(), p.OSNoise, p.OSNoiseMissing)
			}
		}
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| block | rig user |", "| block, rig default | rig user |", "| busy | sockperf |", "| cyclictest |", "### Paired by round", "Paired by round (rig's wake-ups", "sockperf max ping-pong rate", "| 20000 |", "## Goals", "### Measuring threads", "| busy | rig | responder | 2 |", "| busy | rig user, closed loop, no kernel stamps |", "### What the kernel's stamps cost", "### Kernel stamp to user space", "| block | sender |", "| busy | responder |", "without kernel stamps", "## Work per round trip", "| busy | rig, GODEBUG=asyncpreemptoff=1 | responder |", "syscalls per round trip without TX-stamp reads", "peak RSS", "then 1 round added by `--until-decided`",
		"| busy | rig native, closed loop |", "### Native and Go engines", "| busy | rig native | responder | 2 |", "busy: rig native/rig go median", "the native responder's process makes no futex",
		"the native sender's process makes no futex",
		"| busy | rig native, closed loop, no kernel stamps |", "busy: rig native without kernel stamps/sockperf median", "| busy | native | 2 |",
		"rig native without kernel stamps while its goals were undecided: 2 rounds of it in all",
		"## Platform noise on CPU 1", "| rig noise (gaps) | 2 (cyclictest first) |", "| rig noise (gaps) | all |", "| cyclictest (wake-up latency) | all |", "| osnoise (in the probe's window) | 1 (rig noise first) |", "The probe's detection floor:", "What this shows:"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, md.String())
		}
	}
}

func TestConfigErrors(t *testing.T) {
	base := Config{Rig: "rig", Dir: t.TempDir()}
	for name, mod := range map[string]func(*Config){
		"no rig":           func(c *Config) { c.Rig = "" },
		"fraction seconds": func(c *Config) { c.RoundTime = 1500 * time.Millisecond },
		"warmup too long":  func(c *Config) { c.Warmup = 20 * time.Second },
		"unknown part":     func(c *Config) { c.Parts = []Part{"pacing"} },
		"unpinned":         func(c *Config) { c.SenderCPU = -1 },
		"rate interval":    func(c *Config) { c.RateInterval = -time.Microsecond },
		"max below rounds": func(c *Config) { c.Rounds, c.MaxRounds = 30, 20 },
		"negative budget":  func(c *Config) { c.Budget = -time.Minute },
		"cost window":      func(c *Config) { c.CostWindow = 4 * time.Second },
		"cost time":        func(c *Config) { c.CostTime = 2500 * time.Millisecond },
		"native alone":     func(c *Config) { c.Engines = []probe.Engine{probe.EngineNative} },
		"reflector engine": func(c *Config) { c.Engines = []probe.Engine{probe.EngineGo, probe.EngineXDP} },
		"noise time":       func(c *Config) { c.NoiseTime = 500 * time.Millisecond },
		"noise rounds":     func(c *Config) { c.NoiseRounds = -1 },
	} {
		c := base
		mod(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// CPUs: both unset means sender 0, responder 1; given ones are kept.
	for _, tc := range []struct{ snd, rsp, wantRsp int }{{0, 0, 1}, {0, 2, 2}, {3, 0, 0}} {
		c := base
		c.SenderCPU, c.ResponderCPU = tc.snd, tc.rsp
		if err := c.defaults(); err != nil || c.SenderCPU != tc.snd || c.ResponderCPU != tc.wantRsp {
			t.Errorf("CPUs %d/%d: defaults gave %d/%d (%v), want %d/%d", tc.snd, tc.rsp, c.SenderCPU, c.ResponderCPU, err, tc.snd, tc.wantRsp)
		}
	}
}

// TestSyntheticRun: the synthetic run is what `rig report` reads: rounds of
// at most a million over two arms, every file complete.
func TestSyntheticRun(t *testing.T) {
	dir := t.TempDir()
	rounds, bytes, err := WriteSyntheticRun(dir, 1_500_000)
	if err != nil {
		t.Fatal(err)
	}
	if rounds != 2 || bytes <= 0 {
		t.Fatalf("rounds %d bytes %d, want 2 rounds", rounds, bytes)
	}
	for _, f := range []string{"manifest.json", "arms/base/round-0/sender.samples", "arms/base/round-0/responder.samples", "arms/other/round-0/sender.samples"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Error(err)
		}
	}
	j, err := samples.JoinDir(dir+"/arms/other/round-0", 0)
	if err != nil || len(j.Records) != 500_000 || len(j.Problems) != 0 {
		t.Fatalf("join of round 1: %v, %d records, problems %v", err, len(j.Records), j.Problems)
	}
	if r := j.Records[10]; !(r.T[samples.TxUser] < r.T[samples.ReqRxUser] && r.T[samples.ReqRxUser] < r.T[samples.RxUser]) {
		t.Errorf("record 10 stamps out of order: %v", r.T)
	}
	if _, _, err := WriteSyntheticRun(t.TempDir(), 0); err == nil {
		t.Error("0 samples: no error")
	}
}

// TestNativeRefused: without the native programs where rig finds them, a
// bench with the native engine is refused before anything runs, saying
// why and how to run without it; one without it needs no program.
func TestNativeRefused(t *testing.T) {
	rigDir := t.TempDir()
	t.Setenv(native.EnvDir, "")
	cfg := Config{Rig: rigDir + "/rig", Dir: t.TempDir(), Parts: []Part{PartCost}}
	_, err := Run(context.Background(), cfg)
	if !errors.As(err, new(NativeMissing)) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "--engines go") || !strings.Contains(err.Error(), rigDir+"/rig-respond-native") {
		t.Fatalf("Run without the native program: %v, want a NativeMissing naming where it looked and --engines go", err)
	}
	t.Setenv(native.EnvDir, rigDir) // RIG_NATIVE_DIR is where rig looks then
	if _, err := Run(context.Background(), cfg); !errors.As(err, new(NativeMissing)) {
		t.Fatalf("Run with %s=%s and no program there: %v, want NativeMissing", native.EnvDir, rigDir, err)
	}
	// The responder's program alone is not enough: the native rounds run
	// the native sender too.
	if err := os.WriteFile(rigDir+"/rig-respond-native", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg); !errors.As(err, new(NativeMissing)) || !strings.Contains(err.Error(), rigDir+"/rig-send-native") {
		t.Fatalf("Run without the native sender's program: %v, want NativeMissing naming it", err)
	}
	cfg.Parts = []Part{PartAnalysis}
	cfg.AnalysisSizes = []int{0} // refused by rig report's generator, past the engines' check
	if _, err := Run(context.Background(), cfg); errors.As(err, new(NativeMissing)) {
		t.Fatalf("Run of the analysis part alone: %v, want no native check", err)
	}
}

func TestParseEngines(t *testing.T) {
	for in, want := range map[string]string{"go,native": "go,native", "go": "go", " native , go,go": "native,go"} {
		if e, err := ParseEngines(in); err != nil || engineList(e) != want {
			t.Errorf("ParseEngines(%q) = %v, %v, want %s", in, e, err, want)
		}
	}
	for _, bad := range []string{"", "native", "go,", "go,xdp", "go,Native", "rust"} {
		if e, err := ParseEngines(bad); err == nil {
			t.Errorf("ParseEngines(%q) = %v: no error", bad, e)
		}
	}
}

func FuzzParseEngines(f *testing.F) {
	f.Add("go,native")
	f.Add("native, go")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEngines(s)
		if err != nil {
			return
		}
		if checkEngines(e) != nil || len(e) == 0 || len(e) > len(Engines) {
			t.Fatalf("ParseEngines(%q) = %v", s, e)
		}
	})
}
