package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
)

// The RTT rounds' modes: block and busy face sockperf; ModeBlockDefault is
// rig's own low-CPU sender (sleep until 50 µs before due) and carries the
// pacing comparison with cyclictest.
var rttModes = []string{"block", ModeBlockDefault, "busy"}

// peerModes are the modes rig meets sockperf, and native meets Go, in.
var peerModes = []string{"block", "busy"}

// plan is what one interleaved RTT round runs.
type plan struct {
	modes []string // of rttModes, in that order
	// noStamps adds rig with --timestamps off beside rig and sockperf in
	// block and busy (both engines, with engines go,native).
	noStamps bool
	// nativeOff adds the native engine with --timestamps off alone: the
	// rounds --until-decided adds for ToolNativeNoStamps's goals.
	nativeOff bool
	// pacing runs cyclictest (beside ModeBlockDefault, whose lateness it
	// is compared with).
	pacing bool
}

func (p plan) empty() bool { return len(p.modes) == 0 && !p.pacing }

// fullPlan is a planned round: every mode and tool.
var fullPlan = plan{modes: rttModes, noStamps: true, pacing: true}

// NoStampRounds: the rounds without kernel stamps, which no goal uses, run
// in the first NoStampRounds planned rounds only; the rounds after them
// give the goals their time.
const NoStampRounds = 8

// pool is one mode's figures over the rounds.
type pool struct {
	user, closed, sw, sp series
	off                  series // closed-loop user RTT, kernel stamps off
	nat                  series // closed-loop user RTT, the native engine on both ends
	natOff               series // nat, kernel stamps off
	recvSnd, recvRsp     series // rig's kernel-stamp-to-read time per side (RecvRow)
	lostRig, lostSP      int
	lostOff, lostNat     int
	lostNatOff           int
	rigSnd, rigRsp       ThreadRow
	natSnd, natRsp       ThreadRow
	spCli, spSrv         ThreadRow
}

// rttState is what the RTT rounds gathered so far.
type rttState struct {
	pools      map[string]*pool
	late, wake series
	cycR       []Summary
	cyc        Cyclictest
	times      []time.Duration // wall time of each planned round
	planned    int             // rounds run with fullPlan
	extra      int             // rounds added by --until-decided
}

// rtt runs the interleaved RTT rounds: cfg.Rounds of them, more while they
// fit in cfg.Budget, then with cfg.UntilDecided rounds of the modes whose
// goals are still undecided, up to cfg.MaxRounds in all.
func (b *runner) rtt(ctx context.Context, benchStart time.Time) error {
	cfg := b.cfg
	st := &rttState{pools: map[string]*pool{}}
	for _, m := range rttModes {
		st.pools[m] = &pool{}
	}
	k := 0
	for ; k < cfg.Rounds || b.fits(benchStart, st.times, k); k++ {
		t := time.Now()
		p := fullPlan
		p.noStamps = k < NoStampRounds
		if err := b.rttRound(ctx, st, k, p); err != nil {
			return err
		}
		st.times = append(st.times, time.Since(t))
		st.planned++
		b.finishRTT(st)
	}
	for cfg.UntilDecided && k < cfg.MaxRounds {
		p := b.res.undecided()
		if p.empty() {
			break
		}
		if err := b.rttRound(ctx, st, k, p); err != nil {
			return err
		}
		st.extra++
		k++
		b.finishRTT(st)
	}
	b.finishRTT(st)
	return nil
}

// fits reports whether planned round k (beyond cfg.Rounds) fits in the
// budget: the bench's time so far plus the mean planned round so far.
func (b *runner) fits(benchStart time.Time, times []time.Duration, k int) bool {
	if b.cfg.Budget <= 0 || len(times) == 0 || k >= b.cfg.MaxRounds {
		return false
	}
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	return time.Since(benchStart)+sum/time.Duration(len(times)) <= b.cfg.Budget
}

