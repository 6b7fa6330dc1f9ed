package probe

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// DefaultGroup is --group's default: the multicast group:port of requests.
var DefaultGroup = netip.MustParseAddrPort("239.1.1.1:9000")

// Common is the part of the command line every probe takes.
//
// The fields hold typed values. Register defines the flags on a FlagSet:
// the plain ones (strings, numbers, durations, booleans) straight into the
// fields, the typed ones as text that Parse then reads with the one parser
// of each (so that a bad value gets the message below, with the flag's
// name, not the flag package's usage dump).
type Common struct {
	Iface string // --iface (required)
	// Group is --group, where multicast requests go; zero when Unicast is
	// set (the two exclude each other).
	Group netip.AddrPort
	// Unicast is where unicast requests go: the responder's IPv4
	// address:port, --to for the sender and the capture, --listen for the
	// responder. Zero: multicast requests to Group.
	Unicast    netip.AddrPort
	Timestamps tstamp.Mode // --timestamps
	Out        string      // --out: the sample file ("": none)
	RunID      uint64      // --run-id (0: not given)
	Arm        string      // --arm
	ArmIndex   int         // --arm-index
	Round      int         // --round
	// LeaveNIC is --nic-timestamping leave: never change the NIC's
	// timestamping config (false: enable, where the probe needs it).
	LeaveNIC    bool
	AllowMgmt   bool          // --allow-mgmt
	TakeOverPTP bool          // --take-over-ptp
	MaxDuration time.Duration // --max-duration (0: no limit)
}

func defaultCommon() Common { return Common{Group: DefaultGroup} }

// register defines the common flags on fs, with unicast (--to or --listen)
// described by unicastUsage.
func (c *Common) register(fs *flag.FlagSet, unicast, unicastUsage string) {
	d := defaultCommon()
	fs.StringVar(&c.Iface, "iface", d.Iface, "network interface (required), e.g. ens5 or the lab's veth")
	fs.String("group", d.Group.String(), "request multicast group:port")
	fs.String(unicast, "", unicastUsage)
	fs.String("timestamps", d.Timestamps.String(), "hardware | software | auto | off: NIC stamps, kernel stamps, the best granted, or none (user-space clock only, to measure what the kernel's stamping adds; not for capture)")
	fs.StringVar(&c.Out, "out", d.Out, "write the per-request sample file here")
	fs.String("run-id", "", "1 to 16 hex digits: the run every packet carries; respond and capture accept only it and require it, send picks a random one when it is left out and prints it")
	fs.StringVar(&c.Arm, "arm", d.Arm, "arm name recorded in the sample file")
	fs.IntVar(&c.ArmIndex, "arm-index", d.ArmIndex, "arm index carried in every packet")
	fs.IntVar(&c.Round, "round", d.Round, "round index carried in every packet")
	fs.String("nic-timestamping", nicTimestamping(d.LeaveNIC), "enable: with --timestamps hardware|auto, switch the NIC's hardware stamping on where it is off (journaled, put back on exit; rig restore after a crash) | leave: never change the NIC's config (rig run's probes: the run set it up)")
	fs.BoolVar(&c.AllowMgmt, "allow-mgmt", d.AllowMgmt, "let --nic-timestamping enable change the interface that carries the default route")
	fs.BoolVar(&c.TakeOverPTP, "take-over-ptp", d.TakeOverPTP, "let --nic-timestamping enable change a config that ptp4l or chronyd owns, and the socket take hardware TX stamps next to it")
	fs.DurationVar(&c.MaxDuration, "max-duration", d.MaxDuration, "end by itself after this long even if nobody stops it, writing its file and exiting 1 (rig run passes the round's length plus slack; 0: no limit)")
}

func nicTimestamping(leave bool) string {
	if leave {
		return "leave"
	}
	return "enable"
}

