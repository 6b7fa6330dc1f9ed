// Package bench measures rig against the tools its users already trust, on
// one emulated lab, in interleaved rounds (docs/bench.md):
//
//   - RTT at 1 request/ms: rig (multicast request, unicast reply) against
//     `sockperf ping-pong --mps=1000 --full-rtt` with `sockperf server
//     --force-unicast-reply` in the same shape, responder blocking and
//     busy-polling (sockperf --nonblocked on both ends);
//   - pacing: rig sender lateness against `cyclictest -i 1000` on the
//     sender's CPU for the same duration;
//   - rate: rig at 20 µs for a fixed time (loss, duplicates, TX stamps
//     paired, lateness), and sockperf's max ping-pong rate for reference;
//   - analysis: wall time and peak RSS of `rig report` on synthetic runs;
//   - cost: what each tool does per round trip (syscalls, wake-ups, CPU
//     time, allocations), counted in separate rounds under perf;
//   - noise: `rig noise` against cyclictest (and osnoise, where the
//     kernel has it) on the responder CPU, in rounds of their own.
//
// Both tools get the same namespaces and the same CPUs (the whole process
// is started under taskset), and every percentile is computed here from
// raw samples with the nearest-rank rule of package analysis, never taken
// from a tool's own interpolated summary.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/round"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// Part names one section of the bench.
type Part string

// The parts.
const (
	PartRTT      Part = "rtt" // RTT vs sockperf, and pacing vs cyclictest inside the same rounds
	PartRate     Part = "rate"
	PartAnalysis Part = "analysis"
	PartCost     Part = "cost"  // work per round trip, counted in rounds of its own
	PartNoise    Part = "noise" // the platform-noise probe against cyclictest, no lab
)

// AllParts lists every part in the order they run: the RTT rounds last, so
// that a time budget (Config.Budget) gives them what the others left.
var AllParts = []Part{PartNoise, PartCost, PartRate, PartAnalysis, PartRTT}

// Config is one bench run.
type Config struct {
	Rig string // rig binary run in the lab (required)
	Dir string // work directory for sample files and tool output (required)
	// Lab is an existing lab to use; "" builds a fresh one and removes it.
	Lab       string
	Rounds    int           // interleaved rounds, at least (default 24)
	RoundTime time.Duration // per tool and round at 1 ms; whole seconds (default 3 s)
	// Budget: while the whole bench's time so far plus a mean round fits
	// in it, more rounds are run after the first Rounds (0: exactly Rounds).
	Budget time.Duration
	// UntilDecided: after the planned rounds, rounds of the modes whose
	// ratio goals are undecided are added until every goal is decided or
	// MaxRounds rounds ran.
	UntilDecided bool
	MaxRounds    int           // bounds Budget and UntilDecided (default 96)
	Warmup       time.Duration // leading part of each rig round left out (default 500 ms; sockperf drops its own ~400 ms)
	SenderCPU    int           // default 0
	ResponderCPU int           // default 1 (when both are 0)
	Size         int           // UDP payload bytes for both tools (default 64)
	// Lead: rig's responder runs alone this long before its sender starts
	// (default DefaultLead; negative: no lead).
	Lead time.Duration

	RateInterval time.Duration // default 20 µs
	RateTime     time.Duration // default 10 s
	RatePoll     string        // responder mode in the rate test (default busy)
	MaxRateTime  time.Duration // sockperf --mps=max; whole seconds (default 3 s)

	// AnalysisSizes are the synthetic sample counts `rig report` runs on
	// (default 1M, 10M, 100M).
	AnalysisSizes []int

	// CostTime is each counting round's time (whole seconds, default 5 s);
	// CostWindow the steady part of it that is counted (default 2 s).
	CostTime, CostWindow time.Duration

	// Engines are the responder engines of the RTT and cost rounds:
	// probe.EngineGo, which the other rounds use too, and with it
	// probe.EngineNative (nil: both). The native rounds need the native
	// program where rig finds it; without it Run refuses them.
	Engines []probe.Engine

	// NoiseRounds of NoiseTime per tool (default 4 of 10 s: each tool
	// goes first equally often), the probe at NoiseSched (default
	// SCHED_OTHER, rig noise's).
	NoiseRounds int
	NoiseTime   time.Duration
	NoiseSched  cpusched.Sched

	Parts []Part // nil: all
	Log   io.Writer
}

