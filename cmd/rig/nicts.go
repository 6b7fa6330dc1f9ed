package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cli"
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
//
// Probes on one NIC share its config (journal.Share): one that relies on a
// config another probe switched on holds it too, and whichever leaves last
// puts back every probe's change, newest first.
func prepareNIC(ctx context.Context, who string, pf probe.Common, need tstamp.Need) (undo func(), err error) {
	return prepareNICWith(ctx, who, pf, need, &nicctl.Env{FS: hostfs.Default()}, "probe-"+strconv.Itoa(os.Getpid()))
}

// prepareNICWith is prepareNIC on env with the journal lane named lane
// (tests give it a driver profile, and one lane per probe they play).
func prepareNICWith(ctx context.Context, who string, pf probe.Common, need tstamp.Need, env *nicctl.Env, lane string) (undo func(), err error) {
	undo = func() {}
	mode := pf.Timestamps
	if pf.LeaveNIC || mode == tstamp.Software || mode == tstamp.Off {
		return undo, nil
	}
	if _, err := net.InterfaceByName(pf.Iface); err != nil {
		return undo, nil // the probe's own setup names the missing interface
	}
	req := nicctl.TSRequest{Mode: mode, Need: need, AllowMgmt: pf.AllowMgmt, TakeOver: pf.TakeOverPTP}
	plan, err := nicctl.PlanTimestamping(env, pf.Iface, req)
	if err != nil {
		return undo, setupError(err)
	}
	act := plan.Decision.Action
	switch {
	case act == tstamp.ActRefuse:
		return undo, cli.Usagef("--timestamps hardware: %s; fix: %s", plan.Decision.Why, plan.Decision.Fix)
	case act != tstamp.ActWrite && act != tstamp.ActNone:
		logf("rig %s: %s", who, plan)
	}
	if act != tstamp.ActWrite && act != tstamp.ActKeep {
		return undo, nil
	}
	base, key := journal.Dir(), shareKey(pf.Iface)
	if act == tstamp.ActKeep {
		// In force already: the probe relies on it, and holds it when
		// another probe switched it on.
		risk := "if another probe switched it on, it puts it back when it exits, under this one"
		shared, err := journal.ShareWritten(base, key)
		if err != nil {
			logf("rig %s: WARNING: cannot tell whether another probe holds %s's timestamping config (%v): %s", who, pf.Iface, err, risk)
		}
		if !shared {
			return undo, nil
		}
		lock, err := journal.LockHost(base, journal.Self(lockRunID(pf.RunID)))
		if err != nil {
			logf("rig %s: WARNING: not holding %s's timestamping config (%v): %s", who, pf.Iface, err, risk)
			return undo, nil
		}
		sh, err := journal.JoinShare(base, key, true)
		if err != nil || sh == nil {
			lock.Unlock()
			return undo, err
		}
		return func() { leaveShare(who, env, sh, nil, "", false); lock.Unlock() }, nil
	}
	// The host lock while the change is in force: shared with the probes
	// of the same run id (a responder and a capture on one machine), no
	// other changer meanwhile.
	lock, err := journal.LockHost(base, journal.Self(lockRunID(pf.RunID)))
	if err != nil {
		return undo, err
	}
	lane = journal.LaneDir(base, lane)
	j, err := journal.Open(lane, nicctl.Handlers(env))
	if err != nil {
		lock.Unlock()
		return undo, fmt.Errorf("the journal for the NIC change: %w", err)
	}
	sh, err := journal.JoinShare(base, key, false)
	if err != nil {
		j.Close()
		lock.Unlock()
		return undo, err
	}
	res, err := nicctl.PrepareTimestamping(ctx, env, j, pf.Iface, req)
	logf("rig %s: %s", who, res)
	wrote := err == nil && res.Changed
	if wrote {
		err = sh.Wrote(lane)
	}
	undo = func() { leaveShare(who, env, sh, j, lane, wrote); lock.Unlock() }
	if err != nil {
		undo()
		return func() {}, setupError(err)
	}
	return undo, nil
}

// leaveShare leaves the NIC's share. The last holder puts back every lane
// written under it, newest first, and its own (own: nil for a probe that
// only relied on the config); another leaves its lane, when it wrote, to
// the last.
func leaveShare(who string, env *nicctl.Env, sh *journal.Share, own *journal.Journal, ownLane string, wrote bool) {
	lanes, last, err := sh.Leave()
	if err != nil {
		logf("rig %s: the NIC's share: %v (run `rig restore` once the probes on it are gone)", who, err)
	}
	if !last && wrote {
		own.Close()
		logf("rig %s: the NIC config stays in force for the other probes on it: the last to exit puts it back", who)
		return
	}
	if !last {
		lanes = nil
	}
	if own != nil && !slices.Contains(lanes, ownLane) {
		lanes = append(lanes, ownLane) // a failed write may have left a record
	}
	for _, lane := range slices.Backward(lanes) {
		var restored []journal.Restored
		var uerr error
		if lane == ownLane {
			restored, uerr = own.Undo(context.Background())
			own.Close()
		} else { // a probe that left before
			restored, uerr = journal.Restore(context.Background(), lane, nicctl.Handlers(env))
		}
		for _, r := range restored {
			if r.Err == nil {
				logf("rig %s: put back %s %s: %s", who, r.Entry.Kind, r.Entry.Target, r.Restored)
			}
		}
		if uerr != nil {
			logf("rig %s: putting the NIC back failed: %v (run `rig restore`)", who, uerr)
			continue
		}
		os.RemoveAll(lane)
	}
}

// shareKey names iface's share: the interface in this network namespace.
func shareKey(iface string) string {
	ns, _ := os.Readlink("/proc/self/ns/net") // "net:[4026531840]"
	return "nic-" + iface + "-" + strings.Trim(strings.TrimPrefix(ns, "net:"), "[]")
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