// parse reads the common typed flags from fs and checks them.
func (c *Common) parse(fs *flag.FlagSet, unicast string) error {
	if c.Iface == "" {
		return errors.New("--iface is required (e.g. --iface ens5)")
	}
	if c.MaxDuration < 0 {
		return fmt.Errorf("--max-duration %v: want a positive duration (or 0 for no limit)", c.MaxDuration)
	}
	c.Group, c.Unicast = netip.AddrPort{}, netip.AddrPort{}
	if u := text(fs, unicast); u != "" {
		if given(fs, "group") {
			return fmt.Errorf("--group and --%s exclude each other: --group %s sends multicast requests, --%s %s unicast ones; give one", unicast, text(fs, "group"), unicast, u)
		}
		ap, err := netip.ParseAddrPort(u)
		if err == nil {
			err = CheckUnicast(ap)
		}
		if err != nil {
			return fmt.Errorf("--%s %q: want the responder's IPv4 address:port such as 10.0.0.2:9000 (%v)", unicast, u, err)
		}
		c.Unicast = ap
	} else {
		g, err := parseGroup(text(fs, "group"))
		if err != nil {
			return fmt.Errorf("--group %q: want an IPv4 multicast group:port such as 239.1.1.1:9000", text(fs, "group"))
		}
		c.Group = g
	}
	var err error
	if c.Timestamps, err = tstamp.ParseMode(text(fs, "timestamps")); err != nil {
		return err
	}
	switch v := text(fs, "nic-timestamping"); v {
	case "enable", "leave":
		c.LeaveNIC = v == "leave"
	default:
		return fmt.Errorf("--nic-timestamping %q: want enable or leave", v)
	}
	c.RunID = 0
	if v := text(fs, "run-id"); v != "" {
		if c.RunID, err = wire.ParseRunID(v); err != nil {
			return err
		}
	}
	return nil
}

// args is the command line of the common flags.
func (c Common) args(a *argv, unicast string) {
	a.str("iface", c.Iface)
	if c.Unicast.IsValid() {
		a.str(unicast, c.Unicast.String())
	} else {
		a.str("group", c.Group.String())
	}
	a.str("timestamps", c.Timestamps.String())
	a.opt("out", c.Out)
	if c.RunID != 0 {
		a.str("run-id", wire.FormatRunID(c.RunID))
	}
	a.opt("arm", c.Arm)
	a.int("arm-index", c.ArmIndex)
	a.int("round", c.Round)
	a.str("nic-timestamping", nicTimestamping(c.LeaveNIC))
	a.flag("allow-mgmt", c.AllowMgmt)
	a.flag("take-over-ptp", c.TakeOverPTP)
	a.dur("max-duration", c.MaxDuration)
}

// Dest is where requests go: Unicast when set, else Group.
func (c Common) Dest() netip.AddrPort {
	if c.Unicast.IsValid() {
		return c.Unicast
	}
	return c.Group
}

// Requests describes the destination for log lines, as the tables do.
func (c Common) Requests() string {
	if c.Unicast.IsValid() {
		return "unicast to " + c.Unicast.String()
	}
	return "multicast " + c.Group.String()
}

// errMaxDuration is the cause of a context ended by --max-duration.
var errMaxDuration = errors.New("--max-duration reached")

// Bound limits ctx to MaxDuration: a probe whose controller is gone
// still ends, and its CPU is free again.
func (c Common) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.MaxDuration <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, c.MaxDuration, errMaxDuration)
}

// Expired returns an error when ctx (from Bound) ended at MaxDuration.
func (c Common) Expired(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errMaxDuration) {
		return fmt.Errorf("stopped after --max-duration %v: nobody stopped it before (was its controller lost?)", c.MaxDuration)
	}
	return nil
}

// requireRunID refuses a respond or capture without --run-id: adopting the
// first run seen let one stray datagram before the sender take the round.
func requireRunID(cmd string, runID uint64) error {
	if runID == 0 {
		return fmt.Errorf("--run-id is required: the sender's run id (e.g. RUN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '), then --run-id $RUN for rig %s and rig send; rig send prints the one it uses)", cmd)
	}
	return nil
}

// parseGroup parses an IPv4 multicast group:port.
func parseGroup(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, err
	}
	if !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
		return ap, fmt.Errorf("%s is not an IPv4 multicast group:port", s)
	}
	return ap, nil
}

// text is the text of flag name, which Register defined on fs.
func text(fs *flag.FlagSet, name string) string {
	f := fs.Lookup(name)
	if f == nil {
		panic("probe: flag --" + name + " is not defined on " + fs.Name() + ": Parse needs the FlagSet Register defined the flags on")
	}
	return f.Value.String()
}

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// argv builds a command line, one "--name value" pair per flag.
type argv []string

func (a *argv) str(name, v string)               { *a = append(*a, "--"+name, v) }
func (a *argv) int(name string, v int)           { a.str(name, strconv.Itoa(v)) }
func (a *argv) dur(name string, d time.Duration) { a.str(name, d.String()) }

// opt writes a string flag whose default is "" only when it is set.
func (a *argv) opt(name, v string) {
	if v != "" {
		a.str(name, v)
	}
}

// flag writes a boolean flag (default false) when it is true.
func (a *argv) flag(name string, v bool) {
	if v {
		*a = append(*a, "--"+name)
	}
}
