package main

import (
	"context"
	"net"
	"os"
	"strconv"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/nicctl"
)

// prepareNIC is the hand-run probes' rule for the NIC: with --timestamps
// hardware or auto and --nic-timestamping enable (the default), the NIC's
// hardware stamping is switched on where it is off, as rig run's agents
// do (nicctl.HoldTimestamping: nothing is written when the config already
// stamps what the probe needs, or when ptp4l owns it, or on the management
// interface), journaled in a lane of this process, shared with the other
// probes on the NIC, and put back by the returned undo (deferred by the
// caller: normal exit, error, Ctrl-C, SIGTERM; `rig restore` after a kill
// -9). With leave, nothing is written: the probe's socket uses the config
// as it finds it and, in hardware mode, says what to run when it is off.
func prepareNIC(ctx context.Context, who string, pf probe.Common, need tstamp.Need) (undo func(), err error) {
	undo = func() {}
	if pf.LeaveNIC || pf.Timestamps == tstamp.Software || pf.Timestamps == tstamp.Off {
		return undo, nil
	}
	if _, err := net.InterfaceByName(pf.Iface); err != nil {
		return undo, nil // the probe's own setup names the missing interface
	}
	req := nicctl.TSRequest{Mode: pf.Timestamps, Need: need, AllowMgmt: pf.AllowMgmt, TakeOver: pf.TakeOverPTP}
	h := nicctl.TSHold{Base: journal.Dir(), RunID: lockRunID(pf.RunID), Lane: "probe-" + strconv.Itoa(os.Getpid()),
		Log: func(format string, a ...any) { logf("rig "+who+": "+format, a...) }}
	_, undo, err = nicctl.HoldTimestamping(ctx, &nicctl.Env{NIC: facts.NIC{FS: hostfs.Default()}}, pf.Iface, req, h)
	return undo, setupError(err)
}

// nicOwner is who keeps the probe's NIC's timestamping config
// (facts.TimestampOwner: ptp4l, chronyd, or unknown where the host's
// processes cannot be seen) for the socket's own decision: it takes no
// hardware TX stamps next to an owner, as the run's decision did. "" with
// --take-over-ptp, and for software stamps (the NIC is not looked at).
func nicOwner(pf probe.Common) (string, error) {
	if pf.TakeOverPTP || pf.Timestamps == tstamp.Software || pf.Timestamps == tstamp.Off {
		return "", nil
	}
	owner, err := facts.TimestampOwner(hostfs.Default(), pf.Iface)
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
