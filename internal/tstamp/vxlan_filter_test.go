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

// vxlanFrame wraps inner (an Ethernet frame) in Ethernet/IPv4/UDP/VXLAN;
// ihl in 32-bit words.
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
	prog, err := vxlanPortFilter([]uint16{9000, 9001})
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
	if _, err := vxlanPortFilter(many); err != nil {
		t.Fatalf("64 ports: %v", err)
	}
	if _, err := vxlanPortFilter(nil); err == nil {
		t.Fatal("no ports accepted")
	}
}
