package responder

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/tstamp/tstamptest"
	"github.com/rig-project/rig/internal/wire"
)

// TestStepAllocs proves one loop iteration (poll, drain TX stamps, receive,
// decode, record, reply) does not allocate, and that foreign and malformed
// packets are counted and not answered.
func TestStepAllocs(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	group := netip.MustParseAddrPort("239.8.8.8:9200")
	var r *Responder
	err := topo.Do(netlab.Responder, func() error {
		var err error
		r, err = New(config(topo.Responder.Interface, func(c *probe.Respond) { c.Group, c.Capacity = group, 4096 }), Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tstamptest.HoldSoftwareRX(t) // CI once sent all 200 before the kernel's switch flipped
	const n = 200
	err = topo.Do(netlab.Sender, func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(group))
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 64)
		for i := 0; i < n; i++ {
			if _, err := c.Write(wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 77, Seq: uint64(i)})); err != nil {
				return err
			}
		}
		c.Write([]byte("foreign"))                                                         // not ours
		c.Write(wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 78, Seq: 5})) // another run
		bad := wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 77, Seq: 6})
		bad[5] = 9 // unknown type: malformed
		c.Write(bad)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(n/2, func() {
		if err := r.step(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("responder loop iteration allocated %v times", allocs)
	}
	for i := 0; i < 2*n && r.cnt.Received+r.cnt.Foreign+r.cnt.Malformed < n+3; i++ {
		if err := r.step(); err != nil {
			t.Fatal(err)
		}
	}
	r.drainErrqueue()
	c := r.Counters()
	if c.Received != n || c.Sent != n || c.Foreign != 2 || c.Malformed != 1 {
		t.Errorf("counters %+v: want %d answered, 2 foreign, 1 malformed", c, n)
	}
	recs := r.Records()
	if len(recs) != n {
		t.Fatalf("%d records", len(recs))
	}
	for _, rec := range recs {
		if rec.T[samples.ReqRxSW] == 0 || rec.T[samples.ReqRxUser] == 0 || rec.T[samples.RepTxUser] == 0 {
			t.Fatalf("seq %d: stamps missing: %+v", rec.Seq, rec.T)
		}
	}
}

// TestNewNeedsRunID: without a run id the first datagram that looked valid
// set the run, so one stray before the sender started lost the round.
func TestNewNeedsRunID(t *testing.T) {
	r, err := New(config("lo", func(c *probe.Respond) { c.Group, c.RunID = netip.MustParseAddrPort("239.8.8.8:9200"), 0 }), Options{})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--run-id is required") {
		if r != nil {
			r.Close()
		}
		t.Fatalf("New without a run id: %v, want the usage error --run-id is required", err)
	}
}

// config is rig respond's command line on iface with software stamps and
// run id 77, changed by set.
func config(iface string, set func(*probe.Respond)) probe.Respond {
	c := probe.DefaultRespond()
	c.Iface, c.Timestamps, c.RunID = iface, tstamp.Software, 77
	set(&c)
	return c
}
