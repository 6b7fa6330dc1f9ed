package reflector

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/wire"
)

var (
	testParams = Params{
		To: netip.MustParseAddrPort("239.1.1.1:9000"), From: netip.MustParseAddr("10.0.0.2"),
		FromMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}, TTL: 64, RunID: 0xa11ce, Arm: 1, Round: 3, ID: 7,
	}
	senderMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	groupMAC  = net.HardwareAddr{0x01, 0, 0x5e, 1, 1, 1}
	senderIP  = netip.MustParseAddr("10.0.0.1")
)

// frame is a request from the sender's 10.0.0.1:40000 to to, payload
// after an IPv4 header of ihl words.
func frame(to netip.AddrPort, ihl int, payload []byte) []byte {
	b := append([]byte{}, groupMAC...)
	b = append(b, senderMAC...)
	b = append(b, 0x08, 0x00)
	ip := make([]byte, 4*ihl)
	ip[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+8+len(payload)))
	ip[6] = 0x40 // DF
	ip[8], ip[9] = 1, 17
	s, d := senderIP.As4(), to.Addr().As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip))
	b = append(b, ip...)
	b = binary.BigEndian.AppendUint16(b, 40000)
	b = binary.BigEndian.AppendUint16(b, to.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = append(b, 0xbe, 0xef) // a checksum the reply drops
	return append(b, payload...)
}

func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func request(h wire.Header) []byte {
	if h.RunID == 0 {
		h.RunID = testParams.RunID
	}
	h.Type, h.Arm, h.Round = wire.Request, testParams.Arm+h.Arm, testParams.Round+h.Round
	return wire.Encode(make([]byte, 64), 64, &h)
}

// TestProgram runs the program, at XDP and at tc ingress, on crafted
// frames (BPF_PROG_TEST_RUN): it turns this run's requests around as the
// Go responder's socket replies, and passes everything else to the stack,
// counting what came to its port.
func TestProgram(t *testing.T) {
	testbin.Integration(t) // loads BPF: root
	for _, h := range []Hook{{}, {TCIfindex: 1}} {
		testProgram(t, h)
	}
}

func testProgram(t *testing.T, h Hook) {
	r, err := Load(testParams, h)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _, pass := h.ctx()
	tx := uint32(3)
	if h.TCIfindex != 0 {
		tx = 7
	}
	to := testParams.To
	req := request(wire.Header{Seq: 5, Due: 99})
	vlan := frame(to, 5, req)
	vlan = append(vlan[:12], append([]byte{0x81, 0, 0, 1}, vlan[12:]...)...)
	frag := frame(to, 5, req)
	frag[ethLen+7] = 1 // a fragment offset
	badLen := request(wire.Header{Seq: 1})
	badLen[7] = 63
	wrongVersion := request(wire.Header{Seq: 1})
	wrongVersion[4] = 1
	for _, c := range []struct {
		name    string
		in      []byte
		tx      bool
		counted bool // to the port: counted as passed unless answered
	}{
		{"request", frame(to, 5, req), true, true},
		{"wrong port", frame(netip.AddrPortFrom(to.Addr(), 9001), 5, req), false, false},
		{"other address", frame(netip.MustParseAddrPort("239.1.1.2:9000"), 5, req), false, false},
		{"wrong magic", frame(to, 5, append([]byte("RIGX"), req[4:]...)), false, true},
		{"wrong run id", frame(to, 5, request(wire.Header{RunID: 8})), false, true},
		{"wrong arm", frame(to, 5, request(wire.Header{Arm: 1})), false, true},
		{"wrong round", frame(to, 5, request(wire.Header{Round: 1})), false, true},
		{"a reply", frame(to, 5, append(append([]byte{}, req[:5]...), append([]byte{byte(wire.Reply)}, req[6:]...)...)), false, true},
		{"version 1", frame(to, 5, wrongVersion), false, true},
		{"length field", frame(to, 5, badLen), false, true},
		{"short", frame(to, 5, req[:40]), false, false},
		{"IP options", frame(to, 6, req), false, false},
		{"VLAN", vlan, false, false},
		{"fragment", frag, false, true},
	} {
		a0, p0, err := r.Counts()
		if err != nil {
			t.Fatal(err)
		}
		ret, out, err := r.prog.Test(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, p, _ := r.Counts()
		want := uint32(pass)
		if c.tx {
			want = tx
		}
		if ret != want || (a-a0 == 1) != c.tx || (p-p0 == 1) != (c.counted && !c.tx) {
			t.Errorf("%+v %s: returned %d, want %d; answered +%d, passed +%d", h, c.name, ret, want, a-a0, p-p0)
		}
		if !c.tx && !bytes.Equal(out, c.in) {
			t.Errorf("%s: a passed frame was changed", c.name)
		}
		if c.tx {
			checkReply(t, c.in, out, testParams)
		}
	}
}

// checkReply checks that out is in turned around as the Go responder's
// socket would send it: Ethernet to the request's source from the
// interface, IP to the request's source (or the group) from p.From with a
// valid header checksum and p.TTL, UDP from the port to the request's
// port with no checksum, the payload a reply from p.ID; the rest as sent.
func checkReply(t *testing.T, in, out []byte, p Params) {
	t.Helper()
	if len(out) != len(in) {
		t.Fatalf("reply of %d bytes for a request of %d", len(out), len(in))
	}
	want := append([]byte{}, in...)
	// To the request's source: its MAC, address and port.
	copy(want[0:], in[6:12])
	copy(want[ipOff+16:], in[ipOff+12:ipOff+16])
	copy(want[udpOff+2:], in[udpOff:udpOff+2])
	if p.Reply.IsValid() {
		g := p.Reply.Addr().As4()
		copy(want[0:], []byte{1, 0, 0x5e, g[1] & 0x7f, g[2], g[3]})
		copy(want[ipOff+16:], g[:])
		binary.BigEndian.PutUint16(want[udpOff+2:], p.Reply.Port())
	}
	copy(want[6:], p.FromMAC)
	ip := want[ethLen:udpOff]
	ip[8] = p.TTL
	s := p.From.As4()
	copy(ip[12:], s[:])
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip))
	binary.BigEndian.PutUint16(want[udpOff:], p.To.Port())
	want[udpOff+6], want[udpOff+7] = 0, 0
	wire.MakeReply(want[wireOff:], p.ID) // version 2: the id goes in
	if !bytes.Equal(out, want) {
		t.Errorf("reply\n% x\nwant\n% x", out, want)
	}
	if onesSum(out[ethLen:udpOff]) != 0xffff {
		t.Errorf("IP header checksum does not verify")
	}
	var h wire.Header
	if err := wire.Decode(out[wireOff:udpOff+int(binary.BigEndian.Uint16(out[udpOff+4:]))], p.RunID, &h); err != nil || h.Type != wire.Reply || h.Responder != p.ID {
		t.Errorf("reply payload %+v: %v", h, err)
	}
}