func (c *Config) defaults() error {
	if c.Rig == "" || c.Dir == "" {
		return errors.New("bench: Config.Rig and Config.Dir are required")
	}
	if c.Rounds == 0 {
		c.Rounds = 24
	}
	if c.RoundTime == 0 {
		c.RoundTime = 3 * time.Second
	}
	if c.MaxRounds == 0 {
		c.MaxRounds = max(96, c.Rounds)
	}
	if c.CostTime == 0 {
		c.CostTime = 5 * time.Second
	}
	if c.CostWindow == 0 {
		c.CostWindow = 2 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * time.Millisecond
	}
	if c.Size == 0 {
		c.Size = 64
	}
	if c.SenderCPU == 0 && c.ResponderCPU == 0 {
		// Unset (0 is a CPU, so both 0 reads as "not given"): the two
		// sides on one CPU would halve each busy loop's share of it.
		c.ResponderCPU = 1
	}
	switch {
	case c.Lead == 0:
		c.Lead = DefaultLead
	case c.Lead < 0:
		c.Lead = 0
	}
	if c.RateInterval == 0 {
		c.RateInterval = 20 * time.Microsecond
	}
	if c.RateTime == 0 {
		c.RateTime = 10 * time.Second
	}
	if c.RatePoll == "" {
		c.RatePoll = "busy"
	}
	if c.MaxRateTime == 0 {
		c.MaxRateTime = 3 * time.Second
	}
	if c.NoiseRounds == 0 {
		c.NoiseRounds = 4
	}
	if c.NoiseTime == 0 {
		c.NoiseTime = 10 * time.Second
	}
	if c.AnalysisSizes == nil {
		c.AnalysisSizes = []int{1_000_000, 10_000_000, 100_000_000}
	}
	if c.Parts == nil {
		c.Parts = AllParts
	}
	if c.Engines == nil {
		c.Engines = Engines
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("bench: rounds %d: want at least 1", c.Rounds)
	case c.RoundTime < time.Second || c.RoundTime%time.Second != 0:
		return fmt.Errorf("bench: round time %v: want whole seconds, at least 1s (sockperf -t takes seconds)", c.RoundTime)
	case c.MaxRounds < c.Rounds:
		return fmt.Errorf("bench: max rounds %d is below rounds %d", c.MaxRounds, c.Rounds)
	case c.Budget < 0:
		return fmt.Errorf("bench: budget %v: want a positive duration (or none)", c.Budget)
	case c.CostTime < time.Second || c.CostTime%time.Second != 0:
		return fmt.Errorf("bench: cost round time %v: want whole seconds, at least 1s", c.CostTime)
	case c.CostWindow <= 0 || c.CostWindow > c.CostTime/2:
		return fmt.Errorf("bench: cost window %v: want more than 0 and at most half the cost round time %v", c.CostWindow, c.CostTime)
	case c.MaxRateTime < time.Second || c.MaxRateTime%time.Second != 0:
		return fmt.Errorf("bench: max-rate time %v: want whole seconds, at least 1s", c.MaxRateTime)
	case c.Warmup < 0 || c.Warmup >= c.RoundTime:
		return fmt.Errorf("bench: warm-up %v must be shorter than the round time %v", c.Warmup, c.RoundTime)
	case c.RateInterval <= 0 || c.RateTime < c.RateInterval:
		return fmt.Errorf("bench: rate interval %v / time %v: want 0 < interval ≤ time", c.RateInterval, c.RateTime)
	case c.NoiseRounds < 1 || c.NoiseTime < time.Second || c.NoiseTime > time.Hour || c.NoiseTime%time.Millisecond != 0:
		return fmt.Errorf("bench: noise rounds %d of %v: want at least 1 round of 1s..1h in whole ms (rig noise --for, cyclictest loops of 1 ms)", c.NoiseRounds, c.NoiseTime)
	case c.SenderCPU < 0 || c.ResponderCPU < 0:
		return fmt.Errorf("bench: sender CPU %d / responder CPU %d: both tools are pinned, give CPUs", c.SenderCPU, c.ResponderCPU)
	}
	if err := checkEngines(c.Engines); err != nil {
		return err
	}
	for _, p := range c.Parts {
		if !slices.Contains(AllParts, p) {
			return fmt.Errorf("bench: unknown part %q: want one of %v", p, AllParts)
		}
	}
	return nil
}

