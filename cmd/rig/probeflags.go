package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/responder"
)

// probeFlags are the flags shared by respond, send and capture.
type probeFlags struct {
	iface, group, timestamps, out, runID, arm string
	armIndex, round                           int
	// nicTS is --nic-timestamping: enable or leave the NIC's config.
	nicTS                  string
	allowMgmt, takeOverPTP bool
	maxDuration            time.Duration

	// unicast is where unicast requests go (--to) or arrive (--listen),
	// set by parse when the command registered that flag and it was given.
	unicast unicastFlag
	fs      *flag.FlagSet
}

func (p *probeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.iface, "iface", "", "network interface (required), e.g. ens5 or the lab's veth")
	fs.StringVar(&p.group, "group", "239.1.1.1:9000", "request multicast group:port")
	p.fs = fs
	fs.StringVar(&p.timestamps, "timestamps", "auto", "hardware | software | auto | off: NIC stamps, kernel stamps, the best granted, or none (user-space clock only, to measure what the kernel's stamping adds; not for capture)")
	fs.StringVar(&p.out, "out", "", "write the per-request sample file here")
	fs.StringVar(&p.runID, "run-id", "", "1 to 16 hex digits: the run every packet carries; respond and capture accept only it and require it, send picks a random one when it is left out and prints it")
	fs.StringVar(&p.arm, "arm", "", "arm name recorded in the sample file")
	fs.IntVar(&p.armIndex, "arm-index", 0, "arm index carried in every packet")
	fs.IntVar(&p.round, "round", 0, "round index carried in every packet")
	fs.StringVar(&p.nicTS, "nic-timestamping", "enable", "enable: with --timestamps hardware|auto, switch the NIC's hardware stamping on where it is off (journaled, put back on exit; rig restore after a crash) | leave: never change the NIC's config (rig run's probes: the run set it up)")
	fs.BoolVar(&p.allowMgmt, "allow-mgmt", false, "let --nic-timestamping enable change the interface that carries the default route")
	fs.BoolVar(&p.takeOverPTP, "take-over-ptp", false, "let --nic-timestamping enable change a config that ptp4l or chronyd owns")
	fs.DurationVar(&p.maxDuration, "max-duration", 0, "end by itself after this long even if nobody stops it, writing its file and exiting 1 (rig run passes the round's length plus slack; 0: no limit)")
}

// errMaxDuration is the cause of a context ended by --max-duration.
var errMaxDuration = errors.New("--max-duration reached")

// bound limits ctx to --max-duration: a probe whose controller is gone
// still ends, and its CPU is free again.
func (p *probeFlags) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.maxDuration <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, p.maxDuration, errMaxDuration)
}

// expired returns an error when ctx ended at --max-duration.
func (p *probeFlags) expired(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errMaxDuration) {
		return fmt.Errorf("stopped after --max-duration %v: nobody stopped it before (was its controller lost?)", p.maxDuration)
	}
	return nil
}

func (p *probeFlags) parse() (group netip.AddrPort, mode tstamp.Mode, runID uint64, err error) {
	if p.iface == "" {
		return group, mode, 0, usagef("--iface is required (e.g. --iface ens5)")
	}
	if p.maxDuration < 0 {
		return group, mode, 0, usagef("--max-duration %v: want a positive duration (or 0 for no limit)", p.maxDuration)
	}
	if p.unicast.name != "" && p.unicast.value != "" {
		if p.given("group") {
			return group, mode, 0, usagef("--group and --%s exclude each other: --group %s sends multicast requests, --%s %s unicast ones; give one", p.unicast.name, p.group, p.unicast.name, p.unicast.value)
		}
		if err := p.unicast.parse(); err != nil {
			return group, mode, 0, err
		}
	} else {
		group, err = netip.ParseAddrPort(p.group)
		if err != nil || !group.Addr().Is4() || !group.Addr().IsMulticast() || group.Port() == 0 {
			return group, mode, 0, usagef("--group %q: want an IPv4 multicast group:port such as 239.1.1.1:9000", p.group)
		}
	}
	if mode, err = tstamp.ParseMode(p.timestamps); err != nil {
		return group, mode, 0, usageError{err}
	}
	if p.nicTS != "enable" && p.nicTS != "leave" {
		return group, mode, 0, usagef("--nic-timestamping %q: want enable or leave", p.nicTS)
	}
	if p.runID != "" {
		if runID, err = wire.ParseRunID(p.runID); err != nil {
			return group, mode, 0, usageError{err}
		}
	}
	return group, mode, runID, nil
}

// requireRunID refuses a respond or capture without --run-id: adopting the
// first run seen let one stray datagram before the sender take the round.
func requireRunID(cmd string, runID uint64) error {
	if runID == 0 {
		return usagef("--run-id is required: the sender's run id (e.g. RUN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '), then --run-id $RUN for rig %s and rig send; rig send prints the one it uses)", cmd)
	}
	return nil
}

func parseSched(s string) (cpusched.Sched, error) {
	sc, err := cpusched.ParseSched(s)
	if err != nil {
		return sc, usageError{err}
	}
	return sc, nil
}

// parseReply parses --reply: "unicast" or a multicast group:port.
func parseReply(s string) (netip.AddrPort, error) {
	if s == "" || s == "unicast" {
		return netip.AddrPort{}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
		return ap, usagef("--reply %q: want unicast or an IPv4 multicast group:port such as 239.1.1.2:9001", s)
	}
	return ap, nil
}

// setupError marks a probe's setup error that is bad input (unknown
// interface, CPU, no hardware stamps where demanded) as a usage error.
func setupError(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, errors.ErrUnsupported):
		return usageError{err}
	case errors.Is(err, os.ErrPermission):
		if !strings.Contains(err.Error(), "CAP_") {
			err = fmt.Errorf("%w (needs root or CAP_NET_RAW/CAP_NET_ADMIN)", err)
		}
	}
	return err
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// given reports whether the flag name was set on the command line.
func (p *probeFlags) given(name string) bool {
	set := false
	p.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// unicastFlag is --to (send, capture: where unicast requests go) or
// --listen (respond: the address and port they arrive at).
type unicastFlag struct {
	name, value string
	addr        netip.AddrPort
}

// registerUnicast adds --to or --listen to fs.
func (p *probeFlags) registerUnicast(fs *flag.FlagSet, name, usage string) {
	p.unicast.name = name
	fs.StringVar(&p.unicast.value, name, "", usage)
}

func (u *unicastFlag) parse() error {
	ap, err := netip.ParseAddrPort(u.value)
	if err == nil {
		err = responder.CheckUnicast(ap)
	}
	if err != nil {
		return usagef("--%s %q: want the responder's IPv4 address:port such as 10.0.0.2:9000 (%v)", u.name, u.value, err)
	}
	u.addr = ap
	return nil
}

// dest is where requests go: the multicast group, or the unicast address
// when --to/--listen was given.
func (p *probeFlags) dest(group netip.AddrPort) netip.AddrPort {
	if p.unicast.addr.IsValid() {
		return p.unicast.addr
	}
	return group
}

// requests describes the destination for log lines, as the tables do.
func (p *probeFlags) requests(group netip.AddrPort) string {
	if p.unicast.addr.IsValid() {
		return "unicast to " + p.unicast.addr.String()
	}
	return "multicast " + group.String()
}
