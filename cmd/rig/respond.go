package main

import (
	"context"
	"errors"
	"flag"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/responder"
)

func init() {
	register(&command{name: "respond", summary: "answer rig requests on a pinned CPU and record their stamps",
		usage: "--iface IF [flags]", flags: respondFlags})
}

func respondFlags(fs *flag.FlagSet) func(context.Context) error {
	var f probe.Respond
	f.Register(fs)
	return func(ctx context.Context) error {
		if err := parseProbe(fs, f.Parse, &f.CPU); err != nil {
			return err
		}
		if f.CPU >= 0 {
			// rig noise must not measure a CPU this loop spins on, nor this
			// loop start where rig noise measures.
			unlock, err := journal.LockCPU(journal.Dir(), f.CPU, false)
			switch {
			case errors.Is(err, journal.ErrCPUBusy):
				return cli.Usage(err)
			case err != nil:
				logf("rig respond: warning: cannot claim CPU %d for this loop (%v): rig noise will not know it runs there", f.CPU, err)
			default:
				defer unlock()
			}
		}
		prog, err := responder.FindEngine(f)
		if err != nil {
			return setupError(err)
		}
		undo, owner := func() {}, ""
		if !f.Engine.Reflector() { // the reflector takes no stamps: the NIC's timestamping is left alone
			if undo, err = prepareNIC(ctx, "respond", f.Common, tstamp.NeedProbe); err != nil {
				return err
			}
			if owner, err = nicOwner(f.Common); err != nil {
				undo()
				return err
			}
		}
		defer undo()
		var r responder.Engine
		r, err = responder.Open(f, responder.Options{Owner: owner, Ready: func() {
			// "thread N" lets the agent watch this loop's context switches.
			if f.Engine.Reflector() { // no loop: no poll, CPU or thread
				logf("rig respond: ready on %s, requests %s (engine %s)", f.Iface, f.Requests(), f.Engine)
				return
			}
			logf("rig respond: ready on %s, requests %s (poll %s, cpu %d, thread %d)", f.Iface, f.Requests(), f.Poll, f.CPU, r.ThreadID())
		}, Note: func(s string) { logf("rig respond: warning: %s", s) }}, prog)
		if err != nil {
			return setupError(err)
		}
		defer r.Close()
		if x, ok := r.(*responder.Reflect); ok {
			logf("rig respond: reflector program attached to %s in %s mode; it takes no stamps: the arm's turnaround is the capture's", f.Iface, x.Mode())
		} else {
			logf("rig respond: timestamps %s", r.Granted())
		}
		ctx, cancel := f.Bound(ctx)
		defer cancel()
		restore := cpusched.TuneRuntime() // GC off, ≥ 2 Ps: the loop's round
		runErr := r.Run(ctx)
		restore()
		c := r.Counters()
		logf("rig respond: answered %d, duplicated %d, foreign %d, malformed %d, send errors %d, TX stamps missing %d",
			c.Sent, c.Duplicated, c.Foreign, c.Malformed, c.SendErrors, c.TxStampsMissing)
		if u := r.Thread(); u != nil {
			logf("rig respond: loop thread %s", u)
		}
		if f.Out != "" {
			if err := r.WriteFile(f.Out, f.ArmIndex, f.Round); err != nil {
				return err
			}
			logf("rig respond: wrote %s", f.Out)
		}
		return f.Ended(ctx, runErr)
	}
}