func (c *Config) has(p Part) bool { return slices.Contains(c.Parts, p) }

// native reports whether the RTT and cost rounds run the native engine.
func (c *Config) native() bool { return slices.Contains(c.Engines, probe.EngineNative) }

// Engines are the responder engines the bench can run, in the order
// --engines lists them.
var Engines = []probe.Engine{probe.EngineGo, probe.EngineNative}

// checkEngines refuses engines the bench does not run, and a list
// without the Go engine: the reference rows (the default sender's pacing,
// the rate test, the rounds without kernel stamps) are its.
func checkEngines(es []probe.Engine) error {
	for _, e := range es {
		if !slices.Contains(Engines, e) {
			return fmt.Errorf("bench: engine %s: want go or native (the reflector engines have no loop to compare)", e)
		}
	}
	if !slices.Contains(es, probe.EngineGo) {
		return fmt.Errorf("bench: engines %v: want go among them (the pacing, rate and kernel-stamp rows are the Go engine's): go,native or go", es)
	}
	return nil
}

// ParseEngines parses a comma-separated list of responder engines
// ("go,native").
func ParseEngines(s string) ([]probe.Engine, error) {
	var out []probe.Engine
	for _, f := range strings.Split(s, ",") {
		e, err := probe.ParseEngine(strings.TrimSpace(f))
		if err != nil || strings.TrimSpace(f) == "" {
			return nil, fmt.Errorf("engines %q: want a comma-separated list of go and native (go,native)", s)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if err := checkEngines(out); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "bench: "))
	}
	return out, nil
}

// Results is what a bench run measured.
type Results struct {
	Config   Config
	Env      Env
	RTT      []RTTRow    // per responder mode: rig user, rig sw, sockperf
	Threads  []ThreadRow // the measuring threads' CPU use, per mode, tool and side
	Pacing   []PacingRow // rig lateness, cyclictest
	Recv     []RecvRow   // rig's kernel-to-user receive time, per mode and side
	Rate     *RateResult // nil when not run
	Analysis []AnalysisRow
	Cost     []CostRow    // per mode, tool and side; nil when not run
	Noise    *NoiseResult // nil when not run
	Notes    []string
	Elapsed  time.Duration
	// RTTRounds are the planned RTT rounds run (every mode and tool),
	// RoundTimes their wall times; ExtraRounds the rounds --until-decided
	// added for undecided goals.
	RTTRounds, ExtraRounds int
	RoundTimes             []time.Duration
}

// RTTRow is one tool's pooled RTTs in one responder mode.
type RTTRow struct {
	Mode     string // "block" or "busy"
	Tool     string // "rig user", ToolClosedLoop, "rig sw", "sockperf"
	Stats    Summary
	Rounds   int
	PerRound []Summary // one per round, in order (empty rounds have N 0)
	Lost     int       // rig: lost requests; sockperf: dropped messages
}

// ThreadRow is one tool's measuring thread on one side in one mode, its
// CPU use summed over the rounds. For rig it is the sender's pacing thread
// or the responder's loop over the round (the sample file's footer); for
// sockperf the whole process over its whole life (wait4's rusage).
type ThreadRow struct {
	Mode, Tool, Side string // Side: "sender" or "responder"
	Usage            samples.ThreadUsage
	Rounds           int // rounds that gave figures
}

// add sums one round's figures (nil: that round gave none).
func (t *ThreadRow) add(u *samples.ThreadUsage) {
	if u == nil {
		return
	}
	t.Usage.WallNS += u.WallNS
	t.Usage.CPUNS += u.CPUNS
	t.Usage.Voluntary += u.Voluntary
	t.Usage.Involuntary += u.Involuntary
	if u.HeapAllocs != nil {
		n := *u.HeapAllocs
		if t.Usage.HeapAllocs != nil {
			n += *t.Usage.HeapAllocs
		}
		t.Usage.HeapAllocs = &n
	}
	t.Rounds++
}

// RecvRow is how long rig took, on one side in one mode, from the kernel's
// software RX stamp of a datagram to its user-space read: the sender's
// rx_user − rx_sw of the replies, the responder's req_rx_user − req_rx_sw
// of the requests (pooled over the rounds, warm-up excluded).
type RecvRow struct {
	Mode, Side string
	Stats      Summary
}

// PacingRow is one tool's lateness on the sender CPU.
type PacingRow struct {
	Tool     string // PacingRigAll, PacingRigWake or PacingCyclictest
	Stats    Summary
	PerRound []Summary
}

