//go:build linux

package tstamp

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Packet types (sll_pkttype) reported by RecvPacket.
const (
	PacketHost      uint8 = unix.PACKET_HOST      // unicast to this host
	PacketBroadcast uint8 = unix.PACKET_BROADCAST // link-layer broadcast
	PacketMulticast uint8 = unix.PACKET_MULTICAST // link-layer multicast
	PacketOtherHost uint8 = unix.PACKET_OTHERHOST // to someone else (promiscuous/mirror)
	PacketOutgoing  uint8 = unix.PACKET_OUTGOING  // sent by this host
)

// PacketConn is a raw AF_PACKET capture socket (ETH_P_ALL, whole Ethernet
// frames) bound to one interface. It sees both directions; outgoing frames
// carry SW stamps at most (TX HW stamps go only to the sending socket).
//
// RecvPacket does not allocate and must not run concurrently with itself.
// Close does not wake a blocked RecvPacket (AF_PACKET has no shutdown):
// use Poll with a timeout or a non-blocking socket.
type PacketConn struct {
	sock
	ifindex int
	ifname  string
	stamper Stamper // set only by a Device that emulates a NIC (tests)
	rx      struct {
		msg  unix.Msghdr
		iov  unix.Iovec
		name unix.RawSockaddrLinklayer
		oob  [oobSize]byte
	}
}

// ListenPacket opens an AF_PACKET SOCK_RAW socket for ETH_P_ALL bound to
// ifindex (in the calling thread's network namespace). It needs
// CAP_NET_RAW (wraps os.ErrPermission otherwise). Timestamping is off
// until EnableTimestamping.
func ListenPacket(ifindex int, nonBlocking bool) (*PacketConn, error) {
	if ifindex <= 0 {
		return nil, fmt.Errorf("tstamp: AF_PACKET: invalid ifindex %d", ifindex)
	}
	flags := unix.SOCK_RAW | unix.SOCK_CLOEXEC
	if nonBlocking {
		flags |= unix.SOCK_NONBLOCK
	}
	proto := htons(unix.ETH_P_ALL)
	fd, err := unix.Socket(unix.AF_PACKET, flags, int(proto))
	if err != nil {
		return nil, fmt.Errorf("tstamp: socket(AF_PACKET, SOCK_RAW, ETH_P_ALL) (needs CAP_NET_RAW): %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tstamp: AF_PACKET bind to ifindex %d: %w", ifindex, wrapNoDev(err))
	}
	p := &PacketConn{ifindex: ifindex}
	p.fd = fd
	p.nonblock.Store(nonBlocking)
	p.rx.msg.Name = (*byte)(unsafe.Pointer(&p.rx.name))
	p.rx.msg.Iov = &p.rx.iov
	p.rx.msg.Iovlen = 1
	p.rx.msg.Control = &p.rx.oob[0]
	return p, nil
}

// Close closes the socket once no call is in progress.
func (p *PacketConn) Close() error { return p.close() }

// EnableTimestamping runs EnableWith with o (a Device): RX_SOFTWARE|
// SOFTWARE, plus RX_HARDWARE|RAW_HARDWARE in Hardware and Auto mode where
// the interface can (see EnableWith for the error contract).
func (p *PacketConn) EnableTimestamping(mode Mode, o Options) (Granted, error) {
	if !p.acquire() {
		return Granted{}, ErrClosed
	}
	defer p.release()
	g, err := EnableWith(p.fd, mode, o)
	p.stamper, p.ifname = stamperOf(o.Device, g), g.Ifname
	return g, err
}

// RecvPacket reads one frame into buf and returns its length, its packet
// type (PacketHost … PacketOutgoing) and its RX stamps. It blocks unless
// the socket is non-blocking. Errors: ErrWouldBlock, ErrTruncated (n is
// the bytes kept), ErrClosed, or the errno. It does not allocate.
func (p *PacketConn) RecvPacket(buf []byte) (n int, pkttype uint8, st Stamps, err error) {
	if len(buf) == 0 {
		return 0, 0, st, errEmptyBuf
	}
	if !p.acquire() {
		return 0, 0, st, ErrClosed
	}
	defer p.release()
	r := &p.rx
	r.iov.Base = &buf[0]
	r.iov.SetLen(len(buf))
	r.msg.Namelen = unix.SizeofSockaddrLinklayer
	r.msg.SetControllen(oobSize)
	r.msg.Flags = 0
	n, e := p.recvmsg(&r.msg, 0)
	r.iov.Base = nil
	if e != 0 {
		return 0, 0, st, errnoErr(e)
	}
	st, _ = ParseRx(r.oob[:r.msg.Controllen])
	if p.stamper != nil && st.HW == 0 && st.SW != 0 {
		st.HW = p.stamper.StampRX(p.ifname, st.SW)
	}
	if r.msg.Flags&unix.MSG_TRUNC != 0 {
		return n, r.name.Pkttype, st, ErrTruncated
	}
	return n, r.name.Pkttype, st, nil
}

