package tstamp

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// vxlanFrame wraps inner (an Ethernet frame) in Ethernet/IPv4/UDP/VXLAN
// with VNI 4242; ihl in 32-bit words.
func vxlanFrame(inner []byte, ihl int, flags byte, dport uint16) []byte {
	b := make([]byte, 14+ihl*4+8+8, 14+ihl*4+16+len(inner))
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0] = 0x40 | uint8(ihl)
	ip[9] = 17
	udp := ip[ihl*4:]
	binary.BigEndian.PutUint16(udp[0:], 51000)
	binary.BigEndian.PutUint16(udp[2:], dport)
	udp[8] = flags
	udp[12], udp[13], udp[14] = 0, 0x10, 0x92 // 4242
	return append(b, inner...)
}

func vm(t *testing.T, prog []unix.SockFilter) *bpf.VM {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog))
	for i, p := range prog {
		raw[i] = bpf.RawInstruction{Op: p.Code, Jt: p.Jt, Jf: p.Jf, K: p.K}
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVXLANPortFilter(t *testing.T) {
	prog, err := vxlanPortFilter(VXLANMatch{}, []uint16{9000, 9001})
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t, prog)
	in := func(ihl int, sport, dport uint16) []byte { return frame(0x0800, 17, ihl, 0, sport, dport) }
	fixture, err := os.ReadFile("../../capture/testdata/vxlan-request.hex")
	if err != nil {
		t.Fatal(err)
	}
	var hx strings.Builder
	for _, l := range strings.Split(string(fixture), "\n") {
		if !strings.HasPrefix(l, "#") {
			hx.WriteString(strings.TrimSpace(l))
		}
	}
	linuxFrame, err := hex.DecodeString(hx.String())
	if err != nil {
		t.Fatal(err)
	}
	tcp := frame(0x0800, 6, 5, 0, 9000, 9000)
	later := frame(0x0800, 17, 5, 0x0020, 9000, 9000)
	for _, c := range []struct {
		name string
		f    []byte
		keep bool
	}{
		{"Linux vxlan frame (fixture)", linuxFrame, true},
		{"request: inner dst port", vxlanFrame(in(5, 40000, 9000), 5, 0x08, VXLANPort), true},
		{"reply: inner src port", vxlanFrame(in(5, 9001, 40000), 5, 0x08, VXLANPort), true},
		{"outer ip options", vxlanFrame(in(5, 1, 9000), 7, 0x08, VXLANPort), true},
		{"inner ip options", vxlanFrame(in(6, 1, 9000), 5, 0x08, VXLANPort), true},
		{"both with options", vxlanFrame(in(8, 9001, 1), 6, 0x08, VXLANPort), true},
		{"reserved flags set", vxlanFrame(in(5, 1, 9000), 5, 0xff, VXLANPort), true},
		{"vni flag clear", vxlanFrame(in(5, 1, 9000), 5, 0x00, VXLANPort), false},
		{"inner other ports", vxlanFrame(in(5, 1, 2), 5, 0x08, VXLANPort), false},
		{"inner tcp", vxlanFrame(tcp, 5, 0x08, VXLANPort), false},
		{"inner later fragment", vxlanFrame(later, 5, 0x08, VXLANPort), false},
		{"not 4789", vxlanFrame(in(5, 1, 9000), 5, 0x08, 8472), false},
		{"bare rig frame", in(5, 40000, 9000), false},
		{"runt", linuxFrame[:40], false},
	} {
		n, err := v.Run(c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (n > 0) != c.keep {
			t.Errorf("%s: filter returned %d, keep=%v", c.name, n, c.keep)
		}
	}
	many := make([]uint16, maxFilterPorts)
	for i := range many {
		many[i] = uint16(1000 + i)
	}
	if _, err := vxlanPortFilter(VXLANMatch{}, many); err != nil {
		t.Fatalf("64 ports: %v", err)
	}
	if _, err := vxlanPortFilter(VXLANMatch{}, nil); err == nil {
		t.Fatal("no ports accepted")
	}
	big := uint32(MaxVNI + 1)
	if _, err := vxlanPortFilter(VXLANMatch{VNI: &big}, []uint16{9000}); err == nil {
		t.Fatal("a 25-bit VNI accepted")
	}
}

// With a port and a VNI, the filter keeps the copies of that mirror
// session only: to that UDP port (8472: a Linux vxlan device made without
// dstport), of that VNI, whatever the outer header's length.
func TestVXLANFilterPortAndVNI(t *testing.T) {
	vni := uint32(4242)
	prog, err := vxlanPortFilter(VXLANMatch{Port: 8472, VNI: &vni}, []uint16{9000})
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t, prog)
	in := frame(0x0800, 17, 5, 0, 40000, 9000)
	other := vxlanFrame(in, 5, 0x08, 8472)
	other[14+20+8+6] = 0x93 // VNI 4243
	for _, c := range []struct {
		name string
		f    []byte
		keep bool
	}{
		{"8472, VNI 4242", vxlanFrame(in, 5, 0x08, 8472), true},
		{"outer ip options", vxlanFrame(in, 7, 0x08, 8472), true},
		{"another session's VNI", other, false},
		{"4789", vxlanFrame(in, 5, 0x08, VXLANPort), false},
		{"vni flag clear", vxlanFrame(in, 5, 0x00, 8472), false},
	} {
		if n, err := v.Run(c.f); err != nil || (n > 0) != c.keep {
			t.Errorf("%s: filter returned %d (%v), keep=%v", c.name, n, err, c.keep)
		}
	}
}

// The filter and VXLANMatch.Takes agree on every frame: the kernel keeps
// what the capture's parser then takes.
func FuzzVXLANFilterVNI(f *testing.F) {
	in := frame(0x0800, 17, 5, 0, 40000, 9000)
	f.Add(vxlanFrame(in, 5, 0x08, VXLANPort), uint32(4242))
	f.Add(vxlanFrame(in, 6, 0x08, VXLANPort), uint32(7))
	f.Add(vxlanFrame(in, 5, 0xff, 8472), uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, vni uint32) {
		vni &= MaxVNI
		m := VXLANMatch{VNI: &vni}
		prog, err := vxlanPortFilter(m, []uint16{9000})
		if err != nil {
			t.Fatal(err)
		}
		n, err := vm(t, prog).Run(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || len(b) < 14+20 {
			return
		}
		x := 14 + int(b[14]&0x0f)*4 // the outer IPv4 header's end
		if len(b) < x+16 || !m.Takes(b[x+8:]) || uint16(b[x+2])<<8|uint16(b[x+3]) != VXLANPort {
			t.Fatalf("the filter kept a frame the parser does not take: % x", b)
		}
	})
}
