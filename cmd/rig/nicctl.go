package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/nicctl"
)

func init() {
	register(&command{name: "nicctl", summary: "show or change (journaled, always undone) NIC queues, rings, coalescing, IRQ affinity", subs: []*command{
		{name: "show", summary: "print the NIC's queues, rings, coalescing, IRQs and their affinity, timestamping",
			usage: "IFACE [--format text|json] [--host-root DIR]", flags: nicctlShowFlags},
		{name: "set", summary: "change them, hold the change, then put everything back (--keep: until rig restore)",
			usage: nicctlSetUsage, flags: nicctlSetFlags},
		{name: "probe", summary: "switch hardware stamping on, send and watch a few datagrams: which stamps really come back",
			usage: "IFACE [--timestamps hardware|auto] [--listen DURATION] [--count N] [--format text|json] [--allow-mgmt] [--take-over-ptp]", flags: nicctlProbeFlags},
	}})
}

// ifaceArg is the one interface name, which may come before, between or
// after the flags (`set eth1 --channels 2`, `set --channels 2 eth1`).
func ifaceArg(fs *flag.FlagSet) (string, error) {
	switch fs.NArg() {
	case 0:
		return "", cli.Usagef("missing interface name")
	case 1:
		return fs.Arg(0), nil
	}
	return "", cli.Usagef("want one interface name, got %q", fs.Args())
}

func nicctlShowFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "", "text", "json")
	root := addHostRoot(fs)
	return func(ctx context.Context) error {
		iface, err := ifaceArg(fs)
		if err != nil {
			return err
		}
		env := nicctl.NewEnv(*root)
		defer env.Close()
		in, err := facts.Show(ctx, &env.NIC, iface)
		if err != nil {
			return err
		}
		if format.value == "json" {
			e := json.NewEncoder(os.Stdout)
			e.SetIndent("", "  ")
			return e.Encode(in)
		}
		in.WriteText(os.Stdout)
		return nil
	}
}

// optU32 is a flag that records whether it was given.
type optU32 struct{ v *uint32 }

func (o *optU32) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*o.v), 10)
}
func (o *optU32) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("%q is not a non-negative integer", s)
	}
	v := uint32(n)
	o.v = &v
	return nil
}

// optU64 is optU32 for 64-bit values (nanoseconds).
type optU64 struct{ v *uint64 }

func (o *optU64) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatUint(*o.v, 10)
}
func (o *optU64) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a non-negative integer", s)
	}
	o.v = &n
	return nil
}

type onOff struct{ v *bool }

func (o *onOff) String() string {
	if o.v == nil {
		return ""
	}
	return map[bool]string{true: "on", false: "off"}[*o.v]
}
func (o *onOff) Set(s string) error {
	var b bool
	switch s {
	case "on":
		b = true
	case "off":
	default:
		return fmt.Errorf("%q: want on or off", s)
	}
	o.v = &b
	return nil
}

type cpuFlag struct{ cpus []int }

func (c *cpuFlag) String() string { return cpulist.Format(c.cpus) }
func (c *cpuFlag) Set(s string) error {
	v, err := cpulist.Parse(s)
	if err == nil && len(v) == 0 {
		err = fmt.Errorf("empty CPU list")
	}
	c.cpus = v
	return err
}

const nicctlSetUsage = `IFACE [--irq-cpus LIST | --irq-cpu-per-queue LIST] [--rx-usecs N] [--tx-usecs N]
    [--rx-frames N] [--tx-frames N] [--adaptive-rx on|off] [--adaptive-tx on|off] [--rx-ring N] [--tx-ring N]
    [--channels N] [--napi-defer-hard-irqs N] [--gro-flush-timeout NS] [--irq-suspend-timeout NS] [--hwtstamp all|rx|ptp|off] [--hold-irqbalance] [--require-irq-affinity] [--allow-mgmt]
    [--take-over-ptp] [--for DURATION | --keep] [--host-root DIR]`

