// Package nicctl changes a NIC's queues, rings, interrupt moderation, IRQ
// affinity and hardware timestamping config, moves every IRQ of the host
// off given CPUs (IRQsAway), and holds irqbalance, through
// the host-change journal so every change is put back; it also proves what
// a NIC really stamps (rig nicctl probe). What it reads of a NIC (rig nicctl
// show, the drop counters) is package facts'.
//
// All /proc and /sys access goes through hostfs (fake trees in tests); all
// ethtool access goes through ethtoolnl.Client; all irqbalance control
// through IRQBalancer.
package nicctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
)

// Journal kinds nicctl writes (besides journal.KindSysfs for IRQ affinity).
const (
	KindCoalesce   = "ethtool-coalesce"
	KindRings      = "ethtool-rings"
	KindChannels   = "ethtool-channels"
	KindIRQBalance = "irqbalance"
	KindHWTstamp   = "hwtstamp"
)

// Env is what nicctl works through: the readers' access to the NIC
// (facts.NIC) and what changing it needs besides.
type Env struct {
	facts.NIC
	// Files reads and writes /proc/irq files; nil means FS. Tests wrap FS
	// to make writes fail the way a managed IRQ's do.
	Files      journal.ReadWriter
	IRQBalance IRQBalancer
	// LinkTimeout bounds the wait for the link after a change that can
	// reset the interface (0: DefaultLinkTimeout); LinkSettle is the extra
	// wait once it bounced (0: DefaultLinkSettle, < 0: none).
	LinkTimeout, LinkSettle time.Duration
	// Clock is what that wait reads and sleeps on (nil: the wall clock;
	// tests step a virtual one).
	Clock Clock
	// NAPI reaches the NAPI instances (nil: netdev netlink).
	NAPI NAPIControl
}

// NewEnv is the host's Env below fs: its kernel, and irqbalance found
// through fs's /proc and controlled with systemctl.
func NewEnv(fs hostfs.FS) *Env {
	return &Env{NIC: facts.NIC{FS: fs}, IRQBalance: HostIRQBalance{FS: fs}}
}

func (e *Env) files() journal.ReadWriter {
	if e.Files != nil {
		return e.Files
	}
	return e.FS
}

// Settings are the changes of `rig nicctl set`. Nil/empty fields are left
// alone.
type Settings struct {
	IRQCPUs        []int // every queue IRQ gets this list
	IRQCPUPerQueue []int // queue q's IRQs get CPU list[q % len]
	// Coalesce is interrupt moderation; nil fields are left alone.
	Coalesce ethtoolnl.Coalesce
	RxRing   *uint32
	TxRing   *uint32
	Channels *uint32
	// NAPI is what busy polling wants of the NIC (napi_defer_hard_irqs,
	// gro_flush_timeout, irq_suspend_timeout); nil fields are left alone.
	NAPI           facts.NAPIKnobs
	HoldIRQBalance bool
	// HWTstamp is "" (leave it) or one of HWTstampModes: "all" and "rx" go
	// through PrepareTimestamping (written only when not already granted);
	// "ptp" and "off" write that config unless it is already in force.
	HWTstamp string
	// TakeOverPTP lets HWTstamp change a config that ptp4l or chronyd owns.
	TakeOverPTP bool
	// RequireIRQAffinity makes an IRQ whose affinity cannot be set (a
	// kernel-managed one) an error instead of a reported warning.
	RequireIRQAffinity bool
	// AllowMgmt permits changing the interface that carries the default route.
	AllowMgmt bool
}

// Change is one line of the set report.
type Change struct {
	What      string `json:"what"`
	Previous  string `json:"previous"`
	Requested string `json:"requested"`
	Effective string `json:"effective"`
	Note      string `json:"note,omitempty"` // e.g. why an IRQ was left alone
	Err       string `json:"error,omitempty"`
}

// usage is a refusal caused by the request itself (unknown interface,
// out-of-range value, management interface): cli.ErrUsage, exit code 2.
func usage(format string, a ...any) error { return cli.Usagef(format, a...) }

