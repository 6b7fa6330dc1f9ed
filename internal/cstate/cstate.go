// Package cstate limits the idle states of the responder's CPU for an arm:
// either by disabling named cpuidle states on that CPU (sysfs writes,
// journaled and undone), or by holding a PM QoS request on
// /dev/cpu_dma_latency (which the kernel drops by itself when the file is
// closed, so even a SIGKILLed rig cannot leave it behind).
//
// Only x86 has a polling idle state (POLL, exit latency 0). On arm64 the
// shallowest state is WFI, which waits for an interrupt: "poll only" does
// not exist there, and a 0 µs PM QoS limit leaves WFI. Without a cpuidle
// driver (an AWS Graviton guest) the idle loop runs the architecture's
// default (HLT, WFI) and ignores PM QoS.
package cstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/rundir"
)

// DMALatencyPath is the global PM QoS device.
const DMALatencyPath = "/dev/cpu_dma_latency"

// PollState is the name of x86's polling idle state.
const PollState = "POLL"

// HasPoll reports whether a CPU with these idle states can poll.
func HasPoll(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, PollState) })
}

// ZeroLatencyEffect says what a 0 µs latency limit leaves a CPU with these
// idle states (in index order; none: no cpuidle driver).
func ZeroLatencyEffect(names []string) string {
	switch {
	case HasPoll(names):
		return "POLL only (the CPU polls in the idle loop)"
	case len(names) > 0:
		return fmt.Sprintf("shallowest state only (%s): the CPU has no POLL state", names[0])
	}
	return "no effect: no cpuidle driver, the idle loop ignores PM QoS"
}

// Holder keeps a PM QoS latency request alive while it is open.
type Holder struct {
	f      *os.File
	us     int32
	effect string
}

// HoldMaxLatency asks the kernel to use only idle states whose exit
// latency is at most us microseconds (0: only polling), on every CPU,
// until Close. It needs root (the device is 0600).
func HoldMaxLatency(fs hostfs.FS, us int) (*Holder, error) {
	if us < 0 {
		return nil, fmt.Errorf("cstate: max latency %d µs must be ≥ 0", us)
	}
	f, err := os.OpenFile(fs.Path(DMALatencyPath), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cstate: open %s (needs root): %w", DMALatencyPath, err)
	}
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(us))
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("cstate: write %d to %s: %w", us, DMALatencyPath, err)
	}
	h := &Holder{f: f, us: int32(us)}
	if us == 0 {
		// PM QoS is global; the states of the first online CPU stand for all.
		var names []string
		if online, err := hostinfo.OnlineCPUs(fs); err == nil && len(online) > 0 {
			st, _ := hostinfo.ReadIdleStates(fs, online[0])
			for _, s := range st {
				names = append(names, s.Name)
			}
		}
		h.effect = ZeroLatencyEffect(names)
	}
	return h, nil
}

// Close releases the request.
func (h *Holder) Close() error { return h.f.Close() }

// Describe says what the request is, for the run manifest.
func (h *Holder) Describe() string {
	if h.effect != "" {
		return fmt.Sprintf("%s held at %d µs: %s", DMALatencyPath, h.us, h.effect)
	}
	return fmt.Sprintf("%s held at %d µs", DMALatencyPath, h.us)
}

// DisableChanges returns the journal changes that disable the named idle
// states (case-insensitive, e.g. "C1E", "C6") on cpu. A name the CPU does
// not have is an error listing the ones it has. allButPoll disables every
// state except POLL instead; a CPU without a POLL state (arm64) refuses it
// with an error wrapping errors.ErrUnsupported, since disabling every state
// leaves the CPU in its shallowest one, not polling.
func DisableChanges(fs hostfs.FS, cpu int, names []string, allButPoll bool) ([]journal.Change, error) {
	states, err := hostinfo.ReadIdleStates(fs, cpu)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cstate: CPU %d has no cpuidle states (driver none, or idle=poll / cpuidle.off=1 on the command line): %w", cpu, errors.ErrUnsupported)
		}
		return nil, err
	}
	var have []string
	for _, s := range states {
		have = append(have, s.Name)
	}
	var out []journal.Change
	pick := func(s rundir.IdleState) {
		out = append(out, journal.SysfsChange(fs, fs.Root, hostinfo.IdleStatePath(cpu, s.Index)+"/disable", "1\n"))
	}
	if allButPoll {
		if !HasPoll(have) && len(have) > 0 {
			return nil, fmt.Errorf("cstate: CPU %d has no POLL idle state (states: %s): poll would disable them all and the CPU would still idle in %s, its shallowest: %w",
				cpu, strings.Join(have, ", "), have[0], errors.ErrUnsupported)
		}
		for _, s := range states {
			if !strings.EqualFold(s.Name, "POLL") {
				pick(s)
			}
		}
		return out, nil
	}
	for _, n := range names {
		i := slices.IndexFunc(states, func(s rundir.IdleState) bool { return strings.EqualFold(s.Name, n) })
		if i < 0 {
			return nil, fmt.Errorf("cstate: CPU %d has no idle state %q (it has %s)", cpu, n, strings.Join(have, ", "))
		}
		pick(states[i])
	}
	return out, nil
}

// Apply runs the changes through the journal and returns what each
// became.
func Apply(ctx context.Context, j *journal.Journal, changes []journal.Change) ([]journal.Result, error) {
	var out []journal.Result
	for _, c := range changes {
		r, err := j.Apply(ctx, c)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
