//go:build linux

package tstamp

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// AttachVXLANPortFilter is AttachUDPPortFilter for a port that receives
// VXLAN-encapsulated copies (a mirror session's target): it keeps only
// untagged Ethernet IPv4 UDP frames (first fragments) to m's port whose
// VXLAN header has the VNI flag set (and m's VNI, when set) and which
// carry an untagged Ethernet IPv4 UDP frame (a first fragment) with one of
// ports as its source or destination port. Plain, unencapsulated frames
// are dropped. Errors: as AttachUDPPortFilter, and a VNI above MaxVNI.
func (p *PacketConn) AttachVXLANPortFilter(m VXLANMatch, ports ...uint16) error {
	prog, err := vxlanPortFilter(m, ports)
	if err != nil {
		return err
	}
	return p.attachFilter(prog)
}

// vxlanPortFilter assembles the cBPF program for AttachVXLANPortFilter.
// With X = the outer IPv4 header length, the outer UDP header is at 14+X,
// the VXLAN header at X+22, the inner Ethernet frame at X+30 and the
// inner IPv4 header at X+44. cBPF's ldxb 4*([k]&0xf) takes only an
// absolute offset, so the inner header length is computed in A and added
// to X.
func vxlanPortFilter(m VXLANMatch, ports []uint16) ([]unix.SockFilter, error) {
	if err := checkFilterPorts(ports); err != nil {
		return nil, err
	}
	if m.VNI != nil && *m.VNI > MaxVNI {
		return nil, fmt.Errorf("tstamp: VXLAN filter: VNI %d out of range (0..%d)", *m.VNI, MaxVNI)
	}
	const (
		accept = 0x40000
		drop   = 0
	)
	np := len(ports)
	hdr := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2}, // outer ethertype
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP},
		bpf.LoadAbsolute{Off: 23, Size: 1}, // outer protocol
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP},
		bpf.LoadAbsolute{Off: 20, Size: 2}, // outer fragment offset
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff},
		bpf.LoadMemShift{Off: 14},          // X = outer IHL·4
		bpf.LoadIndirect{Off: 16, Size: 2}, // outer UDP destination port
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(m.UDPPort())},
		bpf.LoadIndirect{Off: 22, Size: 1}, // VXLAN flags
		bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: 0x08},
	}
	if m.VNI != nil {
		hdr = append(hdr,
			bpf.LoadIndirect{Off: 26, Size: 4}, // VNI and the reserved byte after it
			bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 8},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: *m.VNI})
	}
	hdr = append(hdr,
		bpf.LoadIndirect{Off: 42, Size: 2}, // inner ethertype
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP},
		bpf.LoadIndirect{Off: 53, Size: 1}, // inner protocol
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP},
		bpf.LoadIndirect{Off: 50, Size: 2}, // inner fragment offset
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff},
		bpf.LoadIndirect{Off: 44, Size: 1}, // inner version and IHL
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0f},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2},
		bpf.ALUOpX{Op: bpf.ALUOpAdd},
		bpf.TAX{},                          // X = outer IHL + inner IHL
		bpf.LoadIndirect{Off: 44, Size: 2}, // inner UDP source port
	)
	n := len(hdr)
	dropAt := n + np + 1 + np
	acceptAt := dropAt + 1
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	// Every header jump leaves for drop when its condition holds.
	for i, in := range hdr {
		if j, ok := in.(bpf.JumpIf); ok {
			j.SkipTrue = skip(i, dropAt)
			hdr[i] = j
		}
	}
	ins := append(make([]bpf.Instruction, 0, dropAt+2), hdr...)
	for i, port := range ports {
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(port), SkipTrue: skip(n+i, acceptAt)})
	}
	ins = append(ins, bpf.LoadIndirect{Off: 46, Size: 2}) // inner UDP destination port
	for i, port := range ports {
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(port), SkipTrue: skip(n+np+1+i, acceptAt)})
	}
	ins = append(ins, bpf.RetConstant{Val: drop}, bpf.RetConstant{Val: accept})
	return assemble(ins)
}
