// Package reflector is rig's floor responder: an XDP program that answers
// rig's requests in the driver, before the kernel's stack or any process
// sees them (docs/probes.md#reflector-floor). It is built here instruction
// by instruction (cilium/ebpf's asm), so rig needs no compiler to load it.
//
// The program answers an IPv4 UDP datagram (no IP options, not a fragment)
// to the responder's address and port whose payload is a version 2 rig
// request of this run, arm and round: it turns it around in place as the
// Go responder's socket would reply — from the interface's MAC and the
// responder's address and port, to the request's source (or the reply
// group) — and sends it back out of the interface (XDP_TX). Everything
// else goes on to the stack (XDP_PASS); what went to the responder's port
// is counted as passed.
package reflector

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf/asm"

	"github.com/rig-project/rig/internal/wire"
)

// Params are what the program compares and writes, fixed when it is built.
type Params struct {
	// To is where requests go: the group or the unicast address, and port.
	To netip.AddrPort
	// Reply is where replies go: zero for back to the request's source,
	// else a multicast group:port.
	Reply netip.AddrPort
	// From is the replies' source address (the interface's) and MAC.
	From    netip.Addr
	FromMAC net.HardwareAddr
	// TTL of the replies: the Go responder's socket's (64 unicast, 1 to
	// a group).
	TTL uint8
	// The requests answered: this run's, arm's and round's.
	RunID      uint64
	Arm, Round uint32
	// ID is the responder id every reply carries.
	ID uint32
}

// The counters' slots in the per-CPU array.
const (
	Answered = iota // requests turned around (XDP_TX)
	Passed          // datagrams to the port that were not this run's requests (XDP_PASS)
	nCounters
)

// Frame offsets of what the program reads and writes: Ethernet, an IPv4
// header of 20 bytes (IHL 5), UDP, then the rig payload.
const (
	ethLen   = 14
	ipOff    = ethLen
	udpOff   = ipOff + 20
	wireOff  = udpOff + 8
	frameMin = wireOff + wire.HeaderLen // the shortest frame answered
)

// ne is a value in the byte order a load from the packet gives it: the
// program compares and stores packet fields as they lie in memory.
func ne16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

func ne32(b []byte) int64 { return int64(binary.NativeEndian.Uint32(b)) }

// Check refuses Params the program cannot be built for.
func (p Params) Check() error {
	switch {
	case !p.To.Addr().Is4() || p.To.Port() == 0:
		return fmt.Errorf("reflector: requests to %v: want an IPv4 address and a port", p.To)
	case p.Reply.IsValid() && (!p.Reply.Addr().Is4() || !p.Reply.Addr().IsMulticast()):
		return fmt.Errorf("reflector: replies to %v: want unicast or an IPv4 group", p.Reply)
	case !p.From.Is4():
		return fmt.Errorf("reflector: reply source %v: want an IPv4 address", p.From)
	case len(p.FromMAC) != 6:
		return fmt.Errorf("reflector: interface MAC %v: want an Ethernet address", p.FromMAC)
	case p.TTL == 0:
		return fmt.Errorf("reflector: TTL 0")
	}
	return nil
}

// Hook is where the program runs: XDP (ifindex 0), or tc ingress of
// interface Ifindex, sending the reply out of its egress (bpf_redirect).
type Hook struct{ TCIfindex int }

// The hook's context offsets and verdicts.
func (h Hook) ctx() (data, end int16, pass int32) {
	if h.TCIfindex != 0 {
		return 76, 80, 0 // __sk_buff data, data_end; TC_ACT_OK
	}
	return 0, 4, 2 // xdp_md data, data_end; XDP_PASS
}