// Set applies s to iface through j, in the order that keeps each step's
// result: irqbalance, channels and rings (they re-create IRQs and NAPI
// instances), coalescing, the NAPI knobs, IRQ affinity last. It returns what it did, including partial work when it
// fails; the caller unwinds j.
func Set(ctx context.Context, env *Env, j *journal.Journal, iface string, s Settings) ([]Change, error) {
	p, err := plan(ctx, env, iface, s)
	if err != nil {
		return nil, err
	}
	var out []Change
	if s.HoldIRQBalance && env.IRQBalance != nil {
		chg, err := holdIRQBalance(ctx, env, j)
		if chg != nil {
			out = append(out, *chg)
		}
		if err != nil {
			return out, err
		}
	}
	if p.ts != nil {
		// Before queues and IRQs: on ENA it bounces the link and resets IRQ affinity.
		chg, err := p.ts.apply(ctx, env, j, iface)
		out = append(out, chg)
		if err != nil {
			return out, err
		}
	}
	if out, err = p.ethtool(ctx, env, j, iface, out); err != nil {
		return out, err
	}
	if out, err = setNAPI(ctx, env, j, iface, s.NAPI, out); err != nil {
		return out, err
	}
	if len(s.IRQCPUs) == 0 && len(s.IRQCPUPerQueue) == 0 {
		return out, nil
	}
	return setIRQAffinity(ctx, env, j, iface, p.dev, s, out)
}

// setPlan is what Set will change, validated before the first change.
type setPlan struct {
	dev   facts.Device
	c     ethtoolnl.Client // nil when no ethtool step is planned
	steps []ethtoolStep    // in order: channels, rings, coalesce
	ts    *hwtsPlan
}

type ethtoolStep struct {
	what string
	kind string
	v    any
}