func nicctlSetFlags(fs *flag.FlagSet) func(context.Context) error {
	var s nicctl.Settings
	var irqCPUs, perQueue cpuFlag
	var rxUsecs, txUsecs, rxFrames, txFrames, rxRing, txRing, channels, deferIRQs optU32
	var groFlush, irqSuspend optU64
	var adaptive, adaptiveTx onOff
	fs.Var(&irqCPUs, "irq-cpus", "CPU `LIST` for every queue IRQ (e.g. 2-3)")
	fs.Var(&perQueue, "irq-cpu-per-queue", "CPU `LIST` assigned round-robin, one per queue (queue q → list[q mod n])")
	fs.Var(&rxUsecs, "rx-usecs", "RX interrupt moderation: `N` µs")
	fs.Var(&txUsecs, "tx-usecs", "TX interrupt moderation: `N` µs")
	fs.Var(&rxFrames, "rx-frames", "RX interrupt moderation: `N` frames")
	fs.Var(&txFrames, "tx-frames", "TX interrupt moderation: `N` frames")
	fs.Var(&adaptive, "adaptive-rx", "adaptive RX moderation: `on|off`")
	fs.Var(&adaptiveTx, "adaptive-tx", "adaptive TX moderation: `on|off`")
	fs.Var(&rxRing, "rx-ring", "RX ring size: `N` entries (drivers may round: the effective size is reported)")
	fs.Var(&txRing, "tx-ring", "TX ring size: `N` entries")
	fs.Var(&channels, "channels", "queue count: `N` (combined, or rx and tx where the driver has no combined)")
	fs.Var(&deferIRQs, "napi-defer-hard-irqs", "NAPI polls that may find nothing before the NIC's interrupts come back on: `N` (sysfs napi_defer_hard_irqs; prefer-busy-poll wants > 0)")
	fs.Var(&groFlush, "gro-flush-timeout", "`NS` the interrupts stay off while nothing polls (sysfs gro_flush_timeout; prefer-busy-poll wants > 0)")
	fs.Var(&irqSuspend, "irq-suspend-timeout", "`NS` the interrupts stay suspended while the application busy-polls, on every NAPI instance (netdev netlink napi-set, Linux 6.13+)")
	fs.BoolVar(&s.HoldIRQBalance, "hold-irqbalance", false, "stop irqbalance (systemd) while the change is held, start it again after")
	fs.BoolVar(&s.RequireIRQAffinity, "require-irq-affinity", false, "fail if any queue IRQ's affinity cannot be set (kernel-managed IRQs)")
	fs.BoolVar(&s.AllowMgmt, "allow-mgmt", false, "allow changing the interface that carries the default route")
	fs.BoolVar(&s.TakeOverPTP, "take-over-ptp", false, "allow --hwtstamp to change a config that ptp4l or chronyd owns")
	hold := fs.Duration("for", 0, "hold the change this long, then undo it (default: until Ctrl-C/SIGTERM)")
	keep := fs.Bool("keep", false, "leave the change in place and exit; the journal stays pending until rig restore puts it back")
	hwts := fs.String("hwtstamp", "", "HW timestamp config: all (TX on, RX all: what sender and responder need) | rx (RX all, TX as it is: what a capture needs, and all an RX-only NIC such as ENA takes); both written only when not already in force | ptp (TX on, RX PTPv2 events) | off")
	root := addHostRoot(fs)
	return func(ctx context.Context) error {
		iface, err := ifaceArg(fs)
		if err != nil {
			return err
		}
		if *hwts != "" {
			if _, ok := nicctl.HWTstampModes[*hwts]; !ok {
				return cli.Usagef("--hwtstamp %q: want all, rx, ptp or off", *hwts)
			}
			s.HWTstamp = *hwts
		}
		forGiven := false
		fs.Visit(func(f *flag.Flag) { forGiven = forGiven || f.Name == "for" })
		if forGiven && *hold <= 0 {
			return cli.Usagef("--for %v: want a positive duration such as 30s (without --for the change is held until Ctrl-C)", *hold)
		}
		if *keep && forGiven {
			return cli.Usagef("--keep and --for exclude each other")
		}
		s.IRQCPUs, s.IRQCPUPerQueue = irqCPUs.cpus, perQueue.cpus
		s.Coalesce = ethtoolnl.Coalesce{RxUsecs: rxUsecs.v, TxUsecs: txUsecs.v, RxFrames: rxFrames.v, TxFrames: txFrames.v, AdaptiveRx: adaptive.v, AdaptiveTx: adaptiveTx.v}
		s.RxRing, s.TxRing, s.Channels = rxRing.v, txRing.v, channels.v
		s.NAPI = facts.NAPIKnobs{DeferHardIRQs: deferIRQs.v, GROFlushTimeout: groFlush.v, IRQSuspendTimeout: irqSuspend.v}

		env := nicctl.NewEnv(*root)
		defer env.Close()
		// Held until the change is undone (or, with --keep, until exit: the
		// pending journal then stops every other changer).
		lock, err := journal.LockHost(journal.Dir(), journal.Self(""))
		if err != nil {
			return err
		}
		defer lock.Unlock()
		j, err := journal.Open(journal.Dir(), nicctl.Handlers(env))
		if err != nil {
			return err
		}
		defer j.Close()
		changes, setErr := nicctl.Set(ctx, env, j, iface, s)
		printChanges(changes)
		if setErr == nil && *keep {
			fmt.Printf("kept: run `rig restore` to put %s back (journal %s)\n", iface, j.Dir())
			return nil
		}
		if setErr == nil {
			if *hold > 0 {
				fmt.Printf("holding for %s (Ctrl-C to restore now)\n", *hold)
				t := time.NewTimer(*hold)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
			} else {
				fmt.Println("holding until Ctrl-C or SIGTERM")
				<-ctx.Done()
			}
		}
		// Undo on every path: success after the hold, error, signal.
		restored, uerr := j.Undo(context.WithoutCancel(ctx))
		printRestored(restored)
		return errors.Join(setErr, uerr)
	}
}

