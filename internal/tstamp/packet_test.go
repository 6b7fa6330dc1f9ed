package tstamp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// frame builds an untagged Ethernet IPv4 frame; ihl in 32-bit words.
func frame(ethertype uint16, proto uint8, ihl int, fragOff uint16, sport, dport uint16) []byte {
	b := make([]byte, 14+ihl*4+8+16)
	binary.BigEndian.PutUint16(b[12:], ethertype)
	ip := b[14:]
	ip[0] = 0x40 | uint8(ihl)
	binary.BigEndian.PutUint16(ip[6:], fragOff)
	ip[9] = proto
	udp := ip[ihl*4:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	return b
}

func TestUDPPortFilter(t *testing.T) {
	prog, err := udpPortFilter([]uint16{4000, 319})
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.RawInstruction, len(prog))
	for i, p := range prog {
		raw[i] = bpf.RawInstruction{Op: p.Code, Jt: p.Jt, Jf: p.Jf, K: p.K}
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		frame []byte
		keep  bool
	}{
		{"dst port", frame(0x0800, 17, 5, 0, 55555, 4000), true},
		{"src port", frame(0x0800, 17, 5, 0, 4000, 55555), true},
		{"second port", frame(0x0800, 17, 5, 0, 1, 319), true},
		{"ip options", frame(0x0800, 17, 7, 0, 1, 4000), true},
		{"DF set is fine", frame(0x0800, 17, 5, 0x4000, 1, 4000), true},
		{"other port", frame(0x0800, 17, 5, 0, 4001, 4002), false},
		{"tcp", frame(0x0800, 6, 5, 0, 4000, 4000), false},
		{"ipv6", frame(0x86dd, 17, 5, 0, 4000, 4000), false},
		{"vlan", frame(0x8100, 17, 5, 0, 4000, 4000), false},
		{"later fragment", frame(0x0800, 17, 5, 0x0010, 4000, 4000), false},
		{"runt", []byte{1, 2, 3}, false},
	}
	for _, tt := range tests {
		n, err := vm.Run(tt.frame)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (n > 0) != tt.keep {
			t.Errorf("%s: filter returned %d, keep=%v", tt.name, n, tt.keep)
		}
	}
	if _, err := udpPortFilter(nil); err == nil {
		t.Fatal("no ports accepted")
	}
	if _, err := udpPortFilter(make([]uint16, 65)); err == nil {
		t.Fatal("65 ports accepted")
	}
	// The jump offsets must still be valid at the maximum.
	many := make([]uint16, maxFilterPorts)
	for i := range many {
		many[i] = uint16(1000 + i)
	}
	if _, err := udpPortFilter(many); err != nil {
		t.Fatal(err)
	}
}
