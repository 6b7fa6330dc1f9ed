package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/nicctl"
)

// prepareNIC is the hand-run probes' rule for the NIC: with --timestamps
// hardware or auto and --nic-timestamping enable (the default), the NIC's
// hardware stamping is switched on where it is off, through the same owner
// rig run uses (nicctl.PrepareTimestamping: nothing is written when the
// config already stamps what the probe needs, or when ptp4l owns it, or on
// the management interface), journaled in a lane of this process and put
// back by the returned undo (deferred by the caller: normal exit, error,
// Ctrl-C, SIGTERM; `rig restore` after a kill -9). With leave, nothing is
// written: the probe's socket uses the config as it finds it and, in
// hardware mode, says what to run when it is off.
func prepareNIC(ctx context.Context, who string, pf probe.Common, need tstamp.Need) (undo func(), err error) {
	undo = func() {}
	mode := pf.Timestamps
	if pf.LeaveNIC || mode == tstamp.Software || mode == tstamp.Off {
		return undo, nil
	}
	if _, err := net.InterfaceByName(pf.Iface); err != nil {
		return undo, nil // the probe's own setup names the missing interface
	}
	env := &nicctl.Env{FS: hostfs.Default()}
	req := nicctl.TSRequest{Mode: mode, Need: need, AllowMgmt: pf.AllowMgmt, TakeOver: pf.TakeOverPTP}
	plan, err := nicctl.PlanTimestamping(env, pf.Iface, req)
	if err != nil {
		return undo, setupError(err)
	}
	if plan.Decision.Action != tstamp.ActWrite {
		if plan.Decision.Action == tstamp.ActRefuse {
			return undo, usagef("--timestamps hardware: %s; fix: %s", plan.Decision.Why, plan.Decision.Fix)
		}
		if plan.Decision.Action != tstamp.ActNone {
			logf("rig %s: %s", who, plan)
		}
		return undo, nil
	}
	// The host lock while the change is in force: shared with the probes
	// of the same run id (a responder and a capture on one machine), no
	// other changer meanwhile.
	lock, err := journal.LockHost(journal.Dir(), journal.Self(lockRunID(pf.RunID)))
	if err != nil {
		return undo, err
	}
	lane := journal.LaneDir(journal.Dir(), "probe-"+strconv.Itoa(os.Getpid()))
	j, err := journal.Open(lane, nicctl.Handlers(env))
	if err != nil {
		lock.Unlock()
		return undo, fmt.Errorf("the journal for the NIC change: %w", err)
	}
	res, err := nicctl.PrepareTimestamping(ctx, env, j, pf.Iface, req)
	logf("rig %s: %s", who, res)
	undo = func() {
		restored, uerr := j.Undo(context.Background())
		for _, r := range restored {
			if r.Err == nil {
				logf("rig %s: put back %s %s: %s", who, r.Entry.Kind, r.Entry.Target, r.Restored)
			}
		}
		j.Close()
		lock.Unlock()
		if uerr != nil {
			logf("rig %s: putting the NIC back failed: %v (run `rig restore`)", who, uerr)
			return
		}
		os.RemoveAll(lane)
	}
	if err != nil {
		undo()
		return func() {}, setupError(err)
	}
	return undo, nil
}

// nicOwner is who keeps the probe's NIC's timestamping config
// (nicctl.TimestampOwner: ptp4l, chronyd, or unknown where the host's
// processes cannot be seen) for the socket's own decision: it takes no
// hardware TX stamps next to an owner, as the run's decision did. "" with
// --take-over-ptp, and for software stamps (the NIC is not looked at).
func nicOwner(pf probe.Common) (string, error) {
	if pf.TakeOverPTP || pf.Timestamps == tstamp.Software || pf.Timestamps == tstamp.Off {
		return "", nil
	}
	owner, err := nicctl.TimestampOwner(hostfs.Default(), pf.Iface)
	if err != nil {
		return "", setupError(err)
	}
	return owner, nil
}

// lockRunID is the host lock's run id of a probe given --run-id (its
// canonical form), or "" (no --run-id) to hold the lock alone.
func lockRunID(id uint64) string {
	if id == 0 {
		return ""
	}
	return wire.FormatRunID(id)
}