// plan checks s against iface (it exists, is not the management interface
// unless allowed, the CPUs exist, the driver takes each value) and decides
// the timestamping change, all before anything changes.
func plan(ctx context.Context, env *Env, iface string, s Settings) (*setPlan, error) {
	d, err := facts.FindDevice(env.FS, iface)
	if err != nil {
		return nil, cli.Usage(err)
	}
	p := &setPlan{dev: d}
	if !s.AllowMgmt {
		mg, err := facts.ReadMgmt(env.FS)
		if err != nil {
			return nil, fmt.Errorf("finding the management interface: %w", err)
		}
		if why := mg.Why[iface]; why != "" {
			return nil, usage("%s %s: refusing to change the management interface (use --allow-mgmt if you really mean it)", iface, why)
		}
	}
	if err := validateCPUs(env.FS, s); err != nil {
		return nil, err
	}
	if err := planNAPI(env, iface, s.NAPI); err != nil {
		return nil, err
	}
	coalesce := s.Coalesce != (ethtoolnl.Coalesce{})
	if s.Channels != nil || s.RxRing != nil || s.TxRing != nil || coalesce {
		if p.c, err = env.Ethtool(); err != nil {
			return nil, err
		}
	}
	if s.Channels != nil {
		ch, err := planChannels(ctx, p.c, iface, *s.Channels)
		if err != nil {
			return nil, err
		}
		p.steps = append(p.steps, ethtoolStep{"channels", KindChannels, ch})
	}
	if s.RxRing != nil || s.TxRing != nil {
		rg, err := planRings(ctx, p.c, iface, s.RxRing, s.TxRing)
		if err != nil {
			return nil, err
		}
		p.steps = append(p.steps, ethtoolStep{"rings", KindRings, rg})
	}
	if coalesce {
		co := &s.Coalesce
		if err := planCoalesce(ctx, p.c, iface, *co); err != nil {
			return nil, err
		}
		p.steps = append(p.steps, ethtoolStep{"coalesce", KindCoalesce, co})
	}
	if s.HWTstamp != "" {
		// Decided before anything changes: a refusal changes nothing.
		if p.ts, err = planHWTstamp(env, iface, s); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ethtool applies the planned ethtool steps through j, appending each
// step's line to out; after channels or rings it waits for the link the
// driver may have reset.
func (p *setPlan) ethtool(ctx context.Context, env *Env, j *journal.Journal, iface string, out []Change) ([]Change, error) {
	for _, st := range p.steps {
		val, _ := json.Marshal(st.v) // plain structs of numbers and bools: cannot fail
		before := env.linkSnapshot(iface)
		res, err := j.Apply(ctx, ethtoolChange(p.c, st.kind, iface, string(val)))
		chg := Change{What: st.what, Previous: res.Previous, Requested: string(val), Effective: res.Effective}
		if res.Changed && st.kind != KindCoalesce {
			// New queues or rings re-create the driver's rings, and many
			// drivers reset the link to do it.
			link, werr := env.waitLink(ctx, iface, before)
			chg.Note, err = link, errors.Join(err, werr)
		}
		if err != nil {
			chg.Err = err.Error()
			return append(out, chg), err
		}
		out = append(out, chg)
	}
	return out, nil
}

// setIRQAffinity points d's queue IRQs at s.IRQCPUs (or one CPU per queue
// from s.IRQCPUPerQueue) through j, appending a line per IRQ to out.
// Kernel-managed IRQs are left alone and named; with
// s.RequireIRQAffinity they make it fail.
func setIRQAffinity(ctx context.Context, env *Env, j *journal.Journal, iface string, d facts.Device, s Settings, out []Change) ([]Change, error) {
	// Channel changes re-create the queue IRQs: discover after them.
	queues, err := queueIRQs(env, d)
	if err != nil {
		return out, err
	}
	if !s.HoldIRQBalance && env.IRQBalance != nil {
		if chg := irqbalanceExposes(ctx, env, append(slices.Clone(s.IRQCPUs), s.IRQCPUPerQueue...)); chg != nil {
			out = append(out, *chg)
		}
	}
	var failed []string
	for _, q := range queues {
		want := s.IRQCPUs
		if len(s.IRQCPUPerQueue) > 0 {
			qi := max(q.Queue, 0)
			want = []int{s.IRQCPUPerQueue[qi%len(s.IRQCPUPerQueue)]}
		}
		chg, why, err := setQueueAffinity(ctx, env, j, q, want)
		out = append(out, chg)
		if err != nil {
			return out, err
		}
		if why != "" {
			failed = append(failed, why)
		}
	}
	if len(failed) > 0 && s.RequireIRQAffinity {
		return out, fmt.Errorf("%s: affinity of %s could not be set and --require-irq-affinity was given", iface, strings.Join(failed, ", "))
	}
	return out, nil
}

// queueIRQs are d's queue IRQs; none is an error.
func queueIRQs(env *Env, d facts.Device) ([]facts.IRQ, error) {
	ints, err := hostinfo.ReadInterrupts(env.FS)
	if err != nil {
		return nil, err
	}
	irqs, err := facts.DiscoverIRQs(env.FS, d, ints)
	if err != nil {
		return nil, err
	}
	var queues []facts.IRQ
	for _, q := range irqs {
		if q.IsQueue() {
			queues = append(queues, q)
		}
	}
	if len(queues) == 0 {
		return nil, fmt.Errorf("%s: no queue IRQs found (driver %q, %d IRQs attributed to the device): cannot set IRQ affinity", d.Iface, d.Driver, len(irqs))
	}
	return queues, nil
}

// irqbalanceExposes warns when a running irqbalance does not ban every CPU
// of want (it may move the IRQs back); nil when it is not running, cannot
// be asked, or bans them all.
func irqbalanceExposes(ctx context.Context, env *Env, want []int) *Change {
	st, err := env.IRQBalance.State(ctx)
	if err != nil || !st.Running {
		return nil
	}
	banned, _ := cpulist.Parse(st.BannedCPUs)
	var exposed []int
	for _, c := range want {
		if !slices.Contains(banned, c) {
			exposed = append(exposed, c)
		}
	}
	if len(exposed) == 0 {
		return nil
	}
	return &Change{What: "irqbalance", Previous: "running", Requested: "running", Effective: "running",
		Note: fmt.Sprintf("WARNING: irqbalance (pid %d) does not ban CPU %s and may move these IRQs back: use --hold-irqbalance", st.PID, cpulist.Format(exposed))}
}

// setQueueAffinity writes want to q's smp_affinity_list through j. An IRQ
// the kernel manages (or refuses with EIO/EPERM) is left alone: why names
// it and err is nil; err is another failure, which stops Set.
func setQueueAffinity(ctx context.Context, env *Env, j *journal.Journal, q facts.IRQ, want []int) (chg Change, why string, err error) {
	list := cpulist.Format(want)
	chg = Change{What: fmt.Sprintf("irq %d (%s)", q.Number, q.Name), Previous: q.Affinity, Requested: list}
	if q.Managed {
		chg.Effective, chg.Note = q.Affinity, "kernel-managed ("+q.ManagedWhy+"): left alone"
		return chg, fmt.Sprintf("IRQ %d (%s)", q.Number, q.ManagedWhy), nil
	}
	res, err := j.Apply(ctx, journal.SysfsChange(env.files(), env.FS.Root, facts.IRQFile(q.Number, "smp_affinity_list"), list))
	chg.Previous, chg.Effective = strings.TrimSpace(res.Previous), strings.TrimSpace(res.Effective)
	if eff, e := env.FS.ReadString(facts.IRQFile(q.Number, "effective_affinity_list")); e == nil {
		chg.Note = "effective_affinity_list " + eff
	}
	if err != nil {
		chg.Err = err.Error()
		if !res.Changed && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EPERM)) {
			chg.Note = "kernel refused (managed IRQ): " + errnoName(err)
			return chg, fmt.Sprintf("IRQ %d (%s)", q.Number, errnoName(err)), nil
		}
		return chg, "", err
	}
	return chg, "", nil
}