// nicctlProbe is the hardware self-test: switch stamping on as a run would
// (journaled, put back before it exits), send a few datagrams, watch what
// arrives, and say which stamps really came back.
func nicctlProbeFlags(fs *flag.FlagSet) func(context.Context) error {
	ts := fs.String("timestamps", "auto", "auto (report what the NIC gives) | hardware (fail unless hardware RX and TX stamps arrive)")
	listen := fs.Duration("listen", 2*time.Second, "how long to watch received frames (send traffic to the interface meanwhile to verify RX)")
	count := fs.Int("count", 8, "datagrams to send (to 239.255.0.99:9, TTL 1) for the TX stamps")
	format := addFormat(fs, "", "text", "json")
	allowMgmt := fs.Bool("allow-mgmt", false, "allow switching stamping on on the interface that carries the default route")
	takeOver := fs.Bool("take-over-ptp", false, "allow changing a config that ptp4l or chronyd owns")
	return func(ctx context.Context) error {
		iface, err := ifaceArg(fs)
		if err != nil {
			return err
		}
		mode, err := tstamp.ParseMode(*ts)
		if err != nil || (mode != tstamp.Auto && mode != tstamp.Hardware) {
			return cli.Usagef("--timestamps %q: want auto or hardware", *ts)
		}
		if *listen <= 0 || *count <= 0 || *count > 1000 {
			return cli.Usagef("--listen must be positive and --count 1..1000")
		}
		env := nicctl.NewEnv(hostfs.Default())
		defer env.Close()
		lock, err := journal.LockHost(journal.Dir(), journal.Self(""))
		if err != nil {
			return err
		}
		defer lock.Unlock()
		lane := journal.LaneDir(journal.Dir(), "probe-"+strconv.Itoa(os.Getpid()))
		j, err := journal.Open(lane, nicctl.Handlers(env))
		if err != nil {
			return err
		}
		rep, perr := nicctl.Probe(ctx, env, j, iface, nicctl.ProbeOptions{Mode: mode, AllowMgmt: *allowMgmt, TakeOver: *takeOver, Count: *count, Listen: *listen})
		restored, uerr := j.Undo(context.WithoutCancel(ctx))
		j.Close()
		if uerr == nil {
			os.RemoveAll(lane)
		}
		if rep != nil {
			if format.value == "json" {
				e := json.NewEncoder(os.Stdout)
				e.SetIndent("", "  ")
				if err := e.Encode(rep); err != nil {
					return err
				}
			} else {
				rep.WriteText(os.Stdout)
				printRestored(restored)
			}
		}
		return errors.Join(perr, uerr)
	}
}

func printChanges(cs []nicctl.Change) {
	if len(cs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tPREVIOUS\tREQUESTED\tEFFECTIVE\tNOTE")
	for _, c := range cs {
		note := c.Note
		if c.Err != "" {
			note = "ERROR: " + c.Err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.What, c.Previous, c.Requested, c.Effective, note)
	}
	tw.Flush()
}

func printRestored(rs []journal.Restored) {
	for _, r := range rs {
		if r.Err != nil {
			fmt.Printf("NOT restored: %v\n", r.Err)
			continue
		}
		fmt.Printf("restored %s %s = %s (was set to %s)\n", r.Entry.Kind, r.Entry.Target, r.Restored, r.Entry.Applied)
	}
}
