package nicctl

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/tstamp"
)

// TSHold is where a process changes a NIC's timestamping and holds the
// change until it is done with it: under the host lock in Base (the
// journal base directory) — Lock when the caller holds it already (an
// agent), else taken here and shared with the processes of run RunID (""
// for none: alone) — in a journal lane of its own, Lane, below Base.
//
// The processes on one NIC share its config (journal.Share): one that
// relies on a config another switched on holds it too, and whichever
// leaves last puts back every change made under the share, newest first.
type TSHold struct {
	Base, RunID, Lane string
	Lock              *journal.HostLock
	// Log says what was decided and put back (nil: nothing is said).
	Log func(format string, a ...any)
}

// HoldTimestamping is the one way a process changes a NIC's timestamping
// for itself — a hand-run probe at start, an agent for its run: it
// prepares iface's timestamping for req under h (PrepareTimestamping:
// nothing is written when the config already stamps what is needed, or
// when a daemon owns it, or on the management interface) and returns the
// result and undo, which leaves the NIC's share (the last to leave puts
// back every change made under it). With nothing written and no other
// process's change to rely on, nothing is held and undo does nothing. A
// refusal is PrepareTimestamping's.
func HoldTimestamping(ctx context.Context, env *Env, iface string, req TSRequest, h TSHold) (TSResult, func(), error) {
	none := func() {}
	plan, err := PlanTimestamping(env, iface, req)
	if err != nil {
		return plan, none, err
	}
	switch act := plan.Decision.Action; act {
	case tstamp.ActRefuse:
		return plan, none, refuse("hardware timestamps: %s; fix: %s", plan.Decision.Why, plan.Decision.Fix)
	case tstamp.ActKeep:
		h.log("%s", plan)
		undo, err := h.rely(env, iface)
		return plan, undo, err
	case tstamp.ActWrite:
	default:
		if act != tstamp.ActNone {
			h.log("%s", plan)
		}
		return plan, none, nil
	}
	unlock, err := h.lock()
	if err != nil {
		return plan, none, err
	}
	lane := journal.LaneDir(h.Base, h.Lane)
	j, err := journal.Open(lane, Handlers(env))
	if err != nil {
		unlock()
		return plan, none, fmt.Errorf("the journal for the NIC change: %w", err)
	}
	sh, err := journal.JoinShare(h.Base, shareKey(iface), false)
	if err != nil {
		j.Close()
		unlock()
		return plan, none, err
	}
	res, err := PrepareTimestamping(ctx, env, j, iface, req)
	h.log("%s", res)
	wrote := err == nil && res.Changed
	if wrote {
		err = sh.Wrote(lane)
	}
	undo := func() { h.leave(env, sh, j, lane, wrote); unlock() }
	if err != nil {
		undo()
		return res, none, err
	}
	return res, undo, nil
}

// rely holds a config in force already when another process switched it
// on (a lane was written under the NIC's share): its undo leaves the share.
func (h TSHold) rely(env *Env, iface string) (func(), error) {
	none := func() {}
	key := shareKey(iface)
	risk := "if another probe switched it on, it puts it back when it exits, under this one"
	shared, err := journal.ShareWritten(h.Base, key)
	if err != nil {
		h.log("WARNING: cannot tell whether another probe holds %s's timestamping config (%v): %s", iface, err, risk)
	}
	if !shared {
		return none, nil
	}
	unlock, err := h.lock()
	if err != nil {
		h.log("WARNING: not holding %s's timestamping config (%v): %s", iface, err, risk)
		return none, nil
	}
	sh, err := journal.JoinShare(h.Base, key, true)
	if err != nil || sh == nil {
		unlock()
		return none, err
	}
	return func() { h.leave(env, sh, nil, "", false); unlock() }, nil
}

// lock takes the host lock for the change, unless the caller holds it.
func (h TSHold) lock() (unlock func(), err error) {
	if h.Lock != nil {
		return func() {}, nil
	}
	l, err := journal.LockHost(h.Base, journal.Self(h.RunID))
	if err != nil {
		return nil, err
	}
	return func() { l.Unlock() }, nil
}

func (h TSHold) log(format string, a ...any) {
	if h.Log != nil {
		h.Log(format, a...)
	}
}

// leave leaves the NIC's share. The last holder puts back every lane
// written under it, newest first, and its own (own: nil for a process that
// only relied on the config); another leaves its lane, when it wrote, to
// the last.
func (h TSHold) leave(env *Env, sh *journal.Share, own *journal.Journal, ownLane string, wrote bool) {
	lanes, last, err := sh.Leave()
	if err != nil {
		h.log("the NIC's share: %v (run `rig restore` once the probes on it are gone)", err)
	}
	if !last && wrote {
		own.Close()
		h.log("the NIC config stays in force for the other probes on it: the last to exit puts it back")
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
			restored, uerr = journal.Restore(context.Background(), lane, Handlers(env))
		}
		for _, r := range restored {
			if r.Err == nil {
				h.log("put back %s %s: %s", r.Entry.Kind, r.Entry.Target, r.Restored)
			}
		}
		if uerr != nil {
			h.log("putting the NIC back failed: %v (run `rig restore`)", uerr)
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
