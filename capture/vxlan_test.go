package capture

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// vxlanFixture reads testdata/vxlan-request.hex: a frame Linux's vxlan
// device sent (VNI 4242) around a rig request, byte for byte.
func vxlanFixture(t testing.TB) []byte {
	b, err := os.ReadFile("testdata/vxlan-request.hex")
	if err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			h.WriteString(strings.TrimSpace(l))
		}
	}
	f, err := hex.DecodeString(h.String())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// encap wraps an Ethernet frame in outer Ethernet/IPv4/UDP(4789)/VXLAN
// headers as a mirror session does; ihl in 32-bit words.
func encap(inner []byte, ihl int, flags byte, dport uint16) []byte {
	f := []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00}
	ip := make([]byte, ihl*4)
	ip[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+8+8+len(inner)))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, 0, 9, 10, 0, 0, 10})
	udp := make([]byte, 8)
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+8+len(inner)))
	vx := []byte{flags, 0, 0, 0, 0, 0x10, 0x92, 0}
	f = append(append(append(append(f, ip...), udp...), vx...), inner...)
	return f
}

// The fixture is what RFC 7348 says: UDP to 4789, flags 0x08, VNI 4242,
// then the whole inner frame, which carries the rig request.
func TestVXLANFixture(t *testing.T) {
	f := vxlanFixture(t)
	outer, ep, ok := udpFrame(f)
	if !ok || ep.dport != 4789 || outer[0] != 0x08 || uint32(outer[4])<<16|uint32(outer[5])<<8|uint32(outer[6]) != 4242 {
		t.Fatalf("outer: port %d ok %v header % x", ep.dport, ok, outer[:8])
	}
	in, ok := vxlanInner(f, tstamp.VXLANMatch{})
	if !ok || !bytes.Equal(in, outer[8:]) || &in[0] != &f[len(f)-len(in)] {
		t.Fatalf("inner frame: ok %v, len %d, not the tail of the frame", ok, len(in))
	}
	if !bytes.Equal(in[:12], []byte{2, 0, 0, 0, 0x42, 2, 2, 0, 0, 0, 0x42, 1}) {
		t.Fatalf("inner MACs % x", in[:12])
	}
	p, _, ok := udpFrame(in)
	var h wire.Header
	if !ok || wire.Decode(p, 0, &h) != nil || h.Type != wire.Request || h.RunID != 0x1f2e3d4c5b6a7988 || h.Arm != 1 || h.Round != 2 || h.Seq != 7 {
		t.Fatalf("inner rig header %+v (ok %v)", h, ok)
	}

	// A VXLAN capture of this run (unicast requests to 10.42.0.2:9000)
	// pairs it; a plain one sees a foreign datagram to 4789.
	fixtureRun := func() *Capture {
		c := newTestCapture(16)
		c.cfg.Group, c.cfg.Unicast = netip.AddrPort{}, netip.MustParseAddrPort("10.42.0.2:9000")
		c.cfg.RunID, c.runID, c.cfg.ArmIndex, c.cfg.Round = 0x1f2e3d4c5b6a7988, 0x1f2e3d4c5b6a7988, 1, 2
		return c
	}
	c := fixtureRun()
	c.cfg.VXLAN = true
	c.onFrame(f, tstamp.PacketHost, tstamp.Stamps{SW: 1000})
	if c.pair(7, 0).T[samples.CapReqSW] != 1000 || c.cnt.Received != 1 || c.cnt.Foreign != 0 || c.runID != 0x1f2e3d4c5b6a7988 {
		t.Fatalf("vxlan capture: %+v %+v", c.pair(7, 0), c.cnt)
	}
	plain := fixtureRun()
	plain.onFrame(f, tstamp.PacketHost, tstamp.Stamps{SW: 1000})
	if plain.cnt.Received != 0 || plain.cnt.Foreign != 1 {
		t.Fatalf("plain capture took a VXLAN frame: %+v", plain.cnt)
	}
	// And a VXLAN capture takes no bare frame.
	b := make([]byte, 64)
	bare := frameTo(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 0x1f2e3d4c5b6a7988, Arm: 1, Round: 2, Seq: 7})...),
		false, [4]byte{10, 42, 0, 2}, [4]byte{10, 42, 0, 1}, 9000, 9000)
	c.onFrame(bare, tstamp.PacketHost, tstamp.Stamps{SW: 2000})
	if c.pair(7, 0).T[samples.CapRepSW] != 0 || c.cnt.Foreign != 1 {
		t.Fatalf("vxlan capture took a bare frame: %+v", c.cnt)
	}
	if got := c.Header(0, 0).Settings["mirror"]; !strings.Contains(got.(string), "vxlan") {
		t.Fatalf("header mirror setting %q", got)
	}
}

