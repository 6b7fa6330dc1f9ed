package responder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// Native is a responder whose loop runs in the native program
// (docs/probes.md#the-native-engine). rig decides here what New decides —
// the request address, the socket's timestamping flags (tstamp.PlanFor),
// the CPU — and the program opens the socket through libc, answers as
// Responder does and hands its records back; Run turns them into the same
// records, counters and sample file.
type Native struct {
	cfg   probe.Respond
	opt   Options
	prog  string
	proc  *native.Proc
	ready native.Ready
	lib   string // the stack's library as mapped in the program
	// rigThreads is where rig's own threads ran meanwhile (Proc.KeepOff).
	rigThreads string
	granted    tstamp.Granted
	hw         *tstamp.HWProof
	h          *native.Handoff
	recs       []samples.Record
	cnt        samples.Counters
	phc        *tstamp.PHCRecord
	started    time.Time
	stopped    string
	notes      []string
}

// NewNative checks cfg (cfg.Engine native) as New does, decides the
// socket's timestamping and starts prog (native.Find(native.RespondProgram)),
// which returns once the program's socket is set up. A backend the host
// cannot run is refused with the reason (*native.Refusal).
func NewNative(cfg probe.Respond, o Options, prog string) (*Native, error) {
	ifi, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	plan, err := tstamp.PlanFor(tstamp.FamilyUDP, cfg.Iface, cfg.Timestamps, tstamp.Options{Device: o.Device})
	if err != nil {
		return nil, err
	}
	n := &Native{cfg: cfg, opt: o, prog: prog}
	if cfg.Poll.Mode == probe.PreferBusyPoll {
		if err := n.checkNAPI(ifi); err != nil {
			return nil, err
		}
	}
	launch, err := native.StackLaunch(cfg.Stack)
	if err != nil {
		return nil, err
	}
	if n.proc, n.ready, err = native.Start(prog, n.args(ifi, plan), launch, os.Stderr); err != nil {
		return nil, err
	}
	if !cfg.Stack.Kernel() {
		if n.lib, err = native.ProveStack(cfg.Stack, "responder", cfg.Iface, n.proc.Pid(), n.ready); err != nil {
			n.proc.Close()
			return nil, err
		}
	}
	n.granted = plan.Granted
	if plan.Want != 0 {
		n.granted = plan.Settle(n.ready.TS)
	}
	var shared bool
	if n.rigThreads, shared = n.proc.KeepOff(cfg.CPU); shared {
		n.notes = append(n.notes, "rig's own threads "+n.rigThreads+": their wake-ups can preempt the loop")
	}
	if n.ready.MlockAll != 0 {
		n.notes = append(n.notes, "mlockall failed ("+n.ready.MlockAll.Error()+"): the loop's pages may fault (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)")
	}
	n.hw = tstamp.NewHWProof(n.granted, cfg.TxWait, "the responder's UDP socket", "requests", "replies")
	return n, nil
}

// checkNAPI refuses prefer-busy-poll on an interface whose packets do not
// come through NAPI: there is no queue to poll. Where the kernel cannot
// tell, it notes so and goes on; it notes too when the NAPI knobs leave
// the interrupts on.
func (n *Native) checkNAPI(ifi *net.Interface) error {
	napis, err := facts.NAPIs(ifi.Name)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		n.notes = append(n.notes, "cannot tell whether "+ifi.Name+" has NAPI ("+err.Error()+"): prefer-busy-poll may poll nothing; the sample header's napi_id says whether any request came through NAPI")
	case err != nil:
		return err
	case len(napis) == 0:
		return &native.Refusal{Msg: "--poll prefer-busy-poll: " + ifi.Name + " has no NAPI instance (netdev netlink napi-get lists none): busy polling has no queue to poll (a veth gets one with GRO on: ethtool -K " + ifi.Name + " gro on)"}
	default:
		if note := irqsStayOn(ifi.Name, napis[0].NAPIKnobs); note != "" {
			n.notes = append(n.notes, note)
		}
	}
	return nil
}

