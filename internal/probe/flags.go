package probe

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/internal/wire"
)

// DefaultGroup is --group's default: the multicast group:port of requests.
var DefaultGroup = netip.MustParseAddrPort("239.1.1.1:9000")

// Common is the part of the command line every probe takes.
//
// The fields hold typed values, which Register binds to the flags
// (flag.TextVar for the typed ones, so a bad value is refused with the
// flag's name); Parse then checks what one flag cannot check alone.
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
	fs.TextVar((*group)(&c.Group), "group", group(d.Group), "request multicast group:port")
	fs.TextVar((*unicastAddr)(&c.Unicast), unicast, unicastAddr(d.Unicast), unicastUsage)
	fs.TextVar(&c.Timestamps, "timestamps", d.Timestamps, "hardware | software | auto | off: NIC stamps, kernel stamps, the best granted, or none (user-space clock only, to measure what the kernel's stamping adds; not for capture)")
	fs.StringVar(&c.Out, "out", d.Out, "write the per-request sample file here")
	fs.TextVar((*runID)(&c.RunID), "run-id", runID(d.RunID), "1 to 16 hex digits: the run every packet carries; respond and capture accept only it and require it, send picks a random one when it is left out and prints it")
	fs.StringVar(&c.Arm, "arm", d.Arm, "arm name recorded in the sample file")
	fs.IntVar(&c.ArmIndex, "arm-index", d.ArmIndex, "arm index carried in every packet")
	fs.IntVar(&c.Round, "round", d.Round, "round index carried in every packet")
	fs.TextVar((*nicTimestamping)(&c.LeaveNIC), "nic-timestamping", nicTimestamping(d.LeaveNIC), "enable: with --timestamps hardware|auto, switch the NIC's hardware stamping on where it is off (journaled, put back on exit; rig restore after a crash) | leave: never change the NIC's config (rig run's probes: the run set it up)")
	fs.BoolVar(&c.AllowMgmt, "allow-mgmt", d.AllowMgmt, "let --nic-timestamping enable change the interface that carries the default route")
	fs.BoolVar(&c.TakeOverPTP, "take-over-ptp", d.TakeOverPTP, "let --nic-timestamping enable change a config that ptp4l or chronyd owns, and the socket take hardware TX stamps next to it")
	fs.DurationVar(&c.MaxDuration, "max-duration", d.MaxDuration, "end by itself after this long even if nobody stops it, writing its file and exiting 1 (rig run passes the round's length plus slack; 0: no limit)")
}

// parse settles where requests go after fs.Parse: a unicast destination
// (--to or --listen, named unicast) replaces the default group, and
// excludes a group given as well.
func (c *Common) parse(fs *flag.FlagSet, unicast string) error {
	if c.Unicast.IsValid() {
		if given(fs, "group") && c.Group.IsValid() {
			return fmt.Errorf("--group and --%s exclude each other: --group %s sends multicast requests, --%s %s unicast ones; give one", unicast, c.Group, unicast, c.Unicast)
		}
		c.Group = netip.AddrPort{}
	}
	return nil
}

// check checks the common values (each probe's Check).
func (c Common) check() error {
	if c.Iface == "" {
		return errors.New("--iface is required (e.g. --iface ens5)")
	}
	if c.MaxDuration < 0 {
		return fmt.Errorf("--max-duration %v: want a positive duration (or 0 for no limit)", c.MaxDuration)
	}
	return CheckDest(c.Group, c.Unicast)
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
	var h samples.Header
	h.SetRequests(c.Group, c.Unicast)
	return h.Requests()
}

// Header is the part of a sample file's header every probe fills alike:
// versions, role, run, arm, round, host, interface, start, and where the
// requests went.
func (c Common) Header(role samples.Role, runID uint64, arm, round int, host string, started time.Time) samples.Header {
	h := samples.Header{WireVersion: wire.Version, RigVersion: version.String(), Role: role, RunID: wire.FormatRunID(runID),
		Arm: c.Arm, ArmIndex: arm, Round: round, Host: host, Iface: c.Iface, StartedAt: samples.Time(started)}
	h.SetRequests(c.Group, c.Unicast)
	return h
}

// Host checks what the command line names on this host before a socket
// opens — cpu (-1: none) and the interface — and returns the interface.
func (c Common) Host(cpu int) (*net.Interface, error) {
	if cpu >= 0 {
		if err := cpusched.CheckCPU(hostfs.Default(), cpu); err != nil {
			return nil, err
		}
	}
	ifi, err := net.InterfaceByName(c.Iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w (list them with `ip link`)", c.Iface, os.ErrNotExist)
	}
	return ifi, nil
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

// Ended is a probe's outcome once its loop returned runErr: an error when
// ctx (from Bound) ended at MaxDuration, else runErr unless ctx ended it.
func (c Common) Ended(ctx context.Context, runErr error) error {
	if errors.Is(context.Cause(ctx), errMaxDuration) {
		return fmt.Errorf("stopped after --max-duration %v: nobody stopped it before (was its controller lost?)", c.MaxDuration)
	}
	if ctx.Err() != nil {
		return nil
	}
	return runErr
}

// requireRunID refuses a respond or capture without --run-id: adopting the
// first run seen let one stray datagram before the sender take the round.
func requireRunID(cmd string, runID uint64) error {
	if runID == 0 {
		return fmt.Errorf("--run-id is required: the sender's run id (e.g. RUN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '), then --run-id $RUN for rig %s and rig send; rig send prints the one it uses)", cmd)
	}
	return nil
}

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// args is v's command line: the flags register defines, bound to a copy
// of v, that differ from their defaults (cli.Args).
func args[T any](v T, register func(*T, *flag.FlagSet)) []string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	p := new(T)
	register(p, fs) // sets *p to the defaults
	*p = v
	return cli.Args(fs)
}