func TestVXLANInner(t *testing.T) {
	b := make([]byte, 64)
	inner := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 5, Seq: 3})...), false)
	for _, c := range []struct {
		name string
		f    []byte
		ok   bool
	}{
		{"vxlan", encap(inner, 5, 0x08, 4789), true},
		{"outer ip options", encap(inner, 6, 0x08, 4789), true},
		{"reserved flag bits ignored", encap(inner, 5, 0xff, 4789), true},
		{"vni flag clear", encap(inner, 5, 0x00, 4789), false},
		{"other port", encap(inner, 5, 0x08, 4790), false},
		{"no inner frame", encap(nil, 5, 0x08, 4789), false},
		{"bare frame", inner, false},
		{"runt", encap(inner, 5, 0x08, 4789)[:40], false},
	} {
		got, ok := vxlanInner(c.f, tstamp.VXLANMatch{})
		if ok != c.ok || (ok && !bytes.Equal(got, inner)) {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
		}
	}
	// --vxlan-port and --vni: the copies of one mirror session only.
	vni, other := uint32(4242), uint32(4243)
	for _, c := range []struct {
		name string
		f    []byte
		m    tstamp.VXLANMatch
		ok   bool
	}{
		{"port 8472", encap(inner, 5, 0x08, 8472), tstamp.VXLANMatch{Port: 8472}, true},
		{"8472 is not 4789", encap(inner, 5, 0x08, 8472), tstamp.VXLANMatch{}, false},
		{"its VNI", encap(inner, 5, 0x08, 4789), tstamp.VXLANMatch{VNI: &vni}, true},
		{"another VNI", encap(inner, 5, 0x08, 4789), tstamp.VXLANMatch{VNI: &other}, false},
		{"its VNI, flag clear", encap(inner, 5, 0x00, 4789), tstamp.VXLANMatch{VNI: &vni}, false},
	} {
		if got, ok := vxlanInner(c.f, c.m); ok != c.ok || (ok && !bytes.Equal(got, inner)) {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
		}
	}
}

// A capture told one VNI counts another session's copy of the same
// request as foreign instead of pairing it, and says which copies it
// takes in the sample header.
func TestVXLANCaptureVNI(t *testing.T) {
	f := vxlanFixture(t) // VNI 4242
	for _, vni := range []uint32{4242, 4243} {
		c := newTestCapture(16)
		c.cfg.Group, c.cfg.Unicast = netip.AddrPort{}, netip.MustParseAddrPort("10.42.0.2:9000")
		c.cfg.RunID, c.runID, c.cfg.ArmIndex, c.cfg.Round = 0x1f2e3d4c5b6a7988, 0x1f2e3d4c5b6a7988, 1, 2
		c.cfg.VXLAN, c.match = true, tstamp.VXLANMatch{VNI: &vni}
		c.onFrame(f, tstamp.PacketHost, tstamp.Stamps{SW: 1000})
		if taken := c.cnt.Received == 1 && c.cnt.Foreign == 0; taken != (vni == 4242) {
			t.Errorf("VNI %d: %+v", vni, c.cnt)
		}
		if got := c.Header(0, 0).Settings["mirror"].(string); !strings.Contains(got, fmt.Sprintf("UDP 4789 (RFC 7348), VNI %d", vni)) {
			t.Errorf("header mirror setting %q", got)
		}
	}
}

// TestOnFrameVXLANAllocs: decapsulation happens in place, so a mirrored
// copy costs no allocation either.
func TestOnFrameVXLANAllocs(t *testing.T) {
	c := newTestCapture(1 << 12)
	c.cfg.VXLAN, c.cfg.Pcap, c.snaplen = true, "cap.pcap", 128+vxlanOverhead
	c.allocate()
	b := make([]byte, 64)
	f := encap(frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9})...), false), 5, 0x08, 4789)
	seq := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(f[vxlanOverhead+14+20+8+24:], seq)
		seq++
		c.onFrame(f, tstamp.PacketHost, tstamp.Stamps{SW: 5})
	})
	if allocs != 0 {
		t.Fatalf("one VXLAN copy allocated %v times", allocs)
	}
	if c.cnt.Received < 1000 || c.cnt.Foreign != 0 {
		t.Fatalf("counters %+v", c.cnt)
	}
}