// rttRound runs round k of p's modes; within a mode the tools take turns
// going first (rotate).
func (b *runner) rttRound(ctx context.Context, st *rttState, k int, p plan) error {
	cfg := b.cfg
	count := int(cfg.RoundTime / time.Millisecond)
	warmup := int(cfg.Warmup / time.Millisecond)
	for _, mode := range p.modes {
		pl := st.pools[mode]
		// sockperf's blocking ping-pong client busy-waits between sends
		// (measured: 2.1 s of CPU in a 3 s run at --mps=1000) and blocks
		// only for the reply: rig's sender has that shape when its spin
		// window covers the interval.
		poll, spin := mode, time.Millisecond
		if mode == ModeBlockDefault {
			poll, spin = "block", probe.DefaultSend().Spin // rig send's default
		}
		modeDir := filepath.Join(cfg.Dir, "rtt", fmt.Sprintf("%s-spin-%dus", poll, spin.Microseconds()))
		// rig without kernel stamps: what is left of a gap to sockperf
		// (which takes none) once the kernel's stamping is out of the path.
		runRigOff := func() error {
			b.logf("round %d %s: rig, timestamps off", k+1, mode)
			f, err := b.rigRound(ctx, filepath.Join(modeDir, "rig-off-"+strconv.Itoa(k)), poll, "off", probe.EngineGo, spin, k, time.Millisecond, count, warmup)
			if err != nil {
				return err
			}
			g, err := rigFigures(f)
			if err != nil {
				return fmt.Errorf("rig round (%s, round %d, timestamps off): sender file: %w", poll, k, err)
			}
			pl.off.add(k, g.closed)
			pl.lostOff += g.lost
			return nil
		}
		runRig := func() error {
			b.logf("round %d %s: rig", k+1, mode)
			dir := filepath.Join(modeDir, "rig-"+strconv.Itoa(k))
			f, err := b.rigRound(ctx, dir, poll, "software", probe.EngineGo, spin, k, time.Millisecond, count, warmup)
			if err != nil {
				return err
			}
			if f.Footer != nil {
				pl.rigSnd.add(f.Footer.Thread)
			}
			rsp, err := samples.ReadFile(filepath.Join(dir, samples.FileName(samples.RoleResponder)))
			if err != nil {
				return fmt.Errorf("rig round (%s, round %d): %w", poll, k, err)
			}
			if rsp.Footer != nil {
				pl.rigRsp.add(rsp.Footer.Thread)
			}
			recv, err := responderRecv(rsp, uint64(f.Header.Warmup))
			if err != nil {
				return fmt.Errorf("rig round (%s, round %d): responder file: %w", poll, k, err)
			}
			pl.recvRsp.add(k, recv)
			g, err := rigFigures(f)
			if err != nil {
				return fmt.Errorf("rig round (%s, round %d): sender file: %w", poll, k, err)
			}
			pl.user.add(k, g.user)
			pl.closed.add(k, g.closed)
			pl.sw.add(k, g.sw)
			pl.recvSnd.add(k, g.recv)
			pl.lostRig += g.lost
			if mode == ModeBlockDefault {
				st.late.add(k, g.late)
				st.wake.add(k, g.wake)
			}
			return nil
		}
		if mode == ModeBlockDefault { // no sockperf partner: it has no such mode
			if err := runRig(); err != nil {
				return err
			}
			continue
		}
		// the native engine on both ends (rig send and rig respond --engine
		// native, the same --poll): the engines compared in the same rounds;
		// with timestamps off, its loops against sockperf's like with like.
		native := func(timestamps string) func() error {
			return func() error {
				what := "native engine"
				if timestamps == "off" {
					what += ", timestamps off"
				}
				b.logf("round %d %s: rig %s", k+1, mode, what)
				dir := filepath.Join(modeDir, "rig-native-"+timestamps+"-"+strconv.Itoa(k))
				f, err := b.rigRound(ctx, dir, poll, timestamps, probe.EngineNative, spin, k, time.Millisecond, count, warmup)
				if err != nil {
					return fmt.Errorf("%w (%s)", err, what)
				}
				g, err := rigFigures(f)
				if err != nil {
					return fmt.Errorf("rig round (%s, round %d, %s): sender file: %w", poll, k, what, err)
				}
				if timestamps == "off" {
					pl.natOff.add(k, g.closed)
					pl.lostNatOff += g.lost
					return nil
				}
				rsp, err := samples.ReadFile(filepath.Join(dir, samples.FileName(samples.RoleResponder)))
				if err != nil {
					return fmt.Errorf("rig round (%s, round %d, %s): %w", poll, k, what, err)
				}
				if f.Footer != nil {
					pl.natSnd.add(f.Footer.Thread)
				}
				if rsp.Footer != nil {
					pl.natRsp.add(rsp.Footer.Thread)
				}
				pl.nat.add(k, g.closed)
				pl.lostNat += g.lost
				return nil
			}
		}
		runSockperf := func() error {
			b.logf("round %d %s: sockperf", k+1, mode)
			sp, err := b.sockperf(ctx, filepath.Join(cfg.Dir, "rtt", mode, "sockperf-"+strconv.Itoa(k)), mode == "busy", "1000", cfg.RoundTime)
			if err != nil {
				return err
			}
			if !sp.FullRTT {
				return errors.New("sockperf did not report full RTT (--full-rtt): refusing to compare half round trips")
			}
			pl.sp.add(k, sp.RTTs)
			pl.lostSP += sp.Dropped + sp.Unanswered
			pl.spCli.add(sp.ClientUsage)
			pl.spSrv.add(sp.ServerUsage)
			return nil
		}
		runs := []func() error{runRig}
		if cfg.native() { // beside rig's: each still goes first in turn
			runs = append(runs, native("software"))
		}
		if p.noStamps {
			runs = append(runs, runRigOff)
		}
		if cfg.native() && (p.noStamps || p.nativeOff) {
			runs = append(runs, native("off"))
		}
		runs = append(runs, runSockperf)
		if err := rotate(k, runs...); err != nil {
			return err
		}
	}
	if p.pacing {
		b.logf("round %d: cyclictest", k+1)
		c, err := cyclictest(ctx, filepath.Join(cfg.Dir, "pacing", "cyclictest-"+strconv.Itoa(k)+".txt"), cfg.SenderCPU, count)
		if err != nil {
			return err
		}
		s := c.summary()
		s.Round = k
		st.cycR = append(st.cycR, s)
		st.cyc.add(c)
	}
	return nil
}

