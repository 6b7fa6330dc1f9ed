//go:build linux

package tstamp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobSize is the control buffer per receive path: room for a 48-byte
// timestamping message, a sock_extended_err and PKTINFO with slack.
const oobSize = 256

// Keying says what the key of a TX stamp means on a Conn.
type Keying uint8

const (
	// KeyNone: OPT_ID is not enabled; TX stamps carry no usable key.
	KeyNone Keying = iota
	// KeyPerSend: every send carries SCM_TS_OPT_ID = key (kernel ≥ 6.13),
	// so the stamp's Key is exactly the key passed to SendTo.
	KeyPerSend
	// KeyCounter: the kernel numbers datagrams 0, 1, 2, … (plain OPT_ID);
	// Conn maps that number back to the key passed to SendTo for the last
	// counterRing sends, so TxStamp.Key still is the SendTo key.
	KeyCounter
)

func (k Keying) String() string {
	switch k {
	case KeyNone:
		return "none"
	case KeyPerSend:
		return "SCM_TS_OPT_ID"
	case KeyCounter:
		return "OPT_ID counter"
	}
	return fmt.Sprintf("Keying(%d)", uint8(k))
}

// MsgDontWait is the recvmsg flag for Recv that makes one call
// non-blocking (busy-spin loops on a blocking socket).
const MsgDontWait = unix.MSG_DONTWAIT

// counterRing is how many recent sends KeyCounter mode can map back.
const counterRing = 8192

// ErrUnknownKey is returned by RecvErr in KeyCounter mode when a stamp's
// kernel counter is older than the last counterRing sends (or never sent);
// the stamp is returned with Key set to the raw kernel counter.
var ErrUnknownKey = errors.New("tstamp: TX stamp counter not among recent sends")

// ErrNotTimestamp is returned by RecvErr for an error-queue entry that is not
// a TX timestamp (an ICMP error, for instance). Keep draining.
var ErrNotTimestamp = errors.New("tstamp: error queue entry is not a timestamp")

// Conn is an IPv4 UDP socket for the sender and responder hot paths.
//
// Recv, RecvErr and SendTo each own preallocated buffers and do not
// allocate. Each of them may run on its own goroutine or locked OS thread
// (e.g. sender thread, TX-stamp reader, reply receiver), but no method may
// run concurrently with itself. Close may be called at any time: it wakes
// blocked calls and the descriptor is released when the last call returns.
type Conn struct {
	sock

	rx struct {
		msg  unix.Msghdr
		iov  unix.Iovec
		name unix.RawSockaddrInet4
		oob  [oobSize]byte
	}
	eq struct {
		msg unix.Msghdr
		iov unix.Iovec
		buf [64]byte
		oob [oobSize]byte
	}
	tx struct {
		msg  unix.Msghdr
		iov  unix.Iovec
		name unix.RawSockaddrInet4
		oob  [32]byte // one cmsg with a u32: CmsgSpace(4) = 24 on 64-bit
	}

	keying    atomic.Uint32 // Keying
	counter   uint32        // KeyCounter: next kernel key (touched by SendTo only)
	perSendOK bool          // a keyed send succeeded: never switch to KeyCounter (SendTo only)
	ring      [counterRing]atomic.Uint64
	granted   Granted
	sched     bool    // granted.TxSched(): the SCHED stamp is the software TX stamp
	stamper   Stamper // set only by a Device that emulates a NIC (tests)
}

// UDPOptions configure ListenUDP.
type UDPOptions struct {
	// Device binds the socket to an interface (SO_BINDTODEVICE). It pins
	// egress and lets EnableWith check the NIC's capabilities. Needs
	// CAP_NET_RAW unless the kernel allows unprivileged binding.
	Device string
	// ReuseAddr sets SO_REUSEADDR (several receivers of one multicast port).
	ReuseAddr bool
	// NonBlocking opens the socket with O_NONBLOCK (busy-spin loops).
	NonBlocking bool
}