func FuzzVXLANInner(f *testing.F) {
	f.Add(vxlanFixture(f))
	b := make([]byte, 64)
	f.Add(encap(frame(wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 1}), true), 6, 0x08, 4789))
	f.Add(encap(nil, 5, 0x08, 4789))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, fr []byte) {
		in, ok := vxlanInner(fr, tstamp.VXLANMatch{})
		vni := uint32(4242)
		if inv, okv := vxlanInner(fr, tstamp.VXLANMatch{VNI: &vni}); okv && (!ok || &inv[0] != &in[0]) {
			t.Fatal("a frame of VNI 4242 that the any-VNI match does not take")
		}
		if ok {
			// In place: in is a window of fr past the outer headers.
			off := cap(fr) - cap(in)
			if len(in) < 14 || off < vxlanOverhead || off+len(in) > len(fr) || &fr[off] != &in[0] {
				t.Fatalf("inner frame of %d bytes at %d is not a window of the %d-byte frame", len(in), off, len(fr))
			}
		}
		c := newTestCapture(4)
		c.cfg.VXLAN = true
		c.onFrame(fr, tstamp.PacketHost, tstamp.Stamps{SW: 1})
	})
}

// The direction check with unicast requests: a request goes to the
// responder's address and port, a reply comes from that port and goes
// elsewhere; the same datagrams the other way round are foreign.
func TestUnicastDirection(t *testing.T) {
	c := newTestCapture(16)
	c.cfg.Group, c.cfg.Unicast = netip.AddrPort{}, netip.MustParseAddrPort("10.0.0.2:9000")
	b := make([]byte, 64)
	enc := func(ty wire.Type, seq uint64) []byte {
		return append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: ty, RunID: 9, Seq: seq})...)
	}
	snd, rsp := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	c.onFrame(frameTo(enc(wire.Request, 3), false, snd, rsp, 9000, 9000), tstamp.PacketOtherHost, tstamp.Stamps{SW: 10})
	c.onFrame(frameTo(enc(wire.Reply, 3), false, rsp, snd, 9000, 9000), tstamp.PacketOtherHost, tstamp.Stamps{SW: 20})
	c.onFrame(frameTo(enc(wire.Request, 4), false, rsp, snd, 9000, 9000), tstamp.PacketOtherHost, tstamp.Stamps{SW: 30}) // a request leaving the responder
	c.onFrame(frameTo(enc(wire.Reply, 5), false, snd, rsp, 9000, 9000), tstamp.PacketOtherHost, tstamp.Stamps{SW: 40})   // a reply going to it
	c.onFrame(frame(enc(wire.Request, 6), false), tstamp.PacketOtherHost, tstamp.Stamps{SW: 50})                         // to a group
	if r := c.pair(3, 0); r.T[samples.CapReqSW] != 10 || r.T[samples.CapRepSW] != 20 || c.cnt.Received != 2 || c.cnt.Foreign != 3 {
		t.Fatalf("record %+v counters %+v", r, c.cnt)
	}
	if h := c.Header(0, 0); h.Requests() != "unicast to 10.0.0.2:9000" || h.Group != "" {
		t.Fatalf("header requests %q group %q", h.Requests(), h.Group)
	}
	to := func(group, to netip.AddrPort) probe.Capture {
		return config("lo", func(c *probe.Capture) { c.Group, c.Unicast = group, to })
	}
	for _, cfg := range []probe.Capture{
		to(netip.MustParseAddrPort("239.1.1.1:9000"), netip.MustParseAddrPort("10.0.0.2:9000")),
		to(netip.AddrPort{}, netip.MustParseAddrPort("239.1.1.1:9000")),
		to(netip.MustParseAddrPort("10.0.0.2:9000"), netip.AddrPort{}),
	} {
		if c, err := New(cfg, Options{}); err == nil {
			c.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