// ToolClosedLoop is rig's user RTT of the requests sockperf's closed-loop
// ping-pong would have sent (see rigFigures); the RTT goals use it.
const ToolClosedLoop = "rig user, closed loop"

// ToolNoStamps is ToolClosedLoop from rounds run with `--timestamps off`:
// no kernel stamps on either end, like sockperf. Against ToolClosedLoop it
// shows what the kernel's stamping adds to the round trip; against
// sockperf, what is left of a gap once it is out of the path.
const ToolNoStamps = "rig user, closed loop, no kernel stamps"

// RigNative names the rows of the native engine on both ends (`rig send
// --engine native` against `rig respond --engine native`, the same
// --poll): measuring threads and work per round trip; ToolNative is its
// closed-loop user RTT, compared with sockperf's and with
// ToolClosedLoop's (the Go engine on both ends) in the same rounds.
const (
	RigNative  = "rig native"
	ToolNative = "rig native, closed loop"
)

// ToolNativeNoStamps is ToolNative from rounds run with `--timestamps off`
// on both native ends: the native loops against sockperf's like with like
// (neither takes a kernel stamp), and against ToolNative what the kernel's
// stamping adds to the native engine's round trip.
const ToolNativeNoStamps = "rig native, closed loop, no kernel stamps"

// The pacing rows: rig's lateness of every request, of its wake-ups alone
// (cyclictest's rule: missed periods are skipped, see rigFigures), and
// cyclictest's wake-up latency.
const (
	PacingRigAll     = "rig lateness, every request"
	PacingRigWake    = "rig lateness, wake-ups"
	PacingCyclictest = "cyclictest"
)

func (r *Results) pacingRow(tool string) *PacingRow {
	for i := range r.Pacing {
		if r.Pacing[i].Tool == tool {
			return &r.Pacing[i]
		}
	}
	return nil
}

// Summary holds the nearest-rank figures of one pooled sample.
type Summary struct {
	Round          int // the round of a per-round summary
	N              int
	P50, P99, P999 int64 // ns
	Max            int64
	ResolutionUS   bool // whole µs (cyclictest)
}

func summarize(v []int64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	st := analysis.Compute(v) // sorts v
	get := func(q analysis.Quantile) int64 { x, _ := st.Value(q); return x }
	return Summary{N: len(v), P50: get(analysis.P50), P99: get(analysis.P99), P999: get(analysis.P999), Max: v[len(v)-1]}
}

// Run runs the parts of cfg and returns what they measured. Tool failures
// end the run with an error naming the tool and its last output.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.native() && (cfg.has(PartRTT) || cfg.has(PartCost)) {
		// Refused before anything runs, never skipped: rig respond
		// --engine native would find no program either.
		for _, prog := range []string{native.RespondProgram, native.SendProgram} {
			if _, err := native.FindFor(cfg.Rig, prog); err != nil {
				return nil, NativeMissing{fmt.Errorf("bench: the native engine's rounds (--engines %s): %w; or run without them: --engines go", engineList(cfg.Engines), err)}
			}
		}
	}
	if cfg.has(PartNoise) {
		if _, err := native.FindFor(cfg.Rig, native.NoiseProgram); err != nil {
			return nil, NativeMissing{fmt.Errorf("bench: the noise part (rig noise): %w; or run without it: --parts cost,rate,analysis,rtt", err)}
		}
	}
	start := time.Now()
	res := &Results{Config: cfg, Env: snapshotEnv(ctx, cfg.Rig)}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.has(PartNoise) { // before the lab: its agents would run on the CPU
		if err := (&runner{cfg: cfg, res: res, start: start}).noise(ctx); err != nil {
			return res, err
		}
	}
	if cfg.has(PartAnalysis) {
		rows, notes, err := benchAnalysis(ctx, cfg)
		res.Analysis, res.Notes = rows, append(res.Notes, notes...)
		if err != nil {
			return res, err
		}
	}
	if cfg.has(PartRTT) || cfg.has(PartRate) || cfg.has(PartCost) {
		topo, cleanup, err := lab(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		b := &runner{cfg: cfg, topo: topo, res: res, start: start}
		// One agent per side for the whole bench, started under taskset:
		// the rig processes it starts inherit the CPU, as sockperf does.
		for _, a := range []struct {
			dst  **agent.Client
			role netlab.Role
			cpu  int
		}{{&b.snd, netlab.Sender, cfg.SenderCPU}, {&b.rsp, netlab.Responder, cfg.ResponderCPU}} {
			c, err := agent.DialRig(ctx, string(a.role), b.prefix(a.role, a.cpu), cfg.Rig, nil, cfg.Log)
			if err != nil {
				return nil, fmt.Errorf("bench: starting the %s agent: %w", a.role, err)
			}
			defer c.Close()
			*a.dst = c
		}
		if cfg.has(PartCost) {
			if err := b.cost(ctx); err != nil {
				return res, err
			}
		}
		if cfg.has(PartRate) {
			if err := b.rate(ctx); err != nil {
				return res, err
			}
		}
		if cfg.has(PartRTT) {
			if err := b.rtt(ctx, start); err != nil {
				return res, err
			}
		}
	}
	res.Env.LoadAfter = readLoadavg()
	res.Elapsed = time.Since(start)
	return res, nil
}

