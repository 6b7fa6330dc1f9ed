package nicctl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/journal"
)

// KindIRQSuspend is a change of the irq_suspend_timeout of every NAPI
// instance of a device (netdev netlink napi-set: it has no sysfs file);
// Target is the device, values are "ID=NS ..." (FormatNAPIValues).
const KindIRQSuspend = "napi-irq-suspend-timeout"

// NAPIControl lists a device's NAPI instances and sets one's
// irq_suspend_timeout; nil in Env is the kernel's (netdev netlink, in the
// calling thread's network namespace).
type NAPIControl interface {
	NAPIs(iface string) ([]facts.NAPI, error)
	SetIRQSuspend(id uint32, ns uint64) error
}

type hostNAPI struct{}

func (hostNAPI) NAPIs(iface string) ([]facts.NAPI, error) { return facts.NAPIs(iface) }

func (hostNAPI) SetIRQSuspend(id uint32, ns uint64) error {
	n, err := facts.DialNetdev()
	if err != nil {
		return err
	}
	defer n.Close()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(facts.NetdevNAPIID, id)
	ae.Uint64(facts.NetdevNAPIIRQSuspend, ns)
	body, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = n.C.Execute(genetlink.Message{Header: genetlink.Header{Command: facts.NetdevNAPISet, Version: n.Family.Version}, Data: body},
		n.Family.ID, netlink.Request|netlink.Acknowledge)
	if err != nil {
		return fmt.Errorf("netdev napi-set of NAPI %d: %w", id, err)
	}
	return nil
}

func (e *Env) napi() NAPIControl {
	if e.NAPI != nil {
		return e.NAPI
	}
	return hostNAPI{}
}

// NAPIValue is one NAPI instance's value in a KindIRQSuspend entry.
type NAPIValue struct {
	ID uint32
	NS uint64
}

// FormatNAPIValues is the journal encoding: "ID=NS" by ascending id.
func FormatNAPIValues(v []NAPIValue) string {
	v = slices.Clone(v)
	slices.SortFunc(v, func(a, b NAPIValue) int { return cmp.Compare(a.ID, b.ID) })
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatUint(uint64(x.ID), 10) + "=" + strconv.FormatUint(x.NS, 10)
	}
	return strings.Join(parts, " ")
}

// ParseNAPIValues parses FormatNAPIValues' encoding.
func ParseNAPIValues(s string) ([]NAPIValue, error) {
	var out []NAPIValue
	for _, f := range strings.Fields(s) {
		id, ns, ok := strings.Cut(f, "=")
		i, err := strconv.ParseUint(id, 10, 32)
		n, nerr := strconv.ParseUint(ns, 10, 64)
		if !ok || err != nil || nerr != nil || i == 0 {
			return nil, fmt.Errorf("NAPI value %q: want ID=NS (a NAPI id above 0, nanoseconds)", f)
		}
		out = append(out, NAPIValue{uint32(i), n})
	}
	if len(out) == 0 {
		return nil, errors.New("no NAPI values")
	}
	return out, nil
}

// irqSuspendNAPIs is iface's NAPI instances, refusing, with the reason
// found by asking, a device or kernel that has no irq_suspend_timeout.
func irqSuspendNAPIs(env *Env, iface string) ([]facts.NAPI, error) {
	const none = "this kernel has no irq_suspend_timeout (Linux 6.13+)"
	napis, err := env.napi().NAPIs(iface)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil, fmt.Errorf("%s: --irq-suspend-timeout: %s: %v", iface, none, err)
	case err != nil:
		return nil, fmt.Errorf("%s: --irq-suspend-timeout: cannot tell whether it can be set (netdev netlink napi-get): %w", iface, err)
	case len(napis) == 0:
		return nil, fmt.Errorf("%s: --irq-suspend-timeout: %s has no NAPI instance (netdev netlink napi-get lists none), and the timeout is a NAPI instance's (a veth gets one with GRO on: ethtool -K %s gro on): %w", iface, iface, iface, errors.ErrUnsupported)
	}
	for _, n := range napis {
		if n.IRQSuspendTimeout == nil {
			return nil, fmt.Errorf("%s: --irq-suspend-timeout: %s: napi-get does not report it for NAPI %d: %w", iface, none, n.ID, errors.ErrUnsupported)
		}
	}
	return napis, nil
}