func errnoName(err error) string {
	switch {
	case errors.Is(err, syscall.EIO):
		return "EIO"
	case errors.Is(err, syscall.EPERM):
		return "EPERM"
	}
	return err.Error()
}

func validateCPUs(fs hostfs.FS, s Settings) error {
	if len(s.IRQCPUs) > 0 && len(s.IRQCPUPerQueue) > 0 {
		return usage("--irq-cpus and --irq-cpu-per-queue exclude each other")
	}
	want := append(slices.Clone(s.IRQCPUs), s.IRQCPUPerQueue...)
	if len(want) == 0 {
		return nil
	}
	on, err := fs.ReadString("/sys/devices/system/cpu/online")
	if err != nil {
		return fmt.Errorf("reading online CPUs: %w", err)
	}
	online, err := cpulist.Parse(on)
	if err != nil {
		return err
	}
	for _, c := range want {
		if !slices.Contains(online, c) {
			return usage("CPU %d is not online (online CPUs: %s)", c, on)
		}
	}
	return nil
}

func u32(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

func planChannels(ctx context.Context, c ethtoolnl.Client, iface string, n uint32) (*ethtoolnl.Channels, error) {
	cur, err := c.Channels(ctx, iface)
	if err != nil {
		return nil, err
	}
	v := n
	switch {
	case u32(cur.CombinedMax) > 0:
		if n < 1 || n > *cur.CombinedMax {
			return nil, usage("%s: --channels %d out of range: combined channels 1..%d", iface, n, *cur.CombinedMax)
		}
		return &ethtoolnl.Channels{Combined: &v}, nil
	case u32(cur.RxMax) > 0 && u32(cur.TxMax) > 0:
		lim := min(*cur.RxMax, *cur.TxMax)
		if n < 1 || n > lim {
			return nil, usage("%s: --channels %d out of range: rx/tx channels 1..%d", iface, n, lim)
		}
		return &ethtoolnl.Channels{Rx: &v, Tx: &v}, nil
	}
	return nil, fmt.Errorf("%s: channel count cannot be changed: the driver reports no maximum: %w", iface, errors.ErrUnsupported)
}

func planRings(ctx context.Context, c ethtoolnl.Client, iface string, rx, tx *uint32) (*ethtoolnl.Rings, error) {
	cur, err := c.Rings(ctx, iface)
	if err != nil {
		return nil, err
	}
	check := func(name string, v *uint32, max *uint32) error {
		if v == nil {
			return nil
		}
		if max == nil || *max == 0 {
			return fmt.Errorf("%s: %s cannot be changed: not supported by this driver: %w", iface, name, errors.ErrUnsupported)
		}
		if *v < 1 || *v > *max {
			return usage("%s: %s %d out of range: 1..%d", iface, name, *v, *max)
		}
		return nil
	}
	if err := errors.Join(check("--rx-ring", rx, cur.RxMax), check("--tx-ring", tx, cur.TxMax)); err != nil {
		return nil, err
	}
	return &ethtoolnl.Rings{Rx: rx, Tx: tx}, nil
}

func planCoalesce(ctx context.Context, c ethtoolnl.Client, iface string, want ethtoolnl.Coalesce) error {
	cur, err := c.Coalesce(ctx, iface)
	if err != nil {
		return err
	}
	var miss []string
	for _, f := range []struct {
		name      string
		want, cur bool
	}{
		{"rx-usecs", want.RxUsecs != nil, cur.RxUsecs != nil}, {"rx-frames", want.RxFrames != nil, cur.RxFrames != nil},
		{"tx-usecs", want.TxUsecs != nil, cur.TxUsecs != nil}, {"tx-frames", want.TxFrames != nil, cur.TxFrames != nil},
		{"adaptive-rx", want.AdaptiveRx != nil, cur.AdaptiveRx != nil}, {"adaptive-tx", want.AdaptiveTx != nil, cur.AdaptiveTx != nil},
	} {
		if f.want && !f.cur {
			miss = append(miss, f.name)
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("%s: %s not supported by this driver: %w", iface, strings.Join(miss, ", "), errors.ErrUnsupported)
	}
	return nil
}

// ethtoolChange journals one ethtool SET. Values are JSON of the ethtoolnl
// struct holding only the fields being changed; Read projects the current
// state onto the same fields so that undo restores exactly those.
func ethtoolChange(c ethtoolnl.Client, kind, iface, value string) journal.Change {
	return journal.Change{
		Kind: kind, Target: iface, Device: iface, Value: value,
		Read:  func(ctx context.Context) (string, error) { return readEthtool(ctx, c, kind, iface, value) },
		Write: func(ctx context.Context, v string) error { return writeEthtool(ctx, c, kind, iface, v) },
	}
}

func readEthtool(ctx context.Context, c ethtoolnl.Client, kind, iface, shape string) (string, error) {
	var cur any
	var err error
	switch kind {
	case KindChannels:
		var want, got ethtoolnl.Channels
		json.Unmarshal([]byte(shape), &want)
		if got, err = c.Channels(ctx, iface); err == nil {
			cur = ethtoolnl.Channels{Rx: pick(want.Rx, got.Rx), Tx: pick(want.Tx, got.Tx), Other: pick(want.Other, got.Other), Combined: pick(want.Combined, got.Combined)}
		}
	case KindRings:
		var want, got ethtoolnl.Rings
		json.Unmarshal([]byte(shape), &want)
		if got, err = c.Rings(ctx, iface); err == nil {
			cur = ethtoolnl.Rings{Rx: pick(want.Rx, got.Rx), Tx: pick(want.Tx, got.Tx)}
		}
	case KindCoalesce:
		var want, got ethtoolnl.Coalesce
		json.Unmarshal([]byte(shape), &want)
		if got, err = c.Coalesce(ctx, iface); err == nil {
			cur = ethtoolnl.Coalesce{RxUsecs: pick(want.RxUsecs, got.RxUsecs), TxUsecs: pick(want.TxUsecs, got.TxUsecs),
				RxFrames: pick(want.RxFrames, got.RxFrames), TxFrames: pick(want.TxFrames, got.TxFrames),
				AdaptiveRx: pick(want.AdaptiveRx, got.AdaptiveRx), AdaptiveTx: pick(want.AdaptiveTx, got.AdaptiveTx)}
		}
	default:
		return "", fmt.Errorf("unknown ethtool kind %q", kind)
	}
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(cur)
	return string(b), err
}

// pick returns got where the wanted shape has the field.
func pick[T any](want, got *T) *T {
	if want == nil {
		return nil
	}
	return got
}

func writeEthtool(ctx context.Context, c ethtoolnl.Client, kind, iface, value string) error {
	dec := func(v any) error {
		if err := json.Unmarshal([]byte(value), v); err != nil {
			return fmt.Errorf("journal value for %s %s: %w", kind, iface, err)
		}
		return nil
	}
	switch kind {
	case KindChannels:
		var v ethtoolnl.Channels
		if err := dec(&v); err != nil {
			return err
		}
		return c.SetChannels(ctx, iface, v)
	case KindRings:
		var v ethtoolnl.Rings
		if err := dec(&v); err != nil {
			return err
		}
		return c.SetRings(ctx, iface, v)
	case KindCoalesce:
		var v ethtoolnl.Coalesce
		if err := dec(&v); err != nil {
			return err
		}
		return c.SetCoalesce(ctx, iface, v)
	}
	return fmt.Errorf("unknown ethtool kind %q", kind)
}

func holdIRQBalance(ctx context.Context, env *Env, j *journal.Journal) (*Change, error) {
	st, err := env.IRQBalance.State(ctx)
	if err != nil {
		return nil, err
	}
	if !st.Running {
		return &Change{What: "irqbalance", Previous: "stopped", Requested: "stopped", Effective: "stopped", Note: "not running: nothing to stop"}, nil
	}
	res, err := j.Apply(ctx, irqbalanceChange(env.IRQBalance))
	chg := &Change{What: "irqbalance", Previous: res.Previous, Requested: "stopped", Effective: res.Effective}
	if err != nil {
		chg.Err = err.Error()
	}
	return chg, err
}

func irqbalanceChange(b IRQBalancer) journal.Change {
	return journal.Change{
		Kind: KindIRQBalance, Target: "irqbalance", Value: "stopped",
		Read: func(ctx context.Context) (string, error) {
			st, err := b.State(ctx)
			if err != nil {
				return "", err
			}
			if st.Running {
				return "running", nil
			}
			return "stopped", nil
		},
		Write: func(ctx context.Context, v string) error {
			if v == "running" {
				return b.Start(ctx)
			}
			return b.Stop(ctx)
		},
	}
}

// Handlers returns the undo handlers for every kind nicctl journals. The
// ethtool client is opened only if an ethtool entry is undone, so that
// restoring sysfs entries needs no netlink. An ethtool entry made in
// another network namespace is refused with the command that restores it.
func Handlers(env *Env) journal.Handlers {
	myNS, _ := os.Readlink("/proc/self/ns/net")
	ethUndo := func(ctx context.Context, e journal.Entry) (string, error) {
		if e.NetNS != "" && myNS != "" && e.NetNS != myNS {
			return "", fmt.Errorf("%s was changed in network namespace %s, this process is in %s: run `ip netns exec NAME rig restore` in that namespace", e.Target, e.NetNS, myNS)
		}
		c, err := env.Ethtool()
		if err != nil {
			return "", err
		}
		if err := writeEthtool(ctx, c, e.Kind, e.Target, e.Previous); err != nil {
			return "", err
		}
		return readEthtool(ctx, c, e.Kind, e.Target, e.Previous)
	}
	hw := func(ctx context.Context, e journal.Entry) (string, error) {
		if e.NetNS != "" && myNS != "" && e.NetNS != myNS {
			return "", fmt.Errorf("%s was changed in network namespace %s, this process is in %s: run `ip netns exec NAME rig restore` in that namespace", e.Target, e.NetNS, myNS)
		}
		c := hwtstampChange(env.TSDevice(), e.Target, e.Previous)
		before := env.linkSnapshot(e.Target)
		aff := env.queueAffinity(e.Target)
		if err := c.Write(ctx, e.Previous); err != nil {
			return "", err
		}
		// Putting it back can reset the interface too (ENA): the next
		// command must not start on a link that is still down, and the
		// queue IRQs must keep the affinity they had.
		link, err := env.waitLink(ctx, e.Target, before)
		if err != nil {
			return "", err
		}
		note := ""
		if link != "" {
			note = env.keepAffinity(e.Target, aff)
		}
		v, err := c.Read(ctx)
		if strings.Contains(note, "WARNING") {
			v += " (" + strings.TrimPrefix(note, "; ") + ")"
		}
		return v, err
	}
	h := journal.Handlers{
		KindHWTstamp:      hw,
		journal.KindSysfs: journal.SysfsUndo(env.files(), env.FS.Root),
		journal.KindDir:   journal.DirUndo(env.FS, env.FS.Root),
		KindChannels:      ethUndo,
		KindRings:         ethUndo,
		KindCoalesce:      ethUndo,
		KindIRQSuspend:    napiUndo(env),
		KindIRQBalance: func(ctx context.Context, e journal.Entry) (string, error) {
			if env.IRQBalance == nil {
				return "", errors.New("no irqbalance controller")
			}
			if e.Previous != "running" {
				return e.Previous, nil
			}
			if err := env.IRQBalance.Start(ctx); err != nil {
				return "", err
			}
			return "running", nil
		},
	}
	return h
}