// NativeMissing refuses the native engine's rounds: rig would not find
// a native program.
type NativeMissing struct{ error }

func (e NativeMissing) Unwrap() error { return e.error }

// engineList is engines as --engines takes them.
func engineList(es []probe.Engine) string {
	var s []string
	for _, e := range es {
		s = append(s, e.String())
	}
	return strings.Join(s, ",")
}

func lab(ctx context.Context, cfg Config) (*netlab.Topology, func(), error) {
	if cfg.Lab != "" {
		t, err := netlab.Load(cfg.Lab)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: lab %q: %w (build it with `rig lab up --name %s`, or leave --lab out)", cfg.Lab, err, cfg.Lab)
		}
		return t, func() {}, nil
	}
	name := netlab.UniqueName("rb")
	self := owner.Self() // a killed bench leaves a stale lab that rig restore removes
	t, err := netlab.Up(ctx, name, netlab.Options{Owner: &self})
	if err != nil {
		return nil, nil, fmt.Errorf("bench: building lab %s: %w", name, err)
	}
	return t, func() {
		if err := netlab.Down(name); err != nil {
			fmt.Fprintf(cfg.Log, "bench: removing lab %s: %v\n", name, err)
		}
	}, nil
}

// ModeBlockDefault names the RTT rounds of rig's default blocking sender.
const ModeBlockDefault = "block, rig default"

type runner struct {
	cfg      Config
	topo     *netlab.Topology
	res      *Results
	snd, rsp *agent.Client
	start    time.Time // of the bench
}

// logf logs one line of progress with the bench's elapsed time.
func (b *runner) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Log, "bench: %7s  %s\n", time.Since(b.start).Round(time.Second), fmt.Sprintf(format, args...))
}

var rigGroup = netip.MustParseAddrPort("239.77.0.1:17001")

const (
	sockperfGroup = "239.77.0.2"
	sockperfPort  = "17002"
)

// prefix runs a command in role's namespace pinned (whole process) to cpu.
func (b *runner) prefix(r netlab.Role, cpu int) []string {
	return append(b.topo.Exec(r), "taskset", "-c", strconv.Itoa(cpu))
}

// rigRound runs one rig round and returns its sender file.
func (b *runner) rigRound(ctx context.Context, dir, poll, timestamps string, engine probe.Engine, spin time.Duration, k int, interval time.Duration, count, warmup int) (*samples.File, error) {
	spec, err := b.rigSpec(dir, poll, timestamps, engine, spin, k, interval, count, warmup)
	if err != nil {
		return nil, err
	}
	if err := b.runRound(ctx, spec); err != nil {
		return nil, err
	}
	f, err := samples.ReadFile(filepath.Join(dir, samples.FileName(samples.RoleSender)))
	if err != nil {
		return nil, fmt.Errorf("rig round (%s, round %d): %w", poll, k, err)
	}
	return f, nil
}

