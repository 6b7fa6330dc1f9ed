package tstamp

import (
	"golang.org/x/sys/unix"

	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/rig-project/rig/internal/testbin"
)

// nsPair is two fresh network namespaces joined by a veth pair:
// A (10.99.N.1, ifA) <-> B (10.99.N.2, ifB).
type nsPair struct {
	a, b         netns.NsHandle
	ifA, ifB     string
	idxA, idxB   int
	addrA, addrB netip.Addr
}

var nsSeq atomic.Int32

// onThread runs fn on a throw-away OS thread; with ns set it runs inside
// that namespace. The thread is never unlocked, so the runtime discards it.
func onThread(ns netns.NsHandle, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if ns.IsOpen() {
			if err := netns.Set(ns); err != nil {
				done <- err
				return
			}
		}
		done <- fn()
	}()
	return <-done
}

func newNSPair(t *testing.T) *nsPair {
	t.Helper()
	testbin.Integration(t)
	n := nsSeq.Add(1)
	tag := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	p := &nsPair{ifA: "rtsa" + tag, ifB: "rtsb" + tag,
		addrA: netip.AddrFrom4([4]byte{10, 99, byte(n), 1}), addrB: netip.AddrFrom4([4]byte{10, 99, byte(n), 2})}
	for _, x := range []struct {
		name string
		h    *netns.NsHandle
	}{{"rigts-a-" + tag, &p.a}, {"rigts-b-" + tag, &p.b}} {
		name := x.name
		err := onThread(netns.None(), func() error {
			h, err := netns.NewNamed(name)
			*x.h = h
			return err
		})
		if err != nil {
			t.Fatalf("netns %s: %v", name, err)
		}
		h := x.h
		t.Cleanup(func() {
			h.Close()
			if err := netns.DeleteNamed(name); err != nil {
				t.Errorf("delete netns %s: %v", name, err)
			}
		})
	}
	ha, err := netlink.NewHandleAt(p.a)
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	hb, err := netlink.NewHandleAt(p.b)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.ifA}, PeerName: p.ifB, PeerNamespace: netlink.NsFd(int(p.b))}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatalf("veth: %v", err)
	}
	for _, s := range []struct {
		h    *netlink.Handle
		name string
		addr netip.Addr
		idx  *int
	}{{ha, p.ifA, p.addrA, &p.idxA}, {hb, p.ifB, p.addrB, &p.idxB}} {
		l, err := s.h.LinkByName(s.name)
		if err != nil {
			t.Fatal(err)
		}
		*s.idx = l.Attrs().Index
		ip := net.IP(s.addr.AsSlice())
		if err := s.h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

const probePort = 47001

var probeGroup = netip.MustParseAddr("239.7.7.7")

type nsSockets struct {
	tx  *Conn       // sender in A
	rx  *Conn       // responder in B
	cap *PacketConn // capture on B's veth
}

func openSockets(t *testing.T, p *nsPair) *nsSockets {
	t.Helper()
	s := &nsSockets{}
	err := onThread(p.b, func() error {
		var err error
		s.rx, err = ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), probePort), UDPOptions{ReuseAddr: true})
		if err != nil {
			return err
		}
		if err := s.rx.JoinGroup(probeGroup, p.idxB); err != nil {
			return err
		}
		if _, err := s.rx.EnableTimestamping(Software, Options{}); err != nil {
			return err
		}
		s.cap, err = ListenPacket(p.idxB, false)
		if err != nil {
			return err
		}
		g, err := s.cap.EnableTimestamping(Auto, Options{})
		if err != nil {
			return err
		}
		if g.Ifname != p.ifB || g.Flags&FlagRawHardware != 0 || g.Flags&FlagRxSoftware == 0 {
			return fmt.Errorf("capture granted %s", g)
		}
		if err := s.cap.SetPromiscuous(true); err != nil {
			return err
		}
		return s.cap.AttachUDPPortFilter(probePort)
	})
	if s.rx != nil {
		t.Cleanup(func() { s.rx.Close() })
	}
	if s.cap != nil {
		t.Cleanup(func() { s.cap.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	err = onThread(p.a, func() error {
		var err error
		s.tx, err = ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), UDPOptions{Device: p.ifA})
		if err != nil {
			return err
		}
		if err := s.tx.SetMulticastInterface(p.idxA); err != nil {
			return err
		}
		if err := s.tx.SetMulticastLoop(false); err != nil {
			return err
		}
		if err := s.tx.SetMulticastTTL(1); err != nil {
			return err
		}
		_, err = s.tx.EnableTimestamping(Software, Options{})
		return err
	})
	if s.tx != nil {
		t.Cleanup(func() { s.tx.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seqPayload(seq uint32) []byte {
	b := make([]byte, 32)
	copy(b, "rigts")
	binary.BigEndian.PutUint32(b[8:], seq)
	return b
}

// udpPorts returns the UDP ports and payload seq of an IPv4 frame.
func udpPorts(f []byte) (src, dst uint16, seq uint32, ok bool) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 17 {
		return 0, 0, 0, false
	}
	ihl := int(f[14]&0xf) * 4
	u := f[14+ihl:]
	if len(u) < 8+12 {
		return binary.BigEndian.Uint16(u), binary.BigEndian.Uint16(u[2:]), 0, true
	}
	return binary.BigEndian.Uint16(u), binary.BigEndian.Uint16(u[2:]), binary.BigEndian.Uint32(u[8+8:]), true
}

type captured struct {
	pkttype  uint8
	src, dst uint16
	seq      uint32
	st       Stamps
}

// readCapture returns the frames queued; with until set it first waits
// (10 s at most) for the frame until accepts, and returns it and what is
// queued behind it. A frame is queued on B's veth before B's socket has
// it, and frames queue in order.
func readCapture(t *testing.T, c *PacketConn, until func(captured) bool) []captured {
	t.Helper()
	var out []captured
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(10 * time.Second); ; {
		wait := time.Duration(0)
		if until != nil {
			wait = time.Until(deadline)
		}
		ok, err := c.Poll(max(wait, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !ok && (until == nil || time.Now().After(deadline)) {
			return out
		}
		if !ok {
			continue // EINTR
		}
		n, pt, st, err := c.RecvPacket(buf)
		if err != nil {
			t.Fatal(err)
		}
		src, dst, seq, isUDP := udpPorts(buf[:n])
		if !isUDP {
			t.Fatalf("filter let a non-UDP/IPv4 frame through: % x", buf[:min(n, 40)])
		}
		out = append(out, captured{pt, src, dst, seq, st})
		if until != nil && until(out[len(out)-1]) {
			until = nil
		}
	}
}

// warmUpNS waits until B's responder socket sees RX SW stamps (the kernel
// enables RX stamping from a workqueue) and the fresh link passes traffic.
func warmUpNS(t *testing.T, s *nsSockets, to netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 256)
	for i := 0; i < 100; i++ {
		if err := s.tx.SendTo(seqPayload(0), to, 0); err != nil {
			t.Fatal(err)
		}
		ok, err := s.rx.Poll(200 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue // a fresh veth can drop the first frames
		}
		_, _, st, err := s.rx.Recv(buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		drainErr(s.tx)
		if st.SW != 0 {
			readCapture(t, s.cap, nil) // drop the warm-up frames
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no RX SW stamp after 100 warm-up packets")
}

func drainErr(c *Conn) {
	for {
		if _, err := c.RecvErr(); errors.Is(err, ErrWouldBlock) || errors.Is(err, ErrClosed) {
			return
		}
	}
}

func TestNetnsMulticastStamps(t *testing.T) {
	p := newNSPair(t)
	s := openSockets(t, p)
	if k := s.tx.Keying(); k != KeyPerSend {
		t.Fatalf("keying %s, want SCM_TS_OPT_ID on this kernel", k)
	}
	group := netip.AddrPortFrom(probeGroup, probePort)
	warmUpNS(t, s, group)
	txAddr, err := s.tx.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	const first, count = 5000, 5
	rxStamp := map[uint32]int64{}
	for seq := uint32(first); seq < first+count; seq++ {
		sent := time.Now().UnixNano()
		if err := s.tx.SendTo(seqPayload(seq), group, seq); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.rx.Poll(2 * time.Second); err != nil || !ok {
			t.Fatalf("seq %d not received (%v)", seq, err)
		}
		n, from, st, err := s.rx.Recv(buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.BigEndian.Uint32(buf[8:]); n != 32 || got != seq || from.Addr() != p.addrA || from.Port() != txAddr.Port() {
			t.Fatalf("received %d bytes seq %d from %s, want seq %d from %s:%d", n, got, from, seq, p.addrA, txAddr.Port())
		}
		if st.SW < sent || st.HW != 0 {
			t.Fatalf("seq %d: RX stamps %+v, sent at %d", seq, st, sent)
		}
		rxStamp[seq] = st.SW
		// Responder reply, unicast back to the sender.
		if err := s.rx.SendTo(buf[:n], from, seq); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.tx.Poll(2 * time.Second); err != nil || !ok {
			t.Fatalf("reply %d not received (%v)", seq, err)
		}
	}
	// TX SND stamps keyed by the chosen seq, in order, before the RX stamp.
	seen := 0
	deadline := time.Now().Add(2 * time.Second)
	for seen < count && time.Now().Before(deadline) {
		ts, err := s.tx.RecvErr()
		if errors.Is(err, ErrWouldBlock) {
			s.tx.Poll(50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if ts.Kind != KindSnd {
			continue
		}
		want := uint32(first + seen)
		if ts.Key != want || ts.SW == 0 || ts.SW > rxStamp[want] {
			t.Fatalf("TX stamp %+v, want key %d with SW <= RX %d", ts, want, rxStamp[want])
		}
		seen++
	}
	if seen != count {
		t.Fatalf("%d of %d TX SND stamps", seen, count)
	}
	// Replies at the sender carry RX SW stamps.
	for i := 0; i < count; i++ {
		if ok, _ := s.tx.Poll(time.Second); !ok {
			t.Fatalf("reply %d missing", i)
		}
		_, from, st, err := s.tx.Recv(buf, 0)
		if err != nil || from.Addr() != p.addrB || st.SW == 0 {
			t.Fatalf("reply: from %s stamps %+v err %v", from, st, err)
		}
	}
	// Capture on B's veth: each request as multicast, each reply as outgoing,
	// both SW-stamped, reply after request (all queued: the sender has the
	// replies).
	frames := readCapture(t, s.cap, nil)
	req, rep := map[uint32]captured{}, map[uint32]captured{}
	for _, f := range frames {
		switch {
		case f.dst == probePort && f.pkttype == PacketMulticast:
			req[f.seq] = f
		case f.src == probePort && f.pkttype == PacketOutgoing:
			rep[f.seq] = f
		default:
			t.Errorf("unexpected frame %+v", f)
		}
	}
	for seq := uint32(first); seq < first+count; seq++ {
		q, okq := req[seq]
		r, okr := rep[seq]
		if !okq || !okr {
			t.Fatalf("seq %d: capture saw request=%v reply=%v (frames %+v)", seq, okq, okr, frames)
		}
		if q.st.SW == 0 || r.st.SW == 0 || r.st.SW < q.st.SW {
			t.Fatalf("seq %d: capture stamps request %+v reply %+v", seq, q.st, r.st)
		}
	}
}

func TestNetnsBPFDropsOtherPort(t *testing.T) {
	p := newNSPair(t)
	s := openSockets(t, p)
	warmUpNS(t, s, netip.AddrPortFrom(probeGroup, probePort))
	// Another port first, then a marker on the probe port: the capture must
	// return only the marker.
	if err := s.tx.SendTo(seqPayload(1), netip.AddrPortFrom(p.addrB, probePort+1), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.tx.SendTo(seqPayload(2), netip.AddrPortFrom(probeGroup, probePort+2), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.tx.SendTo(seqPayload(3), netip.AddrPortFrom(probeGroup, probePort), 3); err != nil {
		t.Fatal(err)
	}
	frames := readCapture(t, s.cap, func(f captured) bool { return f.seq == 3 })
	if pk, drops, err := s.cap.Stats(); err != nil || pk == 0 || drops != 0 {
		t.Fatalf("capture stats: packets %d drops %d, %v", pk, drops, err)
	}
	if len(frames) != 1 || frames[0].seq != 3 || frames[0].dst != probePort {
		t.Fatalf("capture got %+v, want only the seq 3 frame to port %d", frames, probePort)
	}
}

func TestNetnsVethCapabilities(t *testing.T) {
	p := newNSPair(t)
	err := onThread(p.b, func() error {
		caps, err := HostDevice().TSInfo(p.ifB)
		if err != nil {
			return err
		}
		if caps.HardwareRX() || caps.HardwareTX() || caps.HasPHC() {
			return fmt.Errorf("veth reports hardware: %s", caps)
		}
		c, err := ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), UDPOptions{Device: p.ifB})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.EnableTimestamping(Hardware, Options{})
		if err == nil || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), caps.String()) {
			return fmt.Errorf("Hardware on veth: %v; want ErrUnsupported with %q", err, caps)
		}
		pc, err := ListenPacket(p.idxB, true)
		if err != nil {
			return err
		}
		defer pc.Close()
		if _, err := pc.EnableTimestamping(Hardware, Options{}); err == nil || !strings.Contains(err.Error(), "RX: no hardware RX stamps") {
			return fmt.Errorf("Hardware on veth capture: %v", err)
		}
		// The real device: SIOCGHWTSTAMP and SIOCSHWTSTAMP are not
		// implemented by veth.
		st, err := ReadNIC(HostDevice(), p.ifB)
		if err != nil || st.ConfigKnown || st.ConfigErr != "SIOCGHWTSTAMP: EOPNOTSUPP" {
			return fmt.Errorf("ReadNIC on veth: %+v, %v", st, err)
		}
		cfg := HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}
		if err := HostDevice().SetHWTstamp(p.ifB, &cfg); !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("SIOCSHWTSTAMP on veth: %v, want EOPNOTSUPP", err)
		}
		if _, err := ReadNIC(HostDevice(), "rig-missing0"); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("missing interface: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNetnsAllocs(t *testing.T) {
	p := newNSPair(t)
	s := openSockets(t, p)
	group := netip.AddrPortFrom(probeGroup, probePort)
	warmUpNS(t, s, group)
	payload := seqPayload(9)
	buf := make([]byte, 2048)
	seq := uint32(100)
	n := testing.AllocsPerRun(100, func() {
		seq++
		if err := s.tx.SendTo(payload, group, seq); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.rx.Poll(time.Second); err != nil || !ok {
			t.Fatal("rx not readable", err)
		}
		if _, _, _, err := s.rx.Recv(buf, 0); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.cap.Poll(time.Second); err != nil || !ok {
			t.Fatal("capture not readable", err)
		}
		if _, _, st, err := s.cap.RecvPacket(buf); err != nil || st.SW == 0 {
			t.Fatal("RecvPacket", err)
		}
		for {
			if _, err := s.tx.RecvErr(); errors.Is(err, ErrWouldBlock) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
	})
	if n != 0 {
		t.Fatalf("SendTo+Recv+RecvPacket+RecvErr: %v allocs per round, want 0", n)
	}
}