// Instructions is the program for p at hook h; counters is the fd of the
// per-CPU array of nCounters uint64 it counts in.
func Instructions(p Params, counters int, h Hook) asm.Instructions {
	const (
		data = asm.R2 // packet start
		end  = asm.R3
		v    = asm.R4 // a loaded field
		w    = asm.R5
		sum  = asm.R6
	)
	to, from := p.To.Addr().As4(), p.From.As4()
	run := make([]byte, 8)
	binary.BigEndian.PutUint64(run, p.RunID)
	u32 := func(x uint32) int64 { b := binary.BigEndian.AppendUint32(nil, x); return ne32(b) }
	magic := []byte{'R', 'I', 'G', 0xA7}
	answer := int32(3) // XDP_TX
	if h.TCIfindex != 0 {
		answer = 7 // TC_ACT_REDIRECT, what bpf_redirect returns
	}
	dataOff, endOff, pass := h.ctx()
	var insns asm.Instructions
	if h.TCIfindex != 0 { // the headers into the linear part; a failure fails the bounds check
		insns = append(insns, asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R2, frameMin), asm.FnSkbPullData.Call(), asm.Mov.Reg(asm.R1, asm.R6))
	}
	insns = append(insns,
		asm.LoadMem(data, asm.R1, dataOff, asm.Word),
		asm.LoadMem(end, asm.R1, endOff, asm.Word),
		asm.Mov.Reg(v, data),
		asm.Add.Imm(v, frameMin),
		asm.JGT.Reg(v, end, "pass"), // too short to be a request
		asm.LoadMem(v, data, 12, asm.Half),
		asm.JNE.Imm(v, ne16(0x0800), "pass"), // not IPv4 (a VLAN tag too)
		asm.LoadMem(v, data, ipOff, asm.Byte),
		asm.JNE.Imm(v, 0x45, "pass"), // IP options: the stack's
		asm.LoadMem(v, data, ipOff+9, asm.Byte),
		asm.JNE.Imm(v, 17, "pass"), // not UDP
		asm.LoadMem(v, data, udpOff+2, asm.Half),
		asm.JNE.Imm(v, ne16(p.To.Port()), "pass"),
		asm.LoadMem(v, data, ipOff+16, asm.Word),
		asm.LoadImm(w, ne32(to[:]), asm.DWord),
		asm.JNE.Reg(v, w, "pass"),
		// To the responder's address and port: answered or counted.
		asm.LoadMem(v, data, ipOff+6, asm.Half),
		asm.And.Imm(v, ne16(0x3fff)), // MF or a fragment offset
		asm.JNE.Imm(v, 0, "foreign"),
		asm.LoadMem(v, data, wireOff, asm.Word),
		asm.LoadImm(w, ne32(magic), asm.DWord),
		asm.JNE.Reg(v, w, "foreign"),
		asm.LoadMem(v, data, wireOff+4, asm.Half), // version, type
		asm.JNE.Imm(v, ne16(wire.Version<<8|uint16(wire.Request)), "foreign"),
		// The payload's length field is the UDP payload's length.
		asm.LoadMem(v, data, wireOff+6, asm.Half),
		asm.HostTo(asm.BE, v, asm.Half),
		asm.LoadMem(w, data, udpOff+4, asm.Half),
		asm.HostTo(asm.BE, w, asm.Half),
		asm.Sub.Imm(w, 8),
		asm.JNE.Reg(v, w, "foreign"),
		// …and within the frame, as the stack would have it.
		asm.And.Imm(v, 0xffff),
		asm.Add.Reg(v, data),
		asm.Add.Imm(v, wireOff),
		asm.JGT.Reg(v, end, "foreign"),
		asm.LoadMem(v, data, wireOff+8, asm.DWord),
		asm.LoadImm(w, int64(binary.NativeEndian.Uint64(run)), asm.DWord),
		asm.JNE.Reg(v, w, "foreign"),
		asm.LoadMem(v, data, wireOff+16, asm.Word),
		asm.LoadImm(w, u32(p.Arm), asm.DWord),
		asm.JNE.Reg(v, w, "foreign"),
		asm.LoadMem(v, data, wireOff+20, asm.Word),
		asm.LoadImm(w, u32(p.Round), asm.DWord),
		asm.JNE.Reg(v, w, "foreign"),
	)
	// The request turned around. Ethernet: to the request's source (or
	// the reply group's MAC), from the interface.
	if p.Reply.IsValid() {
		g := p.Reply.Addr().As4()
		mac := []byte{0x01, 0x00, 0x5e, g[1] & 0x7f, g[2], g[3]}
		insns = append(insns,
			asm.StoreImm(data, 0, ne32(mac[:4]), asm.Word),
			asm.StoreImm(data, 4, int64(ne16(binary.BigEndian.Uint16(mac[4:]))), asm.Half))
	} else {
		insns = append(insns,
			asm.LoadMem(v, data, 6, asm.Word),
			asm.StoreMem(data, 0, v, asm.Word),
			asm.LoadMem(v, data, 10, asm.Half),
			asm.StoreMem(data, 4, v, asm.Half))
	}
	insns = append(insns,
		asm.StoreImm(data, 6, ne32(p.FromMAC[:4]), asm.Word),
		asm.StoreImm(data, 10, int64(ne16(binary.BigEndian.Uint16(p.FromMAC[4:]))), asm.Half),
		asm.StoreImm(data, ipOff+8, int64(p.TTL), asm.Byte))
	// IP: to the request's source (or the group), from the responder's
	// address. UDP: from the responder's port, to the request's (or the
	// group's).
	if p.Reply.IsValid() {
		g := p.Reply.Addr().As4()
		insns = append(insns,
			asm.StoreImm(data, ipOff+16, ne32(g[:]), asm.Word),
			asm.StoreImm(data, udpOff+2, int64(ne16(p.Reply.Port())), asm.Half))
	} else {
		insns = append(insns,
			asm.LoadMem(v, data, ipOff+12, asm.Word),
			asm.StoreMem(data, ipOff+16, v, asm.Word),
			asm.LoadMem(v, data, udpOff, asm.Half),
			asm.StoreMem(data, udpOff+2, v, asm.Half))
	}
	insns = append(insns,
		asm.StoreImm(data, ipOff+12, ne32(from[:]), asm.Word),
		asm.StoreImm(data, udpOff, int64(ne16(p.To.Port())), asm.Half),
		// UDP checksum 0: none, which IPv4 allows (RFC 768); the reply's
		// bytes past the headers are the request's but for six.
		asm.StoreImm(data, udpOff+6, 0, asm.Half),
		asm.StoreImm(data, wireOff+5, int64(wire.Reply), asm.Byte),
		asm.StoreImm(data, wireOff+40, u32(p.ID), asm.Word),
		// The IP header checksum, summed anew over the 20 bytes (the
		// one's complement sum is the same in either byte order).
		asm.StoreImm(data, ipOff+10, 0, asm.Half),
		asm.Mov.Imm(sum, 0),
	)
	for off := int16(0); off < 20; off += 2 {
		insns = append(insns, asm.LoadMem(v, data, ipOff+off, asm.Half), asm.Add.Reg(sum, v))
	}
	for range 2 {
		insns = append(insns, asm.Mov.Reg(v, sum), asm.RSh.Imm(v, 16), asm.And.Imm(sum, 0xffff), asm.Add.Reg(sum, v))
	}
	insns = append(insns,
		asm.Xor.Imm(sum, 0xffff),
		asm.StoreMem(data, ipOff+10, sum, asm.Half),
		asm.Mov.Imm(asm.R6, Answered),
		asm.Mov.Imm(asm.R7, answer), // XDP_TX, or bpf_redirect below
		asm.Ja.Label("count"),
		asm.Mov.Imm(asm.R6, Passed).WithSymbol("foreign"),
		asm.Mov.Imm(asm.R7, pass),
		// count: counters[R6]++, then return R7.
		asm.StoreMem(asm.RFP, -4, asm.R6, asm.Word).WithSymbol("count"),
		asm.LoadMapPtr(asm.R1, counters),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.JNE.Imm(asm.R7, answer, "ret").WithSymbol("out"),
	)
	if h.TCIfindex != 0 { // out of the interface the request came in by
		insns = append(insns, asm.Mov.Imm(asm.R1, int32(h.TCIfindex)), asm.Mov.Imm(asm.R2, 0), asm.FnRedirect.Call(), asm.Return())
	}
	return append(insns,
		asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("ret"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, pass).WithSymbol("pass"),
		asm.Return(),
	)
}