// rigSpec is a rig round through the bench's agents; poll, timestamps and
// engine are rig respond's --poll, --timestamps and --engine values, and
// engine rig send's too: the native engine is measured by its own sender.
func (b *runner) rigSpec(dir, poll, timestamps string, engine probe.Engine, spin time.Duration, k int, interval time.Duration, count, warmup int) (round.Spec, error) {
	pm, err := probe.ParsePoll(poll)
	if err != nil {
		return round.Spec{}, err
	}
	ts, err := tstamp.ParseMode(timestamps)
	if err != nil {
		return round.Spec{}, err
	}
	snd, rsp := probe.DefaultSend(), probe.DefaultRespond()
	snd.Iface, snd.Group, snd.Count, snd.Interval, snd.Size = b.topo.Sender.Interface, rigGroup, count, interval, b.cfg.Size
	snd.Warmup, snd.Timestamps, snd.Arm, snd.Round = warmup, ts, poll, k
	snd.CPU, snd.Poll, snd.Spin, snd.Engine = b.cfg.SenderCPU, senderPoll(pm), spin, engine
	rsp.Iface, rsp.CPU, rsp.Poll, rsp.Engine = b.topo.Responder.Interface, b.cfg.ResponderCPU, pm, engine
	return round.Spec{Dir: dir, Send: snd, Respond: []probe.Respond{rsp}, SendOn: b.snd, RespondOn: []*agent.Client{b.rsp}, Lead: b.cfg.Lead}, nil
}

// runRound runs a rig round.
func (b *runner) runRound(ctx context.Context, spec round.Spec) error {
	if _, err := round.Run(ctx, spec); err != nil {
		return fmt.Errorf("rig round (%s, round %d): %w", spec.Respond[0].Poll, spec.Send.Round, err)
	}
	return nil
}

// DefaultLead matches sockperf's start-up: its ping-pong client sleeps
// about 2 s in its warm-up stage (sched trace: first run 0.1 s after the
// server was ready, first timed send 2.1 s after), so its server runs alone
// that long. A busy server spinning alone on its CPU pushes the host's
// other wake-ups to the idle client CPU, and there they stay once both
// CPUs are busy; rig's responder gets the same lead so both tools start
// from the same placement (without it, rig's busy p99.9 was 5–16× sockperf's,
// with the VM's background threads on rig's responder CPU in the traced rounds).
const DefaultLead = 2 * time.Second

// senderPoll is the rig sender's mode for a responder mode: busy on both
// ends like sockperf --nonblocked, blocking otherwise.
func senderPoll(responderPoll probe.Poll) probe.PollMode {
	if responderPoll.Mode == probe.Busy {
		return probe.Busy
	}
	return probe.Block
}

func p50(s Summary) int64  { return s.P50 }
func p99(s Summary) int64  { return s.P99 }
func p999(s Summary) int64 { return s.P999 }

// figures are what one rig sender file gives the bench, warm-up excluded.
type figures struct {
	user   []int64 // user RTT (rx_user − tx_user) of every answered request
	closed []int64 // user RTT of the requests sockperf's ping-pong would have sent (see rigFigures)
	sw     []int64 // software RTT (rx_sw − tx_sw)
	recv   []int64 // the replies' rx_user − rx_sw (kernel stamp to user-space read)
	late   []int64 // lateness (tx_user − due) of every request sent
	wake   []int64 // lateness of the wake-ups alone (see rigFigures)
	lost   int     // late, duplicated and unanswered requests: no RTT
}

// responderRecv is a responder file's req_rx_user − req_rx_sw of the
// requests from warmup on (the sender's: the responder's file does not
// know it).
func responderRecv(f *samples.File, warmup uint64) ([]int64, error) {
	var v []int64
	var bad error
	for i := range f.Records {
		r := &f.Records[i]
		if r.Seq >= warmup && r.T[samples.ReqRxUser] != 0 && r.T[samples.ReqRxSW] != 0 {
			v = append(v, elapsed(r, samples.ReqRxSW, samples.ReqRxUser, &bad))
		}
	}
	return v, bad
}

// elapsed is T[b] − T[a] of r, two stamps on one clock. One below 0 or
// beyond int64 (samples.Sub) no clock gives: it sets *bad, if not set yet,
// and the caller's figures are not used.
func elapsed(r *samples.Record, a, b samples.Stamp, bad *error) int64 {
	d, ok := samples.Sub(r.T[b], r.T[a])
	if (!ok || d < 0) && *bad == nil {
		*bad = fmt.Errorf("seq %d: %s − %s (%d − %d) is below 0 or beyond int64: no clock gives that (a damaged file or a clock step)",
			r.Seq, b, a, r.T[b], r.T[a])
	}
	return d
}