// ListenUDP opens an IPv4 UDP socket bound to laddr (0.0.0.0:0 for any
// address and an ephemeral port). Timestamping is off until
// EnableTimestamping.
func ListenUDP(laddr netip.AddrPort, o UDPOptions) (*Conn, error) {
	if !laddr.Addr().Is4() && !laddr.Addr().Is4In6() {
		return nil, fmt.Errorf("tstamp: listen %s: only IPv4 is supported", laddr)
	}
	flags := unix.SOCK_DGRAM | unix.SOCK_CLOEXEC
	if o.NonBlocking {
		flags |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_INET, flags, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("tstamp: socket(AF_INET, SOCK_DGRAM): %w", err)
	}
	fail := func(what string, err error) (*Conn, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("tstamp: listen %s: %s: %w", laddr, what, err)
	}
	if o.ReuseAddr {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("SO_REUSEADDR", err)
		}
	}
	if o.Device != "" {
		if err := unix.BindToDevice(fd, o.Device); err != nil {
			return fail("SO_BINDTODEVICE "+o.Device, wrapNoDev(err))
		}
	}
	sa := &unix.SockaddrInet4{Port: int(laddr.Port()), Addr: laddr.Addr().Unmap().As4()}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	c := newConn(fd)
	c.nonblock.Store(o.NonBlocking)
	return c, nil
}

func newConn(fd int) *Conn {
	c := &Conn{}
	c.fd = fd
	c.shutdown = true
	c.rx.msg.Name = (*byte)(unsafe.Pointer(&c.rx.name))
	c.rx.msg.Iov = &c.rx.iov
	c.rx.msg.Iovlen = 1
	c.rx.msg.Control = &c.rx.oob[0]

	c.eq.iov.Base = &c.eq.buf[0]
	c.eq.iov.SetLen(len(c.eq.buf))
	c.eq.msg.Iov = &c.eq.iov
	c.eq.msg.Iovlen = 1
	c.eq.msg.Control = &c.eq.oob[0]

	c.tx.name.Family = unix.AF_INET
	c.tx.msg.Name = (*byte)(unsafe.Pointer(&c.tx.name))
	c.tx.msg.Namelen = unix.SizeofSockaddrInet4
	c.tx.msg.Iov = &c.tx.iov
	c.tx.msg.Iovlen = 1
	// The SCM_TS_OPT_ID header is constant; only the key changes per send.
	h := (*unix.Cmsghdr)(unsafe.Pointer(&c.tx.oob[0]))
	h.Level = unix.SOL_SOCKET
	h.Type = unix.SCM_TS_OPT_ID
	h.SetLen(unix.CmsgLen(4))
	return c
}

// Close shuts the socket down (waking blocked Recv and Poll calls, which
// then return ErrClosed or a zero-length read) and closes it once no call is
// in progress. A second Close returns ErrClosed.
func (c *Conn) Close() error { return c.close() }

// LocalAddr returns the bound address (useful after binding port 0).
func (c *Conn) LocalAddr() (netip.AddrPort, error) {
	if !c.acquire() {
		return netip.AddrPort{}, ErrClosed
	}
	defer c.release()
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("tstamp: getsockname: %w", err)
	}
	s4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("tstamp: getsockname: not IPv4")
	}
	return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), uint16(s4.Port)), nil
}

// EnableTimestamping runs Enable on the socket and sets up TX keying:
// KeyPerSend when OPT_ID was granted (downgraded to KeyCounter by the first
// send the kernel refuses), KeyNone otherwise. Call it before the first
// send: the kernel's OPT_ID counter starts at the first enable and is never
// reset, so KeyCounter mapping is only right from then on. o (see
// EnableWith) adds optional bits such as FlagTxSched, or a Device.
func (c *Conn) EnableTimestamping(mode Mode, o Options) (Granted, error) {
	if !c.acquire() {
		return Granted{}, ErrClosed
	}
	defer c.release()
	g, err := EnableWith(c.fd, mode, o)
	c.stamper = stamperOf(o.Device, g)
	if err != nil {
		return g, err
	}
	c.granted, c.sched = g, g.TxSched()
	if g.Flags&FlagOptID != 0 {
		c.keying.CompareAndSwap(uint32(KeyNone), uint32(KeyPerSend))
	}
	return g, nil
}

