package sender

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/responder"
)

// TestUnicastRoundTrip: requests sent to the responder's own address (no
// group anywhere) are all answered, one send does not allocate, and both
// sample headers say where the requests went.
func TestUnicastRoundTrip(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	to := netip.AddrPortFrom(topo.Responder.Addr, 9303)
	ready := make(chan error, 1)
	rspDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rh samples.Header
	go func() {
		rspDone <- topo.Do(netlab.Responder, func() error {
			rc := probe.DefaultRespond()
			rc.Iface, rc.Group, rc.Unicast, rc.Timestamps, rc.Capacity, rc.RunID = topo.Responder.Interface, netip.AddrPort{}, to, tstamp.Software, 2000, 77
			r, err := responder.New(rc, responder.Options{})
			if err != nil {
				ready <- err
				return err
			}
			defer r.Close()
			ready <- nil
			err = r.Run(ctx)
			rh = r.Header(0, 0)
			return err
		})
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	const count = 400
	var sh samples.Header
	err := topo.Do(netlab.Sender, func() error {
		s, err := New(config(topo.Sender.Interface, func(c *probe.Send) {
			c.Group, c.Unicast, c.Port, c.Count, c.RunID, c.Interval, c.Spin = netip.AddrPort{}, to, int(to.Port()), count, 77, 500*time.Microsecond, 0
			c.Timestamps, c.ReplyTimeout, c.TxWait = tstamp.Software, 200*time.Millisecond, 100*time.Millisecond
		}), Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		if s.dst != to {
			t.Errorf("destination %v, want %v", s.dst, to)
		}
		if err := s.Run(context.Background()); err != nil {
			return err
		}
		if c := s.Counters(); c.Sent != count || c.Received != count || c.Lost != 0 {
			t.Errorf("counters %+v: want all %d answered", c, count)
		}
		for _, r := range s.Records() {
			if r.T[samples.RxSW] == 0 || r.T[samples.TxSW] == 0 {
				t.Fatalf("seq %d lacks software stamps: %+v", r.Seq, r.T)
			}
		}
		sh = s.Header()
		// One more send, to the same address, must not allocate.
		s.sched = NewSchedule(time.Now(), time.Microsecond)
		s.cfg.Count = 200
		s.allocate()
		k := uint64(0)
		if a := testing.AllocsPerRun(100, func() { s.sendNow(k); k++ }); a != 0 {
			t.Errorf("one unicast send allocated %v times", a)
		}
		return nil
	})
	cancel()
	if rerr := <-rspDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
		t.Errorf("responder: %v", rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []samples.Header{sh, rh} {
		if h.Requests() != "unicast to "+to.String() || h.Group != "" {
			t.Errorf("%s header: requests %q, group %q", h.Role, h.Requests(), h.Group)
		}
	}
}

func TestDestErrors(t *testing.T) {
	unicast := func(to netip.AddrPort, group netip.AddrPort) probe.Send {
		return config("lo", func(c *probe.Send) { c.Group, c.Unicast, c.Count = group, to, 10 })
	}
	g := netip.MustParseAddrPort("239.1.1.1:9000")
	for _, c := range []probe.Send{
		unicast(netip.MustParseAddrPort("10.0.0.2:9000"), g),
		unicast(netip.MustParseAddrPort("239.1.1.2:9000"), netip.AddrPort{}),
		unicast(netip.MustParseAddrPort("255.255.255.255:9000"), netip.AddrPort{}),
		unicast(netip.AddrPort{}, netip.AddrPort{}),
	} {
		if _, err := New(c, Options{}); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("New(%+v) = %v, want a usage error", c, err)
		}
	}
}