// irqSuspendChange journals setting every NAPI instance of iface, as
// found now, to ns.
func irqSuspendChange(env *Env, iface string, ns uint64) (journal.Change, error) {
	napis, err := irqSuspendNAPIs(env, iface)
	if err != nil {
		return journal.Change{}, err
	}
	want := make([]NAPIValue, len(napis))
	for i, n := range napis {
		want[i] = NAPIValue{n.ID, ns}
	}
	return journal.Change{
		Kind: KindIRQSuspend, Target: iface, Device: iface, Value: FormatNAPIValues(want),
		Read:  func(context.Context) (string, error) { return readIRQSuspend(env, iface) },
		Write: func(_ context.Context, v string) error { return writeIRQSuspend(env, v) },
	}, nil
}

func readIRQSuspend(env *Env, iface string) (string, error) {
	napis, err := irqSuspendNAPIs(env, iface)
	if err != nil {
		return "", err
	}
	cur := make([]NAPIValue, len(napis))
	for i, n := range napis {
		cur[i] = NAPIValue{n.ID, *n.IRQSuspendTimeout}
	}
	return FormatNAPIValues(cur), nil
}

func writeIRQSuspend(env *Env, value string) error {
	v, err := ParseNAPIValues(value)
	if err != nil {
		return err
	}
	for _, x := range v {
		if err := env.napi().SetIRQSuspend(x.ID, x.NS); err != nil {
			return err
		}
	}
	return nil
}

// planNAPI checks, by looking, that iface has the NAPI knobs s sets: the
// sysfs files, and napi-get reporting irq_suspend_timeout.
func planNAPI(env *Env, iface string, k facts.NAPIKnobs) error {
	if k.DeferHardIRQs != nil && *k.DeferHardIRQs > facts.MaxDeferHardIRQs {
		return usage("%s: --napi-defer-hard-irqs %d out of range: 0..%d", iface, *k.DeferHardIRQs, facts.MaxDeferHardIRQs)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"napi_defer_hard_irqs", k.DeferHardIRQs != nil}, {"gro_flush_timeout", k.GROFlushTimeout != nil}} {
		if f.set && !env.FS.Exists(facts.NAPIFile(iface, f.name)) {
			return fmt.Errorf("%s: this kernel has no %s (%s is missing; napi_defer_hard_irqs came in Linux 5.10): %w", iface, f.name, facts.NAPIFile(iface, f.name), errors.ErrUnsupported)
		}
	}
	if k.IRQSuspendTimeout != nil {
		_, err := irqSuspendNAPIs(env, iface)
		return err
	}
	return nil
}

// setNAPI applies k to iface through j: the sysfs files, then
// irq_suspend_timeout on every NAPI instance, appending a line each.
func setNAPI(ctx context.Context, env *Env, j *journal.Journal, iface string, k facts.NAPIKnobs, out []Change) ([]Change, error) {
	var changes []journal.Change
	if k.DeferHardIRQs != nil {
		changes = append(changes, napiSysfs(env, iface, "napi_defer_hard_irqs", uint64(*k.DeferHardIRQs)))
	}
	if k.GROFlushTimeout != nil {
		changes = append(changes, napiSysfs(env, iface, "gro_flush_timeout", *k.GROFlushTimeout))
	}
	if k.IRQSuspendTimeout != nil {
		// Found after the channels changed: those re-create the instances.
		c, err := irqSuspendChange(env, iface, *k.IRQSuspendTimeout)
		if err != nil {
			return out, err
		}
		changes = append(changes, c)
	}
	for _, c := range changes {
		res, err := j.Apply(ctx, c)
		what := strings.TrimPrefix(c.Target, "/sys/class/net/"+iface+"/")
		if c.Kind == KindIRQSuspend {
			what = "irq_suspend_timeout"
		}
		chg := Change{What: what, Previous: strings.TrimSpace(res.Previous), Requested: strings.TrimSpace(c.Value), Effective: strings.TrimSpace(res.Effective)}
		if err != nil {
			chg.Err = err.Error()
			return append(out, chg), err
		}
		out = append(out, chg)
	}
	return out, nil
}

// napiSysfs journals writing v to iface's sysfs file name, recording the
// device so that restoring never writes to another one of that name.
func napiSysfs(env *Env, iface, name string, v uint64) journal.Change {
	c := journal.SysfsChange(env.files(), env.FS.Root, facts.NAPIFile(iface, name), strconv.FormatUint(v, 10))
	c.Device = iface
	return c
}

// napiUndo is KindIRQSuspend's undo handler.
func napiUndo(env *Env) journal.UndoFunc {
	return func(_ context.Context, e journal.Entry) (string, error) {
		if err := writeIRQSuspend(env, e.Previous); err != nil {
			return "", err
		}
		return readIRQSuspend(env, e.Target)
	}
}