// Granted returns what the last EnableTimestamping obtained.
func (c *Conn) Granted() Granted { return c.granted }

// Keying reports how TX stamps are keyed right now.
func (c *Conn) Keying() Keying { return Keying(c.keying.Load()) }

// JoinGroup joins the IPv4 multicast group on the interface with ifindex
// (IP_ADD_MEMBERSHIP with ip_mreqn).
func (c *Conn) JoinGroup(group netip.Addr, ifindex int) error {
	if !group.Is4() || !group.IsMulticast() {
		return fmt.Errorf("tstamp: join %s: not an IPv4 multicast group", group)
	}
	if !c.acquire() {
		return ErrClosed
	}
	defer c.release()
	mr := unix.IPMreqn{Multiaddr: group.As4(), Ifindex: int32(ifindex)}
	if err := unix.SetsockoptIPMreqn(c.fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &mr); err != nil {
		return fmt.Errorf("tstamp: join %s on ifindex %d: %w", group, ifindex, wrapNoDev(err))
	}
	return nil
}

// SetMulticastInterface selects the egress interface for multicast
// (IP_MULTICAST_IF with ip_mreqn).
func (c *Conn) SetMulticastInterface(ifindex int) error {
	if !c.acquire() {
		return ErrClosed
	}
	defer c.release()
	mr := unix.IPMreqn{Ifindex: int32(ifindex)}
	if err := unix.SetsockoptIPMreqn(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &mr); err != nil {
		return fmt.Errorf("tstamp: IP_MULTICAST_IF ifindex %d: %w", ifindex, wrapNoDev(err))
	}
	return nil
}

// SetMulticastLoop sets IP_MULTICAST_LOOP. Turn it off on a sender: the
// looped copy has no HW stamp and would be read as a reply.
func (c *Conn) SetMulticastLoop(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return c.setInt(unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, v, "IP_MULTICAST_LOOP")
}

// SetMulticastTTL sets IP_MULTICAST_TTL (1..255).
func (c *Conn) SetMulticastTTL(ttl int) error {
	if ttl < 0 || ttl > 255 {
		return fmt.Errorf("tstamp: multicast TTL %d out of range 0..255", ttl)
	}
	return c.setInt(unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, ttl, "IP_MULTICAST_TTL")
}

// SetRecvTimeout bounds a blocking receive (SO_RCVTIMEO): Recv then
// returns EAGAIN after d with nothing to read.
func (c *Conn) SetRecvTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("tstamp: SO_RCVTIMEO: %w", err)
	}
	return nil
}

// recvmsg issues one recvmsg, without scheduler hand-off when it cannot
// block (busy-spin loops on a locked thread).
func (s *sock) recvmsg(msg *unix.Msghdr, flags int) (int, syscall.Errno) {
	var n uintptr
	var e syscall.Errno
	if flags&(unix.MSG_DONTWAIT|unix.MSG_ERRQUEUE) != 0 || s.nonblock.Load() {
		n, _, e = unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(msg)), uintptr(flags))
	} else {
		n, _, e = unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(msg)), uintptr(flags))
	}
	return int(n), e
}