// irqsStayOn says why prefer-busy-poll will not keep the interrupts off
// ("" when it will). The kernel defers them only with defer_hard_irqs > 0
// and a timeout, irq_suspend_timeout or else gro_flush_timeout, to re-arm
// them after (net/core/dev.c busy_poll_stop): without, polling still
// works, but each request may raise an interrupt too. That is a warning,
// not a refusal. The knobs napi-get reports (Linux 6.13+, per NAPI
// instance) are the ones in force; older kernels have only sysfs's.
func irqsStayOn(iface string, k facts.NAPIKnobs) string {
	if k.DeferHardIRQs == nil || k.GROFlushTimeout == nil {
		var err error
		if k, err = facts.ReadNAPIKnobs(hostfs.Default(), iface); err != nil || k.DeferHardIRQs == nil || k.GROFlushTimeout == nil {
			why := "not in /sys/class/net/" + iface
			if err != nil {
				why = err.Error()
			}
			return "cannot tell whether " + iface + "'s interrupts are deferred to prefer-busy-poll: napi_defer_hard_irqs and gro_flush_timeout could not be read (" + why + "; /sys must show the interface's network namespace, as under ip netns exec)"
		}
	}
	if *k.DeferHardIRQs > 0 && (*k.GROFlushTimeout > 0 || (k.IRQSuspendTimeout != nil && *k.IRQSuspendTimeout > 0)) {
		return ""
	}
	return fmt.Sprintf("%s has napi_defer_hard_irqs %d and gro_flush_timeout %d ns: prefer-busy-poll polls, but the kernel does not hold the interrupts off for it; set both above 0 (rig nicctl set %s --napi-defer-hard-irqs 2 --gro-flush-timeout 200000, or nic: napi-defer-hard-irqs and gro-flush-timeout in a scenario arm)",
		iface, *k.DeferHardIRQs, *k.GROFlushTimeout, iface)
}

// args is the program's command line (native/respond.c).
func (n *Native) args(ifi *net.Interface, plan tstamp.Plan) []string {
	c := n.cfg
	itoa := strconv.Itoa
	poll := c.Poll.Mode.String() // the mode's name: its µs and budget go apart
	if c.Poll.Mode == probe.Block && c.Poll.BusyPollUS > 0 {
		poll = "busy-poll"
	}
	a := append([]string{"--iface", c.Iface, "--ifindex", itoa(ifi.Index), "--run-id", wire.FormatRunID(c.RunID),
		"--arm-index", itoa(c.ArmIndex), "--round", itoa(c.Round), "--id", itoa(c.ID),
		"--cpu", itoa(c.CPU), "--fifo", itoa(c.Sched.Priority), "--poll", poll, "--capacity", itoa(c.Capacity), "--count", itoa(c.Count),
		"--tx-wait-ns", strconv.FormatInt(int64(c.TxWait), 10), "--rcvbuf", itoa(tstamp.StallRcvBuf)},
		native.TimestampArgs(plan, c.Timestamps == tstamp.Hardware)...)
	if c.Poll.BusyPollUS > 0 {
		a = append(a, "--busy-poll-us", itoa(c.Poll.BusyPollUS))
	}
	if c.Poll.Mode == probe.PreferBusyPoll {
		a = append(a, "--busy-poll-budget", itoa(c.Poll.Budget))
	}
	if c.Group.IsValid() {
		a = append(a, "--group", c.Group.String())
	} else {
		a = append(a, "--listen", c.Unicast.String())
	}
	if c.Reply.IsValid() {
		a = append(a, "--reply", c.Reply.String())
	}
	return append(a, native.StackArgs(c.Stack)...)
}

// Granted reports the timestamping the kernel granted the program's socket.
func (n *Native) Granted() tstamp.Granted { return n.granted }

// ThreadID is the program's loop thread.
func (n *Native) ThreadID() int { return n.ready.TID }

// Notes are what the setup could not check or do, for the log.
func (n *Native) Notes() []string { return n.notes }

