// Package hostctl applies the host knobs of one arm on the responder host
// and takes them back: NIC queue IRQs, coalescing, rings, channels and
// NAPI knobs (through nicctl), every IRQ off the measured CPUs and their
// SMT siblings offline (steer), idle states (cstate), CPU frequency and
// the tuned profile (power), and noisy neighbours (stress-ng on a CPU list
// and on the responder CPU's SMT sibling). The NIC's
// timestamping is not an arm's: rig run prepares it once per run
// (nicctl.PrepareTimestamping) in the same journal, before the first arm,
// and an arm's undo leaves it in force.
//
// Every persistent change goes through the journal, so a crash leaves a
// record that `rig restore` replays; loads and PM QoS requests die with
// their process.
package hostctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/cstate"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// Host is the responder host as the arm sees it.
type Host struct {
	FS      hostfs.FS
	NIC     *nicctl.Env
	Journal *journal.Journal
	Iface   string // responder interface
	// AllowMgmt lets the knobs change Iface although it carries the
	// default route (nicctl refuses otherwise).
	AllowMgmt bool
	// InNetns runs fn in the network namespace of Iface (nil: this one).
	InNetns func(fn func() error) error
	// Tuned switches tuned profiles; nil: power.HostTuned(FS).
	Tuned power.Tuned
}

// Arm is what to apply.
type Arm struct {
	Name  string
	Knobs scenario.Knobs
	// Length bounds the loads: they end by themselves after it.
	Length time.Duration
}

// Applied is an arm in force on a host.
type Applied struct {
	host    *Host
	mark    int // the journal's mark before the arm: Undo takes back only what came after
	loads   []*load.Process
	holder  *cstate.Holder
	steered *steered // what irq.away and smt.fence must still hold when the arm ends
	// Report lists what changed, one line each, for the log and manifest.
	Report []string
}

// Apply puts the arm's knobs in force. On error everything applied so far
// is taken back before it returns.
func Apply(ctx context.Context, h *Host, a Arm) (_ *Applied, err error) {
	ap := &Applied{host: h}
	if h.Journal != nil {
		ap.mark = h.Journal.Mark()
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ap.Undo(context.WithoutCancel(ctx)))
			ap = nil
		}
	}()
	k := a.Knobs
	// tuned first: its profile sets many things, the arm's own knobs
	// then win where they overlap.
	if err := ap.power(ctx, k); err != nil {
		return ap, err
	}
	if err := ap.nic(ctx, k); err != nil {
		return ap, err
	}
	// After the NIC: new channels re-create IRQs, which must go away too.
	if err := ap.steer(ctx, k, h.Iface); err != nil {
		return ap, err
	}
	if cs := k.CState; cs != nil {
		if err := ap.cstate(ctx, cs, k.Responder.CPU); err != nil {
			return ap, err
		}
	}
	if l := k.Load; l != nil {
		cpus := l.CPUs
		if cpus == nil {
			online, err := hostinfo.OnlineCPUs(h.FS)
			if err != nil {
				return ap, err
			}
			cpus = online
		}
		if err := ap.startLoad(strings.Join(l.StressNG, " "), cpus, a.Length, "load"); err != nil {
			return ap, err
		}
	}
	if s := k.SMTSibling; s != nil {
		if k.Responder.CPU == nil {
			return ap, errors.New("smt-sibling load needs responder.cpu")
		}
		sib, err := Sibling(h.FS, *k.Responder.CPU)
		if err != nil {
			return ap, err
		}
		if err := ap.startLoad(strings.Join(s.StressNG, " "), []int{sib}, a.Length, "smt-sibling load"); err != nil {
			return ap, err
		}
	}
	return ap, nil
}

// Sibling returns the other hardware thread of cpu's core.
func Sibling(fs hostfs.FS, cpu int) (int, error) {
	t, err := hostinfo.ReadTopology(fs, cpu)
	if err != nil {
		return 0, err
	}
	for _, c := range t.ThreadSiblings {
		if c != cpu {
			return c, nil
		}
	}
	return 0, fmt.Errorf("CPU %d has no SMT sibling (thread_siblings_list %s): %w", cpu, cpulist.Format(t.ThreadSiblings), errors.ErrUnsupported)
}