// Recv reads one datagram into buf with its sender and RX stamps. flags are
// recvmsg flags (MsgDontWait, or 0 to block unless the socket is
// non-blocking). It does not allocate. Errors: ErrWouldBlock when nothing
// is queued, ErrTruncated (with n = len(buf)) when the datagram did not fit,
// ErrClosed after Close; otherwise the errno. A packet without stamps (e.g.
// a multicast packet the NIC did not stamp) has zero Stamps and no error.
func (c *Conn) Recv(buf []byte, flags int) (n int, from netip.AddrPort, st Stamps, err error) {
	if len(buf) == 0 {
		return 0, from, st, errEmptyBuf
	}
	if !c.acquire() {
		return 0, from, st, ErrClosed
	}
	defer c.release()
	r := &c.rx
	r.iov.Base = &buf[0]
	r.iov.SetLen(len(buf))
	r.msg.Namelen = unix.SizeofSockaddrInet4
	r.msg.SetControllen(oobSize)
	r.msg.Flags = 0
	n, e := c.recvmsg(&r.msg, flags)
	r.iov.Base = nil // do not keep the caller's buffer alive
	if e != 0 {
		return 0, from, st, errnoErr(e)
	}
	if r.msg.Namelen >= unix.SizeofSockaddrInet4 && r.name.Family == unix.AF_INET {
		from = netip.AddrPortFrom(netip.AddrFrom4(r.name.Addr), ntohs(r.name.Port))
	}
	st, _ = ParseRx(r.oob[:r.msg.Controllen])
	if c.stamper != nil && st.HW == 0 && st.SW != 0 && c.granted.HardwareRX() {
		st.HW = c.stamper.StampRX(c.granted.Ifname, st.SW)
	}
	if r.msg.Flags&unix.MSG_TRUNC != 0 {
		return n, from, st, ErrTruncated
	}
	if n == 0 && c.state.Load()&1 != 0 {
		return 0, from, st, ErrClosed // woken by Close's shutdown
	}
	return n, from, st, nil
}

var errEmptyBuf = errors.New("tstamp: empty receive buffer")

// RecvErr reads one entry from the socket's error queue without blocking
// (MSG_ERRQUEUE|MSG_DONTWAIT). Errors: ErrWouldBlock when the queue is
// empty; ErrNotTimestamp for an entry that is not a TX stamp; ErrUnknownKey
// in KeyCounter mode when the counter cannot be mapped back to a key. Drain
// it until ErrWouldBlock: the queue is charged to SO_RCVBUF and the kernel
// drops new stamps silently when it is full. It does not allocate.
func (c *Conn) RecvErr() (TxStamp, error) {
	if !c.acquire() {
		return TxStamp{}, ErrClosed
	}
	defer c.release()
	q := &c.eq
	q.msg.SetControllen(oobSize)
	q.msg.Flags = 0
	_, e := c.recvmsg(&q.msg, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
	if e != 0 {
		return TxStamp{}, errnoErr(e)
	}
	ts, ok := ParseErrqueue(q.oob[:q.msg.Controllen])
	if !ok {
		return TxStamp{}, ErrNotTimestamp
	}
	if c.stamper != nil && ts.Kind == KindSnd && ts.SW != 0 {
		if ts.HW == 0 && c.granted.HardwareTX() {
			ts.HW = c.stamper.StampTX(c.granted.Ifname, ts.SW)
		}
		ts.SW = c.stamper.StampSWTX(c.granted.Ifname, ts.SW)
	}
	if Keying(c.keying.Load()) == KeyCounter {
		v := c.ring[ts.Key%counterRing].Load()
		if v&^0xFFFFFFFF != ringEntry(ts.Key, 0) {
			return ts, ErrUnknownKey
		}
		ts.Key = uint32(v)
	}
	return ts, nil
}

// SendTo sends buf to addr. With timestamping enabled the TX stamps of this
// datagram carry key: the kernel gets SCM_TS_OPT_ID = key (Linux ≥ 6.13).
// When the kernel refuses that control message (EINVAL) on the first keyed
// send, SendTo retries once without it; if that works the Conn switches to
// KeyCounter for good (Keying reports it) and keeps mapping the kernel's
// counter back to key. In KeyCounter mode a send that fails after the
// kernel numbered the datagram would shift the mapping; SCM_TS_OPT_ID
// kernels do not have that problem.
// It does not allocate. Errors are the sendmsg errno (ErrWouldBlock on a
// full non-blocking socket) or ErrClosed.
func (c *Conn) SendTo(buf []byte, to netip.AddrPort, key uint32) error {
	if !to.Addr().Is4() && !to.Addr().Is4In6() {
		return errNotIPv4
	}
	if !c.acquire() {
		return ErrClosed
	}
	defer c.release()
	t := &c.tx
	t.name.Port = htons(to.Port())
	t.name.Addr = to.Addr().Unmap().As4()
	if len(buf) > 0 {
		t.iov.Base = &buf[0]
	}
	t.iov.SetLen(len(buf))
	e := c.send(key)
	t.iov.Base = nil // do not keep the caller's buffer alive
	if e != 0 && c.state.Load()&1 != 0 {
		return ErrClosed // Close's shutdown made this send fail (EPIPE)
	}
	return errnoErr(e)
}

func (c *Conn) send(key uint32) syscall.Errno {
	t := &c.tx
	switch Keying(c.keying.Load()) {
	case KeyPerSend:
		nativeEndian.PutUint32(t.oob[cmsgHdrLen:], key)
		t.msg.Control = &t.oob[0]
		t.msg.SetControllen(unix.CmsgSpace(4))
		e := c.sendmsg()
		if e == 0 {
			c.perSendOK = true
		}
		if e != unix.EINVAL || c.perSendOK {
			// Once keyed sends worked, switching would mis-map the stamps
			// still in flight: report the error instead.
			return e
		}
		// The kernel predates SCM_TS_OPT_ID (or refuses it): retry plain and
		// switch modes only if that works; otherwise the cmsg was not the cause.
		// Switch first: a concurrent RecvErr may see the stamp before
		// sendmsg returns.
		c.keying.Store(uint32(KeyCounter))
		if e := c.sendCounted(key); e != 0 {
			c.keying.Store(uint32(KeyPerSend))
			return e
		}
		return 0
	case KeyCounter:
		return c.sendCounted(key)
	}
	t.msg.Control = nil
	t.msg.SetControllen(0)
	return c.sendmsg()
}

// sendCounted sends without a key cmsg in KeyCounter mode. The ring entry
// for the kernel's next counter is written before sendmsg, because the
// stamp can be on the error queue (and read by another thread) before
// sendmsg returns; a failed send leaves the counter, so the next send
// overwrites the entry.
func (c *Conn) sendCounted(key uint32) syscall.Errno {
	t := &c.tx
	t.msg.Control = nil
	t.msg.SetControllen(0)
	k := c.counter
	c.ring[k%counterRing].Store(ringEntry(k, key))
	if e := c.sendmsg(); e != 0 {
		return e
	}
	c.counter++
	return 0
}

var errNotIPv4 = errors.New("tstamp: destination is not IPv4")

// Ring entry layout: bit 63 = valid, bits 32..50 = counter>>13 (the low 13
// bits are the slot index), bits 0..31 = the caller's key.
const ringValid = 1 << 63

func ringEntry(counter, key uint32) uint64 {
	return ringValid | uint64(counter/counterRing)<<32 | uint64(key)
}

func (c *Conn) sendmsg() syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&c.tx.msg)), 0)
	return e
}

