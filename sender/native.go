package sender

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// FindEngine finds the native sender's program when cfg asks for it (""
// for the Go engine): a missing one is refused (os.ErrNotExist), and a
// stack this host lacks (*native.Refusal), before anything is set up.
func FindEngine(cfg probe.Send) (string, error) {
	if cfg.Engine != probe.EngineNative {
		return "", nil
	}
	if _, err := native.StackLaunch(cfg.Stack); err != nil {
		return "", err
	}
	return native.Find(native.SendProgram)
}

// Open sets up the Go engine's sender, or with prog (FindEngine) the
// native engine's.
func Open(cfg probe.Send, o Options, prog string) (*Sender, error) {
	if prog == "" {
		return New(cfg, o)
	}
	return NewNative(cfg, o, prog)
}

// nativeLoop is the native program that runs a Sender's loop.
type nativeLoop struct {
	prog  string
	stack probe.Stack
	lib   string // the stack's library as mapped in the program
	// rigThreads is where rig's own threads ran meanwhile (Proc.KeepOff).
	rigThreads string
	proc       *native.Proc
	ready      native.Ready
	h          *native.SendHandoff // after Run
	taken      atomic.Bool         // Run has the handoff: Progress reads the Sender's counts
}

// NewNative is New for the native engine (docs/probes.md#the-native-engine):
// rig decides here what New decides — the socket's timestamping
// (tstamp.PlanFor), the addresses, the CPU — and prog (rig-send-native)
// opens the socket through libc and runs the loop Run runs; Run turns
// what it hands back into the same records, counters and sample file.
func NewNative(cfg probe.Send, o Options, prog string) (*Sender, error) {
	ifi, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	plan, err := tstamp.PlanFor(tstamp.FamilyUDP, cfg.Iface, cfg.Timestamps, tstamp.Options{Device: o.Device, Owner: o.Owner})
	if err != nil {
		return nil, err
	}
	launch, err := native.StackLaunch(cfg.Stack)
	if err != nil {
		return nil, err
	}
	launch.Live = native.SendLive
	s := &Sender{cfg: cfg, opt: o, dst: cfg.Dest(), lastSeq: -1, nat: &nativeLoop{prog: prog, stack: cfg.Stack}}
	s.allocate()
	if s.nat.proc, s.nat.ready, err = native.Start(prog, s.nativeArgs(ifi, plan), launch, os.Stderr); err != nil {
		return nil, err
	}
	if !cfg.Stack.Kernel() {
		if s.nat.lib, err = native.ProveStack(cfg.Stack, "sender", cfg.Iface, s.nat.proc.Pid(), s.nat.ready); err != nil {
			s.nat.proc.Close()
			return nil, err
		}
	}
	var shared bool
	if s.nat.rigThreads, shared = s.nat.proc.KeepOff(cfg.CPU); shared {
		fmt.Fprintf(os.Stderr, "rig send: rig's own threads %s: their wake-ups can preempt the loop\n", s.nat.rigThreads)
	}
	s.granted, s.rcvbuf = plan.Granted, s.nat.ready.RcvBuf
	if plan.Want != 0 {
		s.granted = plan.Settle(s.nat.ready.TS)
	}
	s.hw = tstamp.NewHWProof(s.granted, cfg.TxWait, "the sender's UDP socket", "replies", "requests")
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
	return s, nil
}

// nativeArgs is the program's command line (native/send.c).
func (s *Sender) nativeArgs(ifi *net.Interface, plan tstamp.Plan) []string {
	c, itoa := s.cfg, strconv.Itoa
	ns := func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }
	a := append([]string{"--iface", c.Iface, "--ifindex", itoa(ifi.Index), "--run-id", wire.FormatRunID(c.RunID),
		"--arm-index", itoa(c.ArmIndex), "--round", itoa(c.Round), "--count", itoa(c.Count), "--interval-ns", ns(c.Interval),
		"--spin-ns", ns(c.Spin), "--size", itoa(c.Size), "--cpu", itoa(c.CPU), "--fifo", itoa(c.Sched.Priority), "--poll", c.Poll.String(),
		"--port", itoa(int(c.LocalPort())), "--reply-timeout-ns", ns(c.ReplyTimeout), "--tx-wait-ns", ns(c.TxWait),
		"--rcvbuf", itoa(tstamp.StallRcvBuf)}, native.TimestampArgs(plan, c.Timestamps == tstamp.Hardware)...)
	if c.Group.IsValid() {
		a = append(a, "--group", c.Group.String())
	} else {
		a = append(a, "--to", c.Unicast.String())
	}
	if c.ReplyGroup.IsValid() {
		a = append(a, "--reply-group", c.ReplyGroup.String())
	}
	return append(a, native.StackArgs(c.Stack)...)
}

