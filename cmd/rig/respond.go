package main

import (
	"context"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/responder"
)

func init() {
	register(&command{name: "respond", summary: "answer rig requests on a pinned CPU and record their stamps", run: runRespond})
}

func runRespond(ctx context.Context, args []string) error {
	fs := newFlagSet("respond", "--iface IF [flags]")
	var pf probeFlags
	pf.register(fs)
	pf.registerUnicast(fs, "listen", "unicast requests: bind this IPv4 address of --iface and port, join no group (instead of --group; the sender's --to)")
	reply := fs.String("reply", "unicast", "where replies go: unicast (back to the sender) or a multicast group:port")
	cpu := fs.Int("cpu", -1, "CPU to pin the responder loop to (-1: no pinning)")
	poll := fs.String("poll", "block", "block (sleep in recvmsg) | busy (spin, one CPU at 100%) | busy-poll:µs (SO_BUSY_POLL)")
	sched := fs.String("sched", "other", "scheduling policy of the loop: other | fifo:N (needs CAP_SYS_NICE)")
	count := fs.Int("count", 0, "stop after answering this many requests (0: until Ctrl-C)")
	capacity := fs.Int("capacity", 100000, "sequences recorded (0..capacity-1); more are answered but not recorded")
	txWait := fs.Duration("tx-wait", 500*time.Millisecond, "how long to wait for the last replies' TX stamps")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	surviveEPIPE()
	group, mode, runID, err := pf.parse()
	if err != nil {
		return err
	}
	if err := requireRunID("respond", runID); err != nil {
		return err
	}
	replyTo, err := parseReply(*reply)
	if err != nil {
		return err
	}
	pm, busyPoll, err := responder.ParsePoll(*poll)
	if err != nil {
		return usageError{err}
	}
	sc, err := parseSched(*sched)
	if err != nil {
		return err
	}
	// Bad input is refused before the NIC is touched.
	if *cpu >= 0 {
		if err := cpusched.CheckCPU(hostfs.Default(), *cpu); err != nil {
			return setupError(err)
		}
	}
	undo, err := prepareNIC(ctx, "respond", &pf, mode, tstamp.NeedProbe)
	if err != nil {
		return err
	}
	defer undo()
	var r *responder.Responder
	r, err = responder.New(responder.Config{
		Iface: pf.iface, Group: group, Listen: pf.unicast.addr, ReplyTo: replyTo, CPU: *cpu, Poll: pm, BusyPollUS: busyPoll,
		Sched: sc, Timestamps: mode, RunID: runID, ArmIndex: pf.armIndex, Round: pf.round, Capacity: *capacity, TxWait: *txWait,
		StopAfter: *count, Arm: pf.arm,
		Ready: func() {
			// "thread N" lets the agent watch this loop's context switches.
			logf("rig respond: ready on %s, requests %s (poll %s, cpu %d, thread %d)", pf.iface, pf.requests(group), *poll, *cpu, r.ThreadID())
		},
	})
	if err != nil {
		return setupError(err)
	}
	defer r.Close()
	logf("rig respond: timestamps %s", r.Granted())
	ctx, cancel := pf.bound(ctx)
	defer cancel()
	runErr := r.Run(ctx)
	c := r.Counters()
	logf("rig respond: answered %d, duplicated %d, foreign %d, malformed %d, send errors %d, TX stamps missing %d",
		c.Sent, c.Duplicated, c.Foreign, c.Malformed, c.SendErrors, c.TxStampsMissing)
	if u := r.Thread(); u != nil {
		logf("rig respond: loop thread %s", u)
	}
	if pf.out != "" {
		if err := r.WriteFile(pf.out, pf.armIndex, pf.round); err != nil {
			return err
		}
		logf("rig respond: wrote %s", pf.out)
	}
	if err := pf.expired(ctx); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	return nil
}