// Run lets the loop run until ctx is done (then it sends the program
// SIGTERM) or the program stops by itself, and takes its handoff.
func (n *Native) Run(ctx context.Context) error {
	if n.phc = n.granted.PHC(); n.phc != nil {
		n.phc.Take()
		defer n.phc.Take()
	}
	n.started = time.Now()
	if n.opt.Ready != nil {
		n.opt.Ready()
	}
	h, err := n.proc.Wait(ctx)
	if h != nil {
		n.take(h)
	}
	if err == nil {
		err = n.hw.Err()
	}
	switch {
	case err != nil:
		n.stopped = samples.StoppedFailed + err.Error()
	case ctx.Err() != nil:
		n.stopped = samples.StoppedInterrupted + context.Cause(ctx).Error()
	}
	return err
}

// take files the handoff: the records get the responder id, and their
// hardware stamps go through the proof in the order the loop met them, as
// Responder's loop puts them (a direction proven absent records none).
func (n *Native) take(h *native.Handoff) {
	n.h, n.cnt, n.recs = h, h.Counters, h.Records
	n.started = time.Unix(0, h.LoopStart)
	byUser := func(s samples.Stamp) []*samples.Record {
		var out []*samples.Record
		for i := range n.recs {
			if n.recs[i].T[s] != 0 {
				out = append(out, &n.recs[i])
			}
		}
		slices.SortFunc(out, func(a, b *samples.Record) int { return cmp.Compare(a.T[s], b.T[s]) })
		return out
	}
	for i := range n.recs {
		n.recs[i].Responder = uint32(n.cfg.ID)
	}
	for _, r := range byUser(samples.ReqRxUser) {
		r.T[samples.ReqRxHW] = n.hw.Recv(r.T[samples.ReqRxHW], r.T[samples.ReqRxSW])
	}
	for _, r := range byUser(samples.RepTxUser) {
		n.hw.Sent(r.T[samples.RepTxUser])
		r.T[samples.RepTxHW] = n.hw.TxStamp(r.T[samples.RepTxHW], r.T[samples.RepTxSW])
	}
	if n.cfg.Poll.BusyPollUS > 0 && h.NAPIID == 0 && h.Counters.Received > 0 {
		n.notes = append(n.notes, "no request came through NAPI (SO_INCOMING_NAPI_ID 0): busy polling had no queue to poll")
	}
	n.hw.Finish()
	n.cnt.TxStampsMissing = samples.ResponderTx.Awaiting(n.recs, samples.TxWanted(n.granted.Software(), n.hw.TX()))
}

// Thread returns the loop thread's CPU use (nil when the program could not
// read it).
func (n *Native) Thread() *samples.ThreadUsage {
	if n.h == nil {
		return nil
	}
	return n.h.Thread
}

// Counters returns the counts of the last Run.
func (n *Native) Counters() samples.Counters { return n.cnt }

// Records returns the records of the sequences that were answered.
func (n *Native) Records() []samples.Record { return n.recs }

// Header describes the sample file: Responder's, with the engine's own
// settings.
func (n *Native) Header(arm, round int) samples.Header {
	more := map[string]any{"engine": probe.EngineNative.String(), "native_program": n.prog, "rcvbuf_bytes": n.ready.RcvBuf, "phc": n.phc}
	if n.cfg.Poll.Mode == probe.PreferBusyPoll {
		more["busy_poll_budget"] = n.cfg.Poll.Budget
	}
	native.StackSettings(more, n.cfg.Stack, n.lib, n.ready)
	more["mlockall"] = "ok"
	if n.rigThreads != "" {
		more["rig_threads"] = n.rigThreads
	}
	if n.ready.MlockAll != 0 {
		more["mlockall"] = n.ready.MlockAll.Error()
	}
	if n.h != nil {
		more["tx_keying"], more["napi_id"], more["loop_calls"] = n.h.Keying.String(), n.h.NAPIID, n.h.Calls
	}
	if len(n.notes) > 0 {
		more["notes"] = n.notes
	}
	return header(n.cfg, n.opt.Host, n.granted, n.hw, n.started, arm, round, more)
}

// WriteFile writes the responder's sample file for one round.
func (n *Native) WriteFile(path string, arm, round int) error {
	return samples.WriteFile(path, n.Header(arm, round), n.recs, samples.Footer{Thread: n.Thread(),
		Counters: n.cnt, EndedAt: samples.Time(time.Now()), Stopped: n.stopped,
	})
}

// Close stops the program if it still runs.
func (n *Native) Close() error {
	n.proc.Close()
	return nil
}