// finishRTT turns what the rounds gathered into the result's RTT, thread
// and pacing rows (again after every round: the goals decide whether
// --until-decided goes on).
func (b *runner) finishRTT(st *rttState) {
	res := b.res
	res.RTT, res.Threads, res.Recv = nil, nil, nil
	res.RTTRounds, res.ExtraRounds = st.planned, st.extra
	res.RoundTimes = slices.Clone(st.times)
	for _, mode := range rttModes {
		p := st.pools[mode]
		row := func(tool string, s series, lost int) RTTRow {
			return RTTRow{Mode: mode, Tool: tool, Stats: summarize(slices.Clone(s.all)), Rounds: len(s.perRound), PerRound: s.perRound, Lost: lost}
		}
		res.RTT = append(res.RTT, row("rig user", p.user, p.lostRig), row(ToolClosedLoop, p.closed, p.lostRig), row("rig sw", p.sw, p.lostRig))
		if len(p.recvSnd.all) > 0 || len(p.recvRsp.all) > 0 {
			res.Recv = append(res.Recv, RecvRow{Mode: mode, Side: "sender", Stats: summarize(slices.Clone(p.recvSnd.all))},
				RecvRow{Mode: mode, Side: "responder", Stats: summarize(slices.Clone(p.recvRsp.all))})
		}
		if mode != ModeBlockDefault {
			res.RTT = append(res.RTT, row(ToolNoStamps, p.off, p.lostOff), row("sockperf", p.sp, p.lostSP))
			if b.cfg.native() {
				res.RTT = append(res.RTT, row(ToolNative, p.nat, p.lostNat), row(ToolNativeNoStamps, p.natOff, p.lostNatOff))
			}
		}
		for _, t := range []struct {
			row        *ThreadRow
			tool, side string
		}{{&p.rigSnd, "rig", "sender"}, {&p.rigRsp, "rig", "responder"}, {&p.natSnd, RigNative, "sender"}, {&p.natRsp, RigNative, "responder"},
			{&p.spCli, "sockperf", "sender"}, {&p.spSrv, "sockperf", "responder"}} {
			if t.row.Rounds > 0 {
				r := *t.row
				r.Mode, r.Tool, r.Side = mode, t.tool, t.side
				res.Threads = append(res.Threads, r)
			}
		}
	}
	res.Pacing = []PacingRow{{Tool: PacingRigAll, Stats: summarize(slices.Clone(st.late.all)), PerRound: st.late.perRound},
		{Tool: PacingRigWake, Stats: summarize(slices.Clone(st.wake.all)), PerRound: st.wake.perRound},
		{Tool: PacingCyclictest, Stats: st.cyc.summary(), PerRound: st.cycR}}
}

// undecided is the plan of a round that adds data to the goals the rounds
// so far leave undecided (none: every goal is decided).
func (r *Results) undecided() plan {
	var p plan
	need := map[string]bool{}
	for _, g := range r.Goals() {
		if g.mode != "" && g.Decision == Undecided {
			need[g.mode] = true
			p.nativeOff = p.nativeOff || g.nativeOff
		}
	}
	for _, m := range rttModes {
		if need[m] {
			p.modes = append(p.modes, m)
		}
	}
	p.pacing = need[ModeBlockDefault]
	return p
}

// rotate runs round k of every tool, starting with tool k mod n and going
// round: each tool goes first equally often, so a drift of the host's speed
// (a VM's moves by 2× within minutes: docs/bench.md) favours none. It
// stops at the first error.
func rotate(k int, runs ...func() error) error {
	for i := range runs {
		if err := runs[(k+i)%len(runs)](); err != nil {
			return err
		}
	}
	return nil
}

// series is one figure pooled over the rounds, and summarized per round.
type series struct {
	all      []int64
	perRound []Summary
}

// add appends round k's samples (it sorts v).
func (s *series) add(k int, v []int64) {
	sum := summarize(v)
	sum.Round = k
	s.perRound = append(s.perRound, sum)
	s.all = append(s.all, v...)
}

// summary is the histogram's Summary (µs resolution).
func (c *Cyclictest) summary() Summary {
	s := Summary{N: int(c.N()), ResolutionUS: true}
	s.P50, _ = c.Percentile(analysis.P50)
	s.P99, _ = c.Percentile(analysis.P99)
	s.P999, _ = c.Percentile(analysis.P999)
	s.Max = c.MaxUS * 1000
	return s
}