// power switches the tuned profile, then sets the frequency knobs, each
// journaled.
func (ap *Applied) power(ctx context.Context, k scenario.Knobs) error {
	h := ap.host
	s, profile := k.PowerSettings(), k.TunedProfile()
	if s.IsZero() && profile == "" {
		return nil
	}
	if h.Journal == nil {
		return errors.New("power knobs need the journal (every change must be restorable)")
	}
	if profile != "" {
		t := h.Tuned
		if t == nil {
			t = power.HostTuned(h.FS)
		}
		r, err := h.Journal.Apply(ctx, tunedChange(t, profile))
		if err != nil {
			return fmt.Errorf("tuned profile %s: %w", profile, err)
		}
		ap.Report = append(ap.Report, fmt.Sprintf("tuned: profile %s → %s", orNone(r.Previous), r.Effective))
		if r.Effective != profile {
			return fmt.Errorf("tuned profile %s: tuned-adm active says %q afterwards", profile, r.Effective)
		}
	}
	report, err := applyPower(ctx, h.Journal, h.FS, s)
	ap.Report = append(ap.Report, report...)
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Handlers are the undo handlers of every kind an arm or a run journals
// on a host: nicctl's (sysfs, ethtool, irqbalance, timestamping) and the
// tuned profile's.
func Handlers(env *nicctl.Env) journal.Handlers {
	h := nicctl.Handlers(env)
	h[KindTuned] = tunedUndo(power.HostTuned(env.FS))
	return h
}

func (ap *Applied) nic(ctx context.Context, k scenario.Knobs) error {
	s := nicctl.Settings{AllowMgmt: ap.host.AllowMgmt}
	change := false
	if k.IRQ != nil && k.IRQ.CPUs != nil {
		s.IRQCPUs, s.HoldIRQBalance, change = k.IRQ.CPUs, true, true
	}
	s.Coalesce = k.NIC.Coalesce
	if s.Coalesce != (ethtoolnl.Coalesce{}) {
		change = true
	}
	if k.NIC.Ring.RX != nil || k.NIC.Ring.TX != nil {
		s.RxRing, s.TxRing, change = k.NIC.Ring.RX, k.NIC.Ring.TX, true
	}
	if k.NIC.Channels != nil {
		s.Channels, change = k.NIC.Channels, true
	}
	if s.NAPI = k.NIC.NAPI; s.NAPI != (facts.NAPIKnobs{}) {
		change = true
	}
	if !change {
		return nil
	}
	h := ap.host
	if h.NIC == nil {
		return errors.New("arm changes the NIC but no NIC control is configured for this host")
	}
	run := func() error {
		changes, err := nicctl.Set(ctx, h.NIC, h.Journal, h.Iface, s)
		for _, c := range changes {
			line := fmt.Sprintf("nic %s: %s → %s (effective %s)", c.What, c.Previous, c.Requested, c.Effective)
			if c.Note != "" {
				line += " — " + c.Note
			}
			if c.Err != "" {
				line += " — error: " + c.Err
			}
			ap.Report = append(ap.Report, line)
		}
		return err
	}
	if h.InNetns != nil {
		return h.InNetns(run)
	}
	return run()
}

func (ap *Applied) cstate(ctx context.Context, cs *scenario.CState, cpu *int) error {
	h := ap.host
	if cs.MaxLatencyUS != nil {
		hd, err := cstate.HoldMaxLatency(h.FS, *cs.MaxLatencyUS)
		if err != nil {
			return err
		}
		ap.holder = hd
		ap.Report = append(ap.Report, "cstate: "+hd.Describe())
		return nil
	}
	if cpu == nil {
		return errors.New("cstate disable/poll needs responder.cpu (the CPU whose idle states change)")
	}
	changes, err := cstate.DisableChanges(h.FS, *cpu, cs.Disable, cs.Poll)
	if err != nil {
		return err
	}
	res, err := cstate.Apply(ctx, h.Journal, changes)
	for i, r := range res {
		ap.Report = append(ap.Report, fmt.Sprintf("cstate: %s %q → %q", changes[i].Target,
			strings.TrimSpace(r.Previous), strings.TrimSpace(r.Effective)))
	}
	return err
}

func (ap *Applied) startLoad(args string, cpus []int, length time.Duration, what string) error {
	p, err := load.Start(load.Spec{Args: args, CPUs: cpus, Timeout: length + 30*time.Second})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	ap.loads = append(ap.loads, p)
	ap.Report = append(ap.Report, fmt.Sprintf("%s: %s (pid %d)", what, strings.Join(p.Argv, " "), p.Pid()))
	return nil
}

// Undo stops the loads, releases the PM QoS request and unwinds what the
// arm journaled (nothing from before it). It tries everything and joins
// the errors.
func (ap *Applied) Undo(ctx context.Context) error {
	if ap == nil {
		return nil
	}
	var errs []error
	for _, p := range ap.loads {
		if err := p.Stop(ctx, 3*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	ap.loads = nil
	if ap.steered != nil {
		ap.Report = append(ap.Report, ap.steered.check(ap.host.FS)...)
		ap.steered = nil
	}
	if ap.holder != nil {
		errs = append(errs, ap.holder.Close())
		ap.holder = nil
	}
	if ap.host.Journal != nil {
		res, err := ap.host.Journal.UndoAfter(ctx, ap.mark)
		for _, r := range res {
			if r.Err == nil {
				ap.Report = append(ap.Report, fmt.Sprintf("restored %s %s → %q", r.Entry.Kind, r.Entry.Target, r.Restored))
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