// maxFilterPorts keeps the cBPF jump offsets (uint8) in range.
const maxFilterPorts = 64

// AttachUDPPortFilter installs a classic BPF socket filter that keeps only
// untagged Ethernet IPv4 UDP frames (first fragments) whose source or
// destination port is one of ports; everything else is dropped in the
// kernel. Frames queued before the filter was attached are discarded, so
// RecvPacket never returns an unfiltered frame. Errors: no ports or more
// than 64; the setsockopt errno.
func (p *PacketConn) AttachUDPPortFilter(ports ...uint16) error {
	prog, err := udpPortFilter(ports)
	if err != nil {
		return err
	}
	return p.attachFilter(prog)
}

// attachFilter installs prog and discards what was queued before it.
func (p *PacketConn) attachFilter(prog []unix.SockFilter) error {
	if !p.acquire() {
		return ErrClosed
	}
	defer p.release()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(p.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("tstamp: SO_ATTACH_FILTER: %w", err)
	}
	// Drain what arrived between bind and attach.
	var buf [64]byte
	for i := 0; i < 1<<16; i++ {
		_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(p.fd), uintptr(unsafe.Pointer(&buf[0])),
			uintptr(len(buf)), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		if e != 0 {
			break
		}
	}
	return nil
}

func checkFilterPorts(ports []uint16) error {
	if len(ports) == 0 {
		return errors.New("tstamp: UDP port filter: no ports given")
	}
	if len(ports) > maxFilterPorts {
		return fmt.Errorf("tstamp: UDP port filter: %d ports, at most %d", len(ports), maxFilterPorts)
	}
	return nil
}

// udpPortFilter assembles the cBPF program for AttachUDPPortFilter.
func udpPortFilter(ports []uint16) ([]unix.SockFilter, error) {
	if err := checkFilterPorts(ports); err != nil {
		return nil, err
	}
	const (
		accept = 0x40000 // keep up to 256 KiB of the frame
		drop   = 0
	)
	np := len(ports)
	// Layout: 8 header instructions (ethertype, protocol, fragment, X =
	// IP header length, load source port), np source compares, load
	// destination port, np destination compares, ret drop, ret accept.
	// Jump offsets count from the instruction after the jump.
	ins := make([]bpf.Instruction, 0, 2*np+11)
	hdr := 8
	dropAt := hdr + np + 1 + np
	acceptAt := dropAt + 1
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	ins = append(ins,
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP, SkipTrue: skip(1, dropAt)},
		bpf.LoadAbsolute{Off: 23, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: skip(3, dropAt)},
		bpf.LoadAbsolute{Off: 20, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: skip(5, dropAt)},
		bpf.LoadMemShift{Off: 14},
		bpf.LoadIndirect{Off: 14, Size: 2},
	)
	for i, port := range ports {
		at := hdr + i
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(port), SkipTrue: skip(at, acceptAt)})
	}
	ins = append(ins, bpf.LoadIndirect{Off: 16, Size: 2})
	for i, port := range ports {
		at := hdr + np + 1 + i
		ins = append(ins, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(port), SkipTrue: skip(at, acceptAt)})
	}
	ins = append(ins, bpf.RetConstant{Val: drop}, bpf.RetConstant{Val: accept})
	return assemble(ins)
}

func assemble(ins []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(ins)
	if err != nil {
		return nil, fmt.Errorf("tstamp: UDP port filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// SetPromiscuous puts the interface in promiscuous mode for as long as this
// socket lives (PACKET_MR_PROMISC membership: the kernel undoes it on Close
// or crash, so nothing needs journaling). A mirror/SPAN capture port needs
// it: mirrored frames are addressed to other MACs.
func (p *PacketConn) SetPromiscuous(on bool) error {
	if !p.acquire() {
		return ErrClosed
	}
	defer p.release()
	opt, what := unix.PACKET_ADD_MEMBERSHIP, "PACKET_ADD_MEMBERSHIP"
	if !on {
		opt, what = unix.PACKET_DROP_MEMBERSHIP, "PACKET_DROP_MEMBERSHIP"
	}
	mr := unix.PacketMreq{Ifindex: int32(p.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(p.fd, unix.SOL_PACKET, opt, &mr); err != nil {
		return fmt.Errorf("tstamp: %s(PACKET_MR_PROMISC) ifindex %d: %w", what, p.ifindex, err)
	}
	return nil
}

// Stats returns how many frames passed the filter and how many the kernel
// dropped for lack of receive buffer since the previous call
// (PACKET_STATISTICS; reading resets the counters). Report drops with
// every capture: a dropped frame is a missing sample, not a fast one.
func (p *PacketConn) Stats() (packets, drops uint32, err error) {
	if !p.acquire() {
		return 0, 0, ErrClosed
	}
	defer p.release()
	s, err := unix.GetsockoptTpacketStats(p.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, 0, fmt.Errorf("tstamp: PACKET_STATISTICS: %w", err)
	}
	return s.Packets, s.Drops, nil
}