// TestProgramUnicastToGroup: unicast requests (to the responder's own
// address), replies to a group: the group's MAC, address and port.
func TestProgramUnicastToGroup(t *testing.T) {
	testbin.Integration(t)
	p := testParams
	p.To, p.Reply, p.TTL = netip.AddrPortFrom(p.From, 9400), netip.MustParseAddrPort("239.1.1.2:9001"), 1
	r, err := Load(p, Hook{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := frame(p.To, 5, request(wire.Header{Seq: 9}))
	ret, out, err := r.prog.Test(in)
	if err != nil || ret != 3 {
		t.Fatalf("returned %d, %v", ret, err)
	}
	checkReply(t, in, out, p)
	if _, err := Load(Params{To: p.To, Reply: netip.MustParseAddrPort("10.0.0.9:1"), From: p.From, FromMAC: p.FromMAC, TTL: 1}, Hook{}); err == nil {
		t.Error("unicast --reply accepted")
	}
}

// answers is the Go reading of what the program answers: a frame to the
// port and address with an IPv4 header of 20 bytes, not a fragment,
// whose UDP payload (within the frame) the Go responder decodes as a
// version 2 request of this run, arm and round.
func answers(p Params, f []byte) bool {
	if len(f) < frameMin || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[ipOff] != 0x45 || f[ipOff+9] != 17 ||
		binary.BigEndian.Uint16(f[udpOff+2:]) != p.To.Port() || netip.AddrFrom4([4]byte(f[ipOff+16:ipOff+20])) != p.To.Addr() ||
		binary.BigEndian.Uint16(f[ipOff+6:])&0x3fff != 0 {
		return false
	}
	n := int(binary.BigEndian.Uint16(f[udpOff+4:]))
	if n < 8 || udpOff+n > len(f) {
		return false
	}
	var h wire.Header
	return wire.Decode(f[wireOff:udpOff+n], p.RunID, &h) == nil && h.Version == 2 && h.Type == wire.Request && h.Arm == p.Arm && h.Round == p.Round
}

// FuzzProgram: on any frame the program answers exactly what the Go
// responder would (answers), turning it around as checkReply says, and
// passes everything else untouched.
func FuzzProgram(f *testing.F) {
	to := testParams.To
	f.Add(frame(to, 5, request(wire.Header{Seq: 1})))
	f.Add(frame(to, 5, request(wire.Header{RunID: 9})))
	f.Add(frame(to, 6, request(wire.Header{})))
	f.Add(frame(to, 5, request(wire.Header{})[:44]))
	testbin.Integration(f)
	r, err := Load(testParams, Hook{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { r.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < ethLen {
			return // the kernel refuses a test run without an Ethernet header
		}
		ret, out, err := r.prog.Test(in)
		if err != nil {
			t.Fatal(err)
		}
		want := answers(testParams, in)
		if (ret == 3) != want || ret != 3 && ret != 2 {
			t.Fatalf("returned %d, the Go responder answers: %v\n% x", ret, want, in)
		}
		if want {
			checkReply(t, in, out, testParams)
		} else if !bytes.Equal(out, in) {
			t.Fatalf("a passed frame was changed")
		}
	})
}