// rigFigures extracts the figures of a sender file.
//
// rig runs an open loop: requests leave on schedule whatever happened to
// the ones before. sockperf's ping-pong and cyclictest run closed loops,
// which skip what a stall held up and record one sample for it (checked: a
// 300 ms SIGSTOP of sockperf's server gave one 302 ms sample, a 302 ms gap
// in its sends and normal RTTs after; a 52 ms SIGSTOP of cyclictest one
// 51 775 µs sample and 52 fewer loops), while rig records every request the
// stall touched (300, 299, 298 … ms). Comparing like with like takes the
// closed loop's samples from rig's run:
//   - closed: requests sent after the previous request's reply arrived
//     (sockperf sends only then);
//   - wake: requests whose due time was still ahead when the previous one
//     left, so the sender had to wait for them (cyclictest's rule).
func rigFigures(f *samples.File) (figures, error) {
	var g figures
	var bad error
	w := uint64(f.Header.Warmup)
	var prevTx, prevRx int64 // tx_user and rx_user of the last request sent, warm-up included
	sentAny := false
	for i := range f.Records {
		r := &f.Records[i]
		if r.Flags&samples.FlagNotSent != 0 || r.T[samples.TxUser] == 0 {
			continue
		}
		tx := r.T[samples.TxUser]
		waited := sentAny && prevTx < r.T[samples.Due]
		settled := !sentAny || (prevRx != 0 && prevRx <= tx)
		prevTx, prevRx, sentAny = tx, r.T[samples.RxUser], true
		if r.Seq < w {
			continue
		}
		late := elapsed(r, samples.Due, samples.TxUser, &bad)
		g.late = append(g.late, late)
		if waited {
			g.wake = append(g.wake, late)
		}
		if r.Flags&(samples.FlagLate|samples.FlagDuplicate) != 0 || r.T[samples.RxUser] == 0 {
			g.lost++
			continue
		}
		rtt := elapsed(r, samples.TxUser, samples.RxUser, &bad)
		g.user = append(g.user, rtt)
		if settled {
			g.closed = append(g.closed, rtt)
		}
		if r.T[samples.RxSW] != 0 && r.T[samples.TxSW] != 0 {
			g.sw = append(g.sw, elapsed(r, samples.TxSW, samples.RxSW, &bad))
		}
		if r.T[samples.RxSW] != 0 {
			g.recv = append(g.recv, elapsed(r, samples.RxSW, samples.RxUser, &bad))
		}
	}
	return g, bad
}

func (c *Cyclictest) add(o *Cyclictest) {
	for len(c.Buckets) < len(o.Buckets) {
		c.Buckets = append(c.Buckets, 0)
	}
	for i, v := range o.Buckets {
		c.Buckets[i] += v
	}
	c.Overflows += o.Overflows
	if c.MinUS == 0 || o.MinUS < c.MinUS {
		c.MinUS = o.MinUS
	}
	c.MaxUS = max(c.MaxUS, o.MaxUS)
}

// SmokeConfig is a tiny version of the full bench for CI: one round of
// 2 s per tool and mode, 1 s at the rate interval, counting rounds of 3 s,
// two noise rounds of 1 s and `rig report` on 100 000 samples. It exercises every code path in
// about a minute.
func SmokeConfig(rig, dir string) Config {
	return Config{Rig: rig, Dir: dir, Rounds: 1, RoundTime: 2 * time.Second, Warmup: 200 * time.Millisecond, Lead: 200 * time.Millisecond,
		RateTime: time.Second, MaxRateTime: 2 * time.Second, AnalysisSizes: []int{100_000},
		CostTime: 3 * time.Second, CostWindow: time.Second, NoiseRounds: 2, NoiseTime: time.Second}
}

// ParseSizes parses a comma-separated list of sample counts with optional
// k/M suffixes ("1M,10M,100M", "100k", "5000").
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1_000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "M"):
			mult, f = 1_000_000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > 1_000_000_000/mult {
			return nil, fmt.Errorf("sample count %q: want a positive number up to 1000M, optionally with k or M (e.g. 1M,10M)", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

// ParseParts parses a comma-separated list of parts ("rtt,rate").
func ParseParts(s string) ([]Part, error) {
	var out []Part
	for _, f := range strings.Split(s, ",") {
		p := Part(strings.TrimSpace(f))
		if !slices.Contains(AllParts, p) {
			return nil, fmt.Errorf("bench part %q: want a comma-separated list of %v", f, AllParts)
		}
		out = append(out, p)
	}
	return out, nil
}
