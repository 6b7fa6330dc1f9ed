package responder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/reflector"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// Reflect is the reflector engine (--engine xdp, xdp-generic or tc): a
// BPF program answers in the driver (or at tc ingress) (docs/probes.md#reflector-floor). It takes
// no stamps — nothing in user space sees a request — so its sample file
// holds counts only: the arm's turnaround is the capture's, on the wire.
type Reflect struct {
	cfg     probe.Respond
	opt     Options
	r       *reflector.Reflector
	p       reflector.Params
	mode    reflector.Mode
	group   *tstamp.Conn // a socket holding the group's membership (nil: none)
	cnt     samples.Counters
	started time.Time
	stopped string
}

// NewReflect checks cfg as New does, then loads the program for cfg and
// attaches it to cfg.Iface: driver mode for EngineXDP, generic for
// EngineXDPGeneric, tc ingress for EngineTC. A multicast group is joined, as the Go engine's socket
// joins it, so that the NIC's filter lets its requests in.
func NewReflect(cfg probe.Respond, o Options) (*Reflect, error) {
	ifi, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	e := &Reflect{cfg: cfg, opt: o, mode: reflector.Driver}
	var hook reflector.Hook
	switch cfg.Engine {
	case probe.EngineXDPGeneric:
		e.mode = reflector.Generic
	case probe.EngineTC:
		e.mode, hook.TCIfindex = reflector.TC, ifi.Index
	}
	if e.p, err = reflectParams(cfg, ifi); err != nil {
		return nil, err
	}
	if e.r, err = reflector.Load(e.p, hook); err != nil {
		return nil, err
	}
	if cfg.Group.IsValid() {
		if err := e.join(ifi.Index); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.r.Attach(cfg.Iface, ifi.Index, e.mode); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// reflectParams are the program's for cfg on ifi: replies from the
// address the Go engine's socket replies from — --listen's, else the
// interface's only IPv4 address — with its socket's TTL.
func reflectParams(cfg probe.Respond, ifi *net.Interface) (reflector.Params, error) {
	p := reflector.Params{To: cfg.Group, Reply: cfg.Reply, FromMAC: ifi.HardwareAddr, TTL: 1,
		RunID: cfg.RunID, Arm: uint32(cfg.ArmIndex), Round: uint32(cfg.Round), ID: uint32(cfg.ID)}
	if cfg.Unicast.IsValid() {
		p.To, p.From = cfg.Unicast, cfg.Unicast.Addr()
	} else {
		as, err := facts.IPv4Addrs(cfg.Iface)
		if err != nil {
			return p, err
		}
		if len(as) != 1 {
			return p, fmt.Errorf("%s has %d IPv4 addresses (%s): the reflector replies from one fixed address, the interface's only one (give %s one, or take unicast requests with --listen ADDR:PORT): %w", cfg.Iface, len(as), facts.AddrList(as), cfg.Iface, errors.ErrUnsupported)
		}
		p.From = as[0]
	}
	if !cfg.Reply.IsValid() {
		b, err := os.ReadFile("/proc/sys/net/ipv4/ip_default_ttl")
		ttl, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || ttl < 1 || ttl > 255 {
			return p, fmt.Errorf("the unicast replies' TTL (net.ipv4.ip_default_ttl): cannot read it: %v %v", err, perr)
		}
		p.TTL = uint8(ttl)
	}
	return p, nil
}

// join opens a socket only to hold the group's membership on ifindex
// (bound to an ephemeral port: it receives none of the requests).
func (e *Reflect) join(ifindex int) error {
	c, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), tstamp.UDPOptions{})
	if err != nil {
		return fmt.Errorf("a socket to join %v: %w", e.cfg.Group.Addr(), err)
	}
	e.group = c
	if err := c.JoinGroup(e.cfg.Group.Addr(), ifindex); err != nil {
		return fmt.Errorf("joining %v on %s: %w", e.cfg.Group.Addr(), e.cfg.Iface, err)
	}
	return nil
}

// Mode is where the program runs: driver, generic or tc.
func (e *Reflect) Mode() string { return e.mode.String() }

// Granted: no socket, no stamps.
func (e *Reflect) Granted() tstamp.Granted { return tstamp.Granted{Mode: tstamp.Off} }

// ThreadID is 0: no thread answers.
func (e *Reflect) ThreadID() int { return 0 }

// Thread is nil: no thread answers.
func (e *Reflect) Thread() *samples.ThreadUsage { return nil }

// countPoll is how often Run reads the counters to honour --count: the
// program has nothing to wake a process with.
const countPoll = time.Millisecond

// Run waits until ctx is done, or the program has answered --count
// requests, with the program attached; then reads its counters.
func (e *Reflect) Run(ctx context.Context) error {
	e.started = time.Now()
	if e.opt.Ready != nil {
		e.opt.Ready()
	}
	var wait <-chan time.Time
	if e.cfg.Count > 0 {
		tick := time.NewTicker(countPoll)
		defer tick.Stop()
		wait = tick.C
	}
	for {
		select {
		case <-ctx.Done():
			e.stopped = samples.StoppedInterrupted + context.Cause(ctx).Error()
			return e.count()
		case <-wait:
			if err := e.count(); err != nil || e.cnt.Sent >= uint64(e.cfg.Count) {
				return err
			}
		}
	}
}

// count reads the program's counters: every request it matched it answered.
func (e *Reflect) count() error {
	answered, passed, err := e.r.Counts()
	if err != nil {
		return err
	}
	e.cnt.Received, e.cnt.Sent, e.cnt.Foreign = answered, answered, passed
	return nil
}

// Counters are the program's: answered (Received and Sent), and what came
// to the port unanswered (Foreign). It does not see duplicates.
func (e *Reflect) Counters() samples.Counters { return e.cnt }

// Header describes the reflector's sample file: no clocks, and where the
// program ran.
func (e *Reflect) Header(arm, round int) samples.Header {
	h := header(e.cfg, e.opt.Host, e.Granted(), nil, e.started, arm, round, map[string]any{
		"engine": e.cfg.Engine.String(), "attach": e.mode.String(), "reply_from": netip.AddrPortFrom(e.p.From, e.p.To.Port()).String(),
		"timestamps": "none: the program takes no stamps; the arm's turnaround is the capture's, on the wire",
		"cpu":        "the NIC queue's interrupt CPU", "poll": "none (runs per frame in the driver)", "sched": "softirq",
		"udp_checksum": "0 (none, as IPv4 allows)",
	})
	h.Clocks = map[string]samples.Clock{}
	// A file lists columns; without the user stamps' (whose clock needs
	// none in the header) and with no clocks, none is a turnaround source.
	for _, c := range samples.ColumnsFor(samples.RoleResponder) {
		if c != samples.ReqRxUser && c != samples.RepTxUser {
			h.Columns = append(h.Columns, c.String())
		}
	}
	return h
}

// WriteFile writes the reflector's sample file: counts, no records.
func (e *Reflect) WriteFile(path string, arm, round int) error {
	return samples.WriteFile(path, e.Header(arm, round), nil, samples.Footer{
		Counters: e.cnt, EndedAt: samples.Time(time.Now()), Stopped: e.stopped,
	})
}

// Close detaches the program and leaves the group.
func (e *Reflect) Close() error {
	if e.group != nil {
		e.group.Close()
		e.group = nil
	}
	if e.r == nil {
		return nil
	}
	err := e.r.Close()
	e.r = nil
	return err
}