func ntohs(v uint16) uint16 { return htons(v) }

// DrainTx reads the error queue until it is empty and calls f for every
// transmit (SND) stamp, and for every SCHED stamp where that is the
// software TX stamp (Granted.TxSched); other entries (ICMP errors, keys
// the counter mode cannot map back) are skipped. It does not allocate when
// f is a function value made once, outside the hot path.
func (c *Conn) DrainTx(f func(TxStamp)) { c.ReadTx(f, nil) }

// ReadTx is DrainTx that stops as soon as filed reports true (checked
// before each read), so a loop waiting for one stamp makes one recvmsg for
// it, not a second that finds the queue empty. It reports whether filed
// did (false: the queue ran empty first; always false with filed nil). It
// does not allocate when f and filed are function values made once.
func (c *Conn) ReadTx(f func(TxStamp), filed func() bool) bool {
	for {
		if filed != nil && filed() {
			return true
		}
		ts, err := c.RecvErr()
		switch {
		case err == nil:
		case errors.Is(err, ErrNotTimestamp), errors.Is(err, ErrUnknownKey):
			continue
		default:
			return false
		}
		if ts.Kind == KindSnd && c.sched {
			ts.SW = 0 // the column holds one kind of stamp: the SCHED one
		}
		if ts.Kind == KindSnd || ts.Kind == KindSched && c.sched {
			f(ts)
		}
	}
}