// runNative is Run with the native program running the loop: it waits
// for the program (SIGTERM when ctx is done), files its handoff where the
// Go loop files what it reads — also when a call failed in the loop — and
// completes the round as Run does.
func (s *Sender) runNative(ctx context.Context) error {
	h, err := s.nat.proc.WaitSend(ctx)
	if h != nil {
		s.take(h)
		if h.Failed != nil { // the program exits 1 for it: its handoff says why
			err = fmt.Errorf("%s: %w", native.SendProgram, h.Failed)
		}
	}
	s.nat.taken.Store(true)
	s.hw.Finish()
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
	s.finish()
	if err == nil {
		err = s.hw.Err()
	}
	switch {
	case err != nil:
		s.stopped = samples.StoppedFailed + err.Error()
		return err
	case ctx.Err() != nil:
		s.stopped = samples.StoppedInterrupted + context.Cause(ctx).Error()
	}
	return ctx.Err()
}

// take files the handoff: each record's send stamps under its request,
// its reply under responder 0's slot, and the hardware stamps through the
// proof in the order the loop met them, as the Go loop puts them.
func (s *Sender) take(h *native.SendHandoff) {
	s.nat.h, s.thread = h, h.Thread
	s.started = time.Unix(0, h.LoopStart)
	s.cnt = h.Counters
	s.per[0].Duplicated, s.per[0].Reordered = h.Counters.Duplicated, h.Counters.Reordered
	var replies []*samples.Record
	for k, r := range h.Records {
		q, rep := &s.recs[k], &s.reps[k]
		for _, st := range [...]samples.Stamp{samples.Due, samples.TxUser, samples.TxSW, samples.TxHW} {
			q.T[st] = r.T[st]
		}
		for _, st := range [...]samples.Stamp{samples.RxHW, samples.RxSW, samples.RxUser} {
			rep.T[st] = r.T[st]
		}
		rep.Flags = r.Flags
		if q.T[samples.TxUser] != 0 {
			s.lastSeq = int64(k)
			s.hw.Sent(q.T[samples.TxUser])
			q.T[samples.TxHW] = s.hw.TxStamp(q.T[samples.TxHW], q.T[samples.TxSW])
		}
		if rep.T[samples.RxUser] != 0 {
			replies = append(replies, rep)
		}
	}
	slices.SortFunc(replies, func(a, b *samples.Record) int { return cmp.Compare(a.T[samples.RxUser], b.T[samples.RxUser]) })
	for _, rep := range replies {
		rep.T[samples.RxHW] = s.hw.Recv(rep.T[samples.RxHW], rep.T[samples.RxSW])
	}
	s.sent.Store(int64(h.Counters.Sent))
	s.received.Store(int64(len(replies)))
}

// keying is how the socket's TX stamps were keyed.
func (s *Sender) keying() tstamp.Keying {
	switch {
	case s.nat == nil:
		return s.conn.Keying()
	case s.nat.h != nil:
		return s.nat.h.Keying
	}
	return tstamp.KeyNone
}

// settings adds the native engine's settings to a sample header's (none
// for the Go engine).
func (n *nativeLoop) settings(m map[string]any) {
	if n == nil {
		return
	}
	m["engine"], m["native_program"], m["mlockall"], m["stack"] = probe.EngineNative.String(), n.prog, "ok", n.stack.String()
	if n.rigThreads != "" {
		m["rig_threads"] = n.rigThreads
	}
	native.StackSettings(m, n.stack, n.lib, n.ready)
	if n.ready.MlockAll != 0 {
		m["mlockall"] = n.ready.MlockAll.Error()
	}
	if n.h != nil {
		m["loop_calls"] = n.h.Calls
	}
}
