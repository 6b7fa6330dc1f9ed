package capture

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/responder"
	"github.com/rig-project/rig/sender"
)

// openCapture opens a capture in the lab's capture namespace.
func openCapture(t *testing.T, topo *netlab.Topology, cfg probe.Capture, o Options) *Capture {
	t.Helper()
	cfg.Iface, cfg.Timestamps = topo.Capture.Interface, tstamp.Software
	var c *Capture
	if err := topo.Do(netlab.Capture, func() (err error) { c, err = New(cfg, o); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// burst sends count requests 50 µs apart (faster overruns the veth backlog) from the lab's sender and waits
// for the round to end (no responder: every reply is lost).
func burst(t *testing.T, topo *netlab.Topology, group netip.AddrPort, runID uint64, count int) {
	t.Helper()
	err := topo.Do(netlab.Sender, func() error {
		sc := probe.DefaultSend()
		sc.Iface, sc.Group, sc.Port, sc.Count, sc.Interval, sc.Spin = topo.Sender.Interface, group, 0, count, 50*time.Microsecond, 0
		sc.Timestamps, sc.RunID, sc.ReplyTimeout, sc.TxWait = tstamp.Software, runID, 20*time.Millisecond, 50*time.Millisecond
		s, err := sender.New(sc, sender.Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Run(context.Background()); err != nil {
			return err
		}
		if c := s.Counters(); c.Sent != uint64(count) {
			t.Errorf("sender sent %d of %d", c.Sent, count)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// drainQueued runs the capture stopped from the start: it reads what is
// queued (a capture reads its queue once more when it stops) and finishes.
func drainQueued(t *testing.T, c *Capture) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func requestsSeen(c *Capture) int {
	n := 0
	for _, r := range c.Records() {
		if r.T[samples.CapReqSW] != 0 {
			n++
		}
	}
	return n
}

// TestCaptureBurst: a burst far larger than the default AF_PACKET receive
// buffer (~208 KiB: about 270 of these frames) queued while the capture
// thread does not read — a stalled sender's catch-up — is captured whole;
// and with a buffer too small for it, what the kernel drops is counted in
// the footer, never silent.
func TestCaptureBurst(t *testing.T) {
	testbin.Integration(t)
	topo := netlabtest.New(t, netlab.Options{})
	group := netip.MustParseAddrPort("239.8.9.1:9400")
	const count = 8000

	c := openCapture(t, topo, config("", func(c *probe.Capture) { c.Group, c.RunID, c.Capacity = group, 0x51, count }), Options{})
	burst(t, topo, group, 0x51, count)
	drainQueued(t, c)
	frames := c.Frames()
	if got := requestsSeen(c); got != count || c.cnt.KernelDrops != 0 {
		t.Fatalf("burst of %d: captured %d requests, kernel dropped %d (receive buffer %d bytes)", count, got, c.cnt.KernelDrops, c.rcvbuf)
	}
	if frames%count != 0 {
		t.Fatalf("%d frames for %d requests: the mirror copies each request a whole number of times", frames, count)
	}

	// The same burst into a 64 KiB buffer: drops, counted.
	small := openCapture(t, topo, config("", func(c *probe.Capture) { c.Group, c.RunID, c.Capacity = group, 0x52, count }), Options{})
	if _, err := small.conn.SetRcvBuf(32 << 10); err != nil {
		t.Fatal(err)
	}
	burst(t, topo, group, 0x52, count)
	drainQueued(t, small)
	if small.cnt.KernelDrops == 0 || small.Frames()+int(small.cnt.KernelDrops) != frames {
		t.Fatalf("small buffer: %d frames + %d dropped, want > 0 dropped and %d in all", small.Frames(), small.cnt.KernelDrops, frames)
	}
	t.Logf("burst of %d requests (%d frames): all captured in %d bytes of buffer; %d dropped and counted in 64 KiB", count, frames, c.rcvbuf, small.cnt.KernelDrops)
}

// inject sends payloads to dst from the lab's sender namespace, from port
// sport.
func inject(t *testing.T, topo *netlab.Topology, sport uint16, dst netip.AddrPort, payloads ...[]byte) {
	t.Helper()
	err := topo.Do(netlab.Sender, func() error {
		ifi, err := net.InterfaceByName(topo.Sender.Interface)
		if err != nil {
			return err
		}
		c, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), sport), tstamp.UDPOptions{Device: ifi.Name, ReuseAddr: true})
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.SetMulticastInterface(ifi.Index); err != nil {
			return err
		}
		for i, p := range payloads {
			if err := c.SendTo(p, dst, uint32(i)); err != nil {
				return err
			}
			if i%200 == 199 {
				time.Sleep(2 * time.Millisecond) // pacing, not waiting: 200 at once fit the veth backlog
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func packet(typ wire.Type, run uint64, arm, round uint32, seq uint64) []byte {
	return wire.Encode(make([]byte, 64), 64, &wire.Header{Type: typ, RunID: run, Arm: arm, Round: round, Seq: seq})
}

// TestStraysOnTheWire: another run's request before the round, 2 000 stray
// requests with the round's run id but another arm or round, and forged
// replies with the round's run id, arm and round sent the requests' way:
// the responder answers every real request and nothing else, the capture
// pairs only the round's own frames (no negative turnaround), and both
// count the rest as foreign.
func TestStraysOnTheWire(t *testing.T) {
	testbin.Integration(t)
	topo := netlabtest.New(t, netlab.Options{})
	group := netip.MustParseAddrPort("239.8.9.2:9410")
	const run, arm, round, count = 0x77, 1, 2, 500

	ready := make(chan struct{}, 2)
	c := openCapture(t, topo, config("", func(c *probe.Capture) {
		c.Group, c.RunID, c.ArmIndex, c.Round, c.Capacity = group, run, arm, round, count
	}), Options{Ready: func() { ready <- struct{}{} }})
	var r *responder.Responder
	err := topo.Do(netlab.Responder, func() (err error) {
		rc := probe.DefaultRespond()
		rc.Iface, rc.Group, rc.Timestamps, rc.RunID, rc.ArmIndex, rc.Round, rc.Capacity = topo.Responder.Interface, group, tstamp.Software, run, arm, round, count
		r, err = responder.New(rc, responder.Options{Ready: func() { ready <- struct{}{} }})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	go func() { done <- r.Run(ctx) }()
	go func() { done <- c.Run(ctx) }()
	for range 2 {
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("ended before it was ready: %v", err)
		}
	}

	// Before the sender: one request of another run (a responder without
	// a run id adopted it), then the strays and the forgeries.
	inject(t, topo, 9411, group, packet(wire.Request, 0x99, arm, round, 0))
	var strays, forged [][]byte
	for seq := uint64(0); seq < 1000; seq++ {
		strays = append(strays, packet(wire.Request, run, 0, round, seq), packet(wire.Request, run, arm, 5, seq))
	}
	for seq := uint64(0); seq < count; seq++ {
		forged = append(forged, packet(wire.Reply, run, arm, round, seq))
	}
	inject(t, topo, 9411, group, strays...)
	inject(t, topo, 9411, group, forged...)               // a "reply" to the group, from another port
	inject(t, topo, group.Port(), group, forged[:100]...) // from the group's port, still to the group

	var sc samples.Counters
	var snd []samples.Record
	err = topo.Do(netlab.Sender, func() error {
		cfg := probe.DefaultSend()
		cfg.Iface, cfg.Group, cfg.Count, cfg.Spin, cfg.Timestamps = topo.Sender.Interface, group, count, 0, tstamp.Software
		cfg.RunID, cfg.ArmIndex, cfg.Round, cfg.ReplyTimeout = run, arm, round, 200*time.Millisecond
		s, err := sender.New(cfg, sender.Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Run(context.Background()); err != nil {
			return err
		}
		sc, snd = s.Counters(), s.Records()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The capture has the copies of every request and reply (the strays
	// before them are read by then: one queue, in order).
	for deadline := time.Now().Add(10 * time.Second); c.Frames() < 2*count && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	if sc.Sent != count || sc.Received != count || sc.Lost != 0 || sc.Late != 0 {
		t.Errorf("sender counters %+v: every real request must be answered", sc)
	}
	rc := r.Counters()
	const bogus = 1 + 2000 + count + 100
	if rc.Sent != count || rc.Duplicated != 0 || rc.Foreign < bogus {
		t.Errorf("responder counters %+v: want %d answered, none duplicated, ≥ %d foreign", rc, count, bogus)
	}
	cc := c.Counters()
	if cc.Foreign < bogus || cc.Duplicated != 0 || cc.KernelDrops != 0 {
		t.Errorf("capture counters %+v: want ≥ %d foreign, no duplicate", cc, bogus)
	}
	paired := 0
	for _, rec := range c.Records() {
		if rec.T[samples.CapReqSW] != 0 && rec.T[samples.CapRepSW] != 0 {
			paired++
			if rec.T[samples.CapRepSW] < rec.T[samples.CapReqSW] {
				t.Errorf("seq %d: negative turnaround %d ns", rec.Seq, rec.T[samples.CapRepSW]-rec.T[samples.CapReqSW])
			}
		}
	}
	if paired != count {
		t.Errorf("capture paired %d of %d", paired, count)
	}
	for _, rec := range snd {
		if rec.T[samples.RxSW] != 0 && rec.T[samples.RxSW] < rec.T[samples.TxSW] {
			t.Errorf("sender seq %d: reply before the request", rec.Seq)
		}
	}
	t.Logf("responder foreign %d, capture foreign %d; sender %+v", rc.Foreign, cc.Foreign, sc)
}
