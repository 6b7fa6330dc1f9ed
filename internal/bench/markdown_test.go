package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
)

var update = flag.Bool("update", false, "rewrite the golden tables in testdata/*.md")

// rtts are n user RTTs around base ns, spread by step: a round's samples.
func rtts(base, step int64, n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = base + int64(i)*step
	}
	return v
}

// syntheticRTT fills the RTT rounds' state of a bench with fixed figures
// (rounds rounds, every tool in block and busy, rig's default sender; the
// native responder's rounds with engines go,native) and turns it into
// rows through finishRTT, as a run does; the cost rows likewise.
func syntheticRTT(t *testing.T, rounds int, engines ...probe.Engine) *Results {
	t.Helper()
	res := &Results{Config: Config{Rig: "rig", Dir: "d", Engines: engines}}
	if err := res.Config.defaults(); err != nil {
		t.Fatal(err)
	}
	res.Env = Env{Date: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), Commit: "0123456789ab", Rig: "rig test", Kernel: "6.18.0", CPUs: 2,
		LoadBefore: "0.10 0.20 0.30", LoadAfter: "0.40 0.50 0.60", Sockperf: "3.10", Cyclictest: "2.60"}
	b := &runner{cfg: res.Config, res: res}
	st := &rttState{pools: map[string]*pool{}}
	usage := func(k int64) *samples.ThreadUsage {
		return &samples.ThreadUsage{WallNS: 3e9, CPUNS: 1e9 + k*1e7, Voluntary: 3000 - k, Involuntary: 30 + k}
	}
	for _, m := range rttModes {
		st.pools[m] = &pool{}
	}
	for k := range rounds {
		kk := int64(k)
		for i, m := range rttModes {
			p, base := st.pools[m], int64(20_000+5_000*i)+kk*300
			p.user.add(k, rtts(base, 40, 50))
			p.closed.add(k, rtts(base, 35, 45))
			p.sw.add(k, rtts(base-8_000, 30, 50))
			p.recvSnd.add(k, rtts(4_000, 10, 50))
			p.recvRsp.add(k, rtts(9_000, 10, 50))
			p.lostRig++
			p.rigSnd.add(usage(kk))
			p.rigRsp.add(usage(kk + 1))
			if m == ModeBlockDefault {
				st.late.add(k, rtts(2_000, 50, 50))
				st.wake.add(k, rtts(1_500, 50, 40))
				continue
			}
			if k < NoStampRounds {
				p.off.add(k, rtts(base-2_000, 35, 45))
			}
			p.sp.add(k, rtts(base+500-kk*100, 45, 50))
			p.spCli.add(usage(kk + 2))
			p.spSrv.add(usage(kk + 3))
			if res.Config.native() {
				// faster than the Go responder in even rounds, slower in odd ones
				p.nat.add(k, rtts(base-1_000+kk%2*1_600, 30, 45))
				p.lostNat += 2
				if k < NoStampRounds {
					p.natOff.add(k, rtts(base-2_500+kk%2*400, 30, 45))
				}
				p.natSnd.add(usage(kk + 4))
				p.natRsp.add(&samples.ThreadUsage{WallNS: 3e9, CPUNS: 2e9, Voluntary: 3000, Involuntary: kk})
			}
		}
		c := &Cyclictest{MinUS: 1, MaxUS: 9, Buckets: []int64{0, 10, 20, 15, 4, 0, 0, 0, 0, 1}}
		s := c.summary()
		s.Round = k
		st.cycR = append(st.cycR, s)
		st.cyc.add(c)
		st.times = append(st.times, 40*time.Second)
		st.planned++
	}
	b.finishRTT(st)
	tools := []string{CostRig, CostRigNoAsync, CostSockperf}
	if res.Config.native() {
		tools = []string{CostRig, CostRigNoAsync, RigNative, CostSockperf}
	}
	res.Cost = syntheticCost(tools)
	return res
}

// syntheticCost is a counting round's rows per mode, tool and side, with
// fixed counts: per round trip 2 sends and TX-stamp reads, futex and
// tgkill from the Go tools (none from the native programs).
func syntheticCost(tools []string) []CostRow {
	var rows []CostRow
	for _, mode := range []string{"block", "busy"} {
		for i, tool := range tools {
			for j, side := range []string{"sender", "responder"} {
				n := uint64(10*i + j)
				r := CostRow{Mode: mode, Tool: tool, Side: side, Window: 2 * time.Second, Skew: time.Millisecond, RoundTrips: 2000, Threads: 5,
					Syscalls: 8000 + 100*n, BySyscall: map[string]uint64{"sendmsg": 2000, "recvmsg": 4000, "futex": 500 + n, "tgkill": 40 + n, "rt_sigreturn": 40 + n},
					ThreadSyscalls: 6000, Voluntary: 2100, Involuntary: 30 + n, ThreadVoluntary: 2000, ThreadInvoluntary: 20 + n, CPUNS: 9e8, ThreadCPUNS: 8e8}
				switch {
				case tool == CostSockperf:
					r.Threads, r.BySyscall = 1, map[string]uint64{"sendto": 2000, "recvfrom": 2000}
				case tool == RigNative:
					r.Threads, r.StampReads, r.BySyscall = 1, 2000, map[string]uint64{"sendmsg": 2000, "recvmsg": 4000}
					if mode == "busy" && side == "responder" { // a goal not met: one futex in the window
						r.BySyscall["futex"] = 1
					}
				default:
					r.StampReads = 2000
				}
				if tool == CostRig {
					long, short := uint64(20+n), uint64(13)
					r.HeapAllocs, r.AllocRequests, r.ShortAllocs, r.ShortRequests = &long, 20000, &short, 2500
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// TestMarkdownGolden: the results table of fixed figures, byte for byte
// (go test -run TestMarkdownGolden -update ./internal/bench rewrites it).
func TestMarkdownGolden(t *testing.T) {
	for name, res := range map[string]*Results{"results-go.md": syntheticRTT(t, 8, probe.EngineGo), "results-native.md": syntheticRTT(t, 8, Engines...),
		"results-noise.md": syntheticNoise(t, false), "results-noise-osnoise.md": syntheticNoise(t, true)} {
		var got bytes.Buffer
		if err := res.Markdown(&got); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestMarkdownGolden -update writes it)", err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s differs from the table made now:\n%s", path, got.String())
		}
	}
}
