package responder

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp/tstamptest"
	"github.com/rig-project/rig/internal/wire"
)

// TestUnicastStepAllocs: a responder taking unicast requests (bound to its
// address, no group) answers every one without allocating, joins no group,
// and says so in its sample header.
func TestUnicastStepAllocs(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	at := netip.AddrPortFrom(topo.Responder.Addr, 9202)
	var r *Responder
	var igmp []byte
	err := topo.Do(netlab.Responder, func() error {
		var err error
		r, err = New(config(topo.Responder.Interface, func(c *probe.Respond) { c.Group, c.Unicast, c.Capacity = netip.AddrPort{}, at, 4096 }), Options{})
		if err != nil {
			return err
		}
		igmp, err = os.ReadFile("/proc/net/igmp")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// /proc/net/igmp lists each interface's groups: the lab veth has at
	// most the all-hosts group (010000E0) every interface joins.
	for _, l := range strings.Split(string(igmp), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(f[0], "E0") && f[0] != "010000E0" {
			t.Errorf("a unicast responder joined a group: %s", l)
		}
	}
	tstamptest.HoldSoftwareRX(t)
	const n = 200
	err = topo.Do(netlab.Sender, func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(at))
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
		t.Errorf("unicast responder loop iteration allocated %v times", allocs)
	}
	for i := 0; i < 2*n && r.cnt.Received < n; i++ {
		if err := r.step(); err != nil {
			t.Fatal(err)
		}
	}
	if c := r.Counters(); c.Received != n || c.Sent != n || c.Foreign != 0 {
		t.Errorf("counters %+v: want %d answered", c, n)
	}
	for _, rec := range r.Records() {
		if rec.T[samples.ReqRxSW] == 0 || rec.T[samples.RepTxUser] == 0 {
			t.Fatalf("seq %d: stamps missing: %+v", rec.Seq, rec.T)
		}
	}
	h := r.Header(0, 0)
	if h.Request != samples.RequestUnicast || h.To != at.String() || h.Group != "" || h.Requests() != "unicast to "+at.String() {
		t.Errorf("header request %q to %q group %q", h.Request, h.To, h.Group)
	}
}

// TestListenErrors: an address that is not the interface's is refused
// before anything binds, naming the interface's addresses; group and
// listen exclude each other; a multicast or unspecified address is no
// unicast destination.
func TestListenErrors(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	g := netip.MustParseAddrPort("239.8.8.8:9200")
	err := topo.Do(netlab.Responder, func() error {
		listen := func(at, group netip.AddrPort) probe.Respond {
			return config(topo.Responder.Interface, func(c *probe.Respond) { c.Group, c.Unicast = group, at })
		}
		for _, c := range []struct {
			cfg  probe.Respond
			want string
		}{
			{listen(netip.MustParseAddrPort("10.255.0.9:9000"), netip.AddrPort{}), "10.255.0.9 is not an address of " + topo.Responder.Interface + " (its IPv4 addresses: " + topo.Responder.Addr.String() + ")"},
			{listen(netip.AddrPortFrom(topo.Responder.Addr, 9000), g), "not both"},
			{listen(netip.MustParseAddrPort("239.1.1.1:9000"), netip.AddrPort{}), "is a multicast address"},
			{listen(netip.MustParseAddrPort("0.0.0.0:9000"), netip.AddrPort{}), "not a host's address"},
			{listen(netip.AddrPortFrom(topo.Responder.Addr, 0), netip.AddrPort{}), "port 0"},
			{listen(netip.AddrPort{}, netip.AddrPort{}), "no request destination"},
		} {
			r, err := New(c.cfg, Options{})
			if err == nil {
				r.Close()
				t.Errorf("%+v accepted", c.cfg)
				continue
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
			}
		}
		_, err := New(listen(netip.MustParseAddrPort("10.255.0.9:9000"), netip.AddrPort{}), Options{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a foreign address: %v does not wrap os.ErrNotExist (the CLI's exit 2)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReplyCarriesID: every reply carries the responder's --id, so the
// sender and the capture tell several responders' replies apart; a version
// 1 request (an older sender) gets a version 1 reply, which has no id.
func TestReplyCarriesID(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	at := netip.AddrPortFrom(topo.Responder.Addr, 9203)
	var r *Responder
	err := topo.Do(netlab.Responder, func() error {
		var err error
		r, err = New(config(topo.Responder.Interface, func(c *probe.Respond) { c.Group, c.Unicast, c.Capacity, c.ID = netip.AddrPort{}, at, 16, 7 }), Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c *net.UDPConn
	err = topo.Do(netlab.Sender, func() error {
		var err error
		if c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(at)); err != nil {
			return err
		}
		buf := make([]byte, 64)
		if _, err := c.Write(wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 77, Seq: 1})); err != nil {
			return err
		}
		v1 := wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 77, Seq: 2})
		v1[4] = 1 // the version 1 layout is this one without the id
		_, err = c.Write(v1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 400 && r.cnt.Sent < 2; i++ {
		if err := r.step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 128)
	got := map[uint64]wire.Header{}
	for range 2 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("reply: %v (counters %+v)", err, r.Counters())
		}
		var h wire.Header
		if err := wire.Decode(buf[:n], 77, &h); err != nil {
			t.Fatal(err)
		}
		got[h.Seq] = h
	}
	if h := got[1]; h.Type != wire.Reply || h.Version != wire.Version || h.Responder != 7 {
		t.Errorf("reply to a version %d request: %+v, want responder 7", wire.Version, h)
	}
	if h := got[2]; h.Type != wire.Reply || h.Version != 1 || h.Responder != 0 {
		t.Errorf("reply to a version 1 request: %+v, want version 1 without an id", h)
	}
	if h := r.Header(0, 0); h.ResponderID != 7 {
		t.Errorf("sample header responder id = %v", h.ResponderID)
	}
	for _, rec := range r.Records() {
		if rec.Responder != 7 {
			t.Errorf("seq %d recorded as responder %d's", rec.Seq, rec.Responder)
		}
	}
}
