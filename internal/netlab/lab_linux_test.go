package netlab_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// frame is the part of a captured Ethernet frame the tests look at.
type frame struct {
	etherType uint16
	dst       netip.Addr
	payload   string // UDP payload; "" for anything else
	csumOK    bool   // UDP checksum present and valid
}

// udpChecksumOK verifies a UDP checksum over the IPv4 pseudo header.
func udpChecksumOK(ip []byte, udp []byte) bool {
	if binary.BigEndian.Uint16(udp[6:8]) == 0 {
		return false // no checksum at all
	}
	var sum uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			sum += uint32(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) == 1 {
			sum += uint32(b[0]) << 8
		}
	}
	add(ip[12:20]) // source and destination
	sum += unix.IPPROTO_UDP + uint32(len(udp))
	add(udp)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return sum == 0xffff
}

func parseFrame(b []byte) frame {
	var f frame
	if len(b) < 14 {
		return f
	}
	f.etherType = binary.BigEndian.Uint16(b[12:14])
	ip := b[14:]
	if f.etherType != unix.ETH_P_IP || len(ip) < 20 || ip[0]>>4 != 4 {
		return f
	}
	f.dst = netip.AddrFrom4([4]byte(ip[16:20]))
	ihl := int(ip[0]&0xf) * 4
	if ip[9] != unix.IPPROTO_UDP || len(ip) < ihl+8 {
		return f
	}
	udpLen := int(binary.BigEndian.Uint16(ip[ihl+4 : ihl+6]))
	if udpLen < 8 || len(ip) < ihl+udpLen {
		return f
	}
	udp := ip[ihl : ihl+udpLen]
	f.payload = string(udp[8:])
	f.csumOK = udpChecksumOK(ip, udp)
	return f
}

// openCapture opens an AF_PACKET socket on the capture interface, inside
// the capture namespace.
func openCapture(t *testing.T, topo *netlab.Topology) int {
	t.Helper()
	fd := -1
	err := topo.Do(netlab.Capture, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: topo.Capture.Ifindex})
	})
	if err != nil {
		t.Fatalf("capture socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.Timeval{Usec: 300_000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return fd
}

// drain reads frames until the socket has been quiet for the read timeout.
func drain(t *testing.T, fd int) []frame {
	t.Helper()
	var out []frame
	buf := make([]byte, 65536)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("capture read: %v", err)
		}
		out = append(out, parseFrame(buf[:n]))
	}
}

func TestLabMirrorSeesEachPacketOnce(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	if err := topo.Check(); err != nil {
		t.Fatalf("Check right after Up: %v", err)
	}
	capFD := openCapture(t, topo)

	group := netip.MustParseAddr("239.1.2.3")
	const port = 31337
	var rsp, snd *net.UDPConn
	err := topo.Do(netlab.Responder, func() error {
		ifi, err := net.InterfaceByName(topo.Responder.Interface)
		if err != nil {
			return err
		}
		rsp, err = net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: group.AsSlice(), Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("responder socket: %v", err)
	}
	defer rsp.Close()
	err = topo.Do(netlab.Sender, func() error {
		var err error
		snd, err = net.ListenUDP("udp4", &net.UDPAddr{IP: topo.Sender.Addr.AsSlice()})
		return err
	})
	if err != nil {
		t.Fatalf("sender socket: %v", err)
	}
	defer snd.Close()
	// What came before (the lab's own setup) is not the exchange's; a late
	// IGMP report is told apart by its payload below. The hub floods the
	// group, and the socket's membership is in place once it is open.
	drain(t, capFD)

	const rounds = 3
	nonce := time.Now().UnixNano()
	buf := make([]byte, 1500)
	for i := range rounds {
		req := fmt.Sprintf("req-%d-%d", i, nonce)
		if _, err := snd.WriteToUDP([]byte(req), &net.UDPAddr{IP: group.AsSlice(), Port: port}); err != nil {
			t.Fatalf("send request: %v", err)
		}
		rsp.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := rsp.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != req {
			t.Fatalf("responder got %q from %v, %v; want %q", buf[:n], from, err, req)
		}
		if got := from.AddrPort().Addr().Unmap(); got != topo.Sender.Addr {
			t.Fatalf("request came from %v, want sender %v", got, topo.Sender.Addr)
		}
		rep := fmt.Sprintf("rep-%d-%d", i, nonce)
		if _, err := rsp.WriteToUDP([]byte(rep), from); err != nil {
			t.Fatalf("send reply: %v", err)
		}
		snd.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err = snd.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != rep {
			t.Fatalf("sender got %q, %v; want %q", buf[:n], err, rep)
		}
	}

	frames := drain(t, capFD)
	seen := map[string][]int{} // payload → positions in capture order
	for i, f := range frames {
		switch f.etherType {
		case unix.ETH_P_IPV6:
			t.Errorf("capture saw an IPv6 frame; IPv6 should be disabled on the lab veths")
		case unix.ETH_P_ARP:
			t.Errorf("capture saw ARP although static neighbours are on")
		}
		if strings.HasSuffix(f.payload, fmt.Sprint(nonce)) {
			seen[f.payload] = append(seen[f.payload], i)
			wantDst := group
			if strings.HasPrefix(f.payload, "rep-") {
				wantDst = topo.Sender.Addr
			}
			if f.dst != wantDst {
				t.Errorf("%s captured with destination %v, want %v", f.payload, f.dst, wantDst)
			}
			if !f.csumOK {
				t.Errorf("%s captured with an invalid UDP checksum (tx checksum offload should be off)", f.payload)
			}
		}
	}
	for i := range rounds {
		req, rep := fmt.Sprintf("req-%d-%d", i, nonce), fmt.Sprintf("rep-%d-%d", i, nonce)
		if len(seen[req]) != 1 || len(seen[rep]) != 1 {
			t.Errorf("round %d: capture saw the request %d times and the reply %d times, want once each", i, len(seen[req]), len(seen[rep]))
			continue
		}
		if seen[req][0] > seen[rep][0] {
			t.Errorf("round %d: reply captured before its request", i)
		}
	}

	// Up again on the complete lab returns it unchanged.
	again, err := netlab.Up(context.Background(), topo.Name, netlab.Options{})
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	a, b := *again, *topo
	a.Owner, b.Owner = nil, nil
	if !reflect.DeepEqual(a, b) || again.Owner == nil || topo.Owner == nil || !again.Owner.Since.Equal(topo.Owner.Since) || again.Owner.PID != topo.Owner.PID { // MACs and creation time differ on a rebuild
		t.Errorf("second Up rebuilt the lab: %+v vs %+v", again, topo)
	}
}

func TestLabResponderQueues(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{RxQueues: 4})
	if topo.RxQueues != 4 || topo.TxQueues != 4 {
		t.Fatalf("topology queues rx %d tx %d, want 4 4", topo.RxQueues, topo.TxQueues)
	}
	// ip-netns-exec remounts /sys for the namespace, which is exactly how
	// a rig process spawned with Exec sees the interface.
	argv := append(topo.Exec(netlab.Responder), "ls", "/sys/class/net/"+topo.Responder.Interface+"/queues")
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	got := strings.Fields(string(out))
	want := []string{"rx-0", "rx-1", "rx-2", "rx-3", "tx-0", "tx-1", "tx-2", "tx-3"}
	if !slices.Equal(got, want) {
		t.Errorf("responder queues %v, want %v", got, want)
	}
	// The sender keeps a single queue.
	argv = append(topo.Exec(netlab.Sender), "ls", "/sys/class/net/"+topo.Sender.Interface+"/queues")
	out, err = exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"rx-0", "tx-0"}) {
		t.Errorf("sender queues %v, want [rx-0 tx-0]", got)
	}
}

func hostLinks(t *testing.T) []string {
	t.Helper()
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		a := l.Attrs()
		out = append(out, fmt.Sprintf("%d:%s:%v:%d", a.Index, a.Name, a.Flags, a.MTU))
	}
	return out
}

func TestLabLifecycle(t *testing.T) {
	testbin.Integration(t)
	name := netlab.UniqueName("lc")
	t.Cleanup(func() { netlab.Down(name) })
	before := hostLinks(t)
	ctx := context.Background()

	topo, err := netlab.Up(ctx, name, netlab.Options{MTU: 9000})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if after := hostLinks(t); !slices.Equal(before, after) {
		t.Errorf("Up changed the host's links:\nbefore %v\nafter  %v", before, after)
	}
	loaded, err := netlab.Load(name)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(*loaded, *topo) {
		t.Errorf("Load = %+v, Up returned %+v", loaded, topo)
	}

	// Other options on a complete lab: refused, lab untouched.
	if _, err := netlab.Up(ctx, name, netlab.Options{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Up with another MTU on an existing lab: %v, want os.ErrExist", err)
	}
	if err := topo.Check(); err != nil {
		t.Errorf("lab damaged by the refused Up: %v", err)
	}

	// A partial lab (capture namespace gone) is rebuilt.
	if out, err := exec.Command("ip", "netns", "delete", topo.Capture.Netns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns delete: %v: %s", err, out)
	}
	if err := topo.Check(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check on a lab without its capture netns: %v, want os.ErrNotExist", err)
	}
	rebuilt, err := netlab.Up(ctx, name, netlab.Options{MTU: 9000})
	if err != nil {
		t.Fatalf("Up on a partial lab: %v", err)
	}
	if err := rebuilt.Check(); err != nil {
		t.Errorf("rebuilt lab: %v", err)
	}

	if err := netlab.Down(name); err != nil {
		t.Fatalf("Down: %v", err)
	}
	for _, ns := range netlab.Namespaces(name) {
		if _, err := os.Lstat(filepath.Join("/run/netns", ns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("netns %s after Down: %v", ns, err)
		}
		if err := netlab.Do(ns, func() error { return nil }); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Do in %s after Down: %v, want os.ErrNotExist", ns, err)
		}
	}
	if netlab.Exists(name) {
		t.Errorf("Exists after Down")
	}
	if _, err := netlab.Load(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load after Down: %v, want os.ErrNotExist", err)
	}
	if err := netlab.Down(name); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if after := hostLinks(t); !slices.Equal(before, after) {
		t.Errorf("the host's links changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestDoPropagatesPanicAndGoexit(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want boom", p)
			}
		}()
		topo.Do(netlab.Sender, func() error { panic("boom") })
	}()

	// runtime.Goexit (what t.FailNow does) inside fn ends the caller too,
	// instead of leaving it blocked forever.
	after, deferred := false, make(chan bool, 1)
	go func() {
		defer func() { deferred <- true }()
		topo.Do(netlab.Sender, func() error { runtime.Goexit(); return nil })
		after = true
	}()
	select {
	case <-deferred:
	case <-time.After(10 * time.Second):
		t.Fatal("caller of Do still blocked after fn called runtime.Goexit")
	}
	if after {
		t.Error("caller continued after fn called runtime.Goexit")
	}

	// Sockets made in Do stay in the namespace: bind to the sender's address.
	var c *net.UDPConn
	if err := topo.Do(netlab.Sender, func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: topo.Sender.Addr.AsSlice()})
		return err
	}); err != nil {
		t.Fatalf("bind to the sender address inside the sender netns: %v", err)
	}
	c.Close()
	if _, err := net.ListenUDP("udp4", &net.UDPAddr{IP: topo.Sender.Addr.AsSlice()}); err == nil {
		t.Error("the sender address is bindable outside the lab: Do leaked a thread into the namespace, or the host has the lab's address")
	}
}

// TestLabResponders: a fan-out lab has one namespace per responder on the
// same bridge; one multicast request reaches every responder, and the
// capture sees it once and each responder's reply once. A lab of another
// responder count is not taken for it, and down removes every namespace.
func TestLabResponders(t *testing.T) {
	const n = 3
	topo := netlabtest.New(t, netlab.Options{Responders: n})
	if err := topo.Check(); err != nil {
		t.Fatalf("Check right after Up: %v", err)
	}
	if topo.Responders() != n || len(topo.Namespaces()) != n+3 {
		t.Fatalf("%d responders, namespaces %v", topo.Responders(), topo.Namespaces())
	}
	capFD := openCapture(t, topo)
	group := netip.MustParseAddr("239.1.2.4")
	const port = 31338
	var rsps []*net.UDPConn
	for i, h := range topo.ResponderHosts() {
		if want := netlab.ResponderRole(i); h.Role != want {
			t.Fatalf("responder %d has role %s", i, h.Role)
		}
		err := topo.Do(h.Role, func() error {
			ifi, err := net.InterfaceByName(h.Interface)
			if err != nil {
				return err
			}
			c, err := net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: group.AsSlice(), Port: port})
			rsps = append(rsps, c)
			return err
		})
		if err != nil {
			t.Fatalf("responder %d socket: %v", i, err)
		}
		defer rsps[i].Close()
	}
	var snd *net.UDPConn
	err := topo.Do(netlab.Sender, func() error {
		var err error
		snd, err = net.ListenUDP("udp4", &net.UDPAddr{IP: topo.Sender.Addr.AsSlice()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	drain(t, capFD)
	nonce := time.Now().UnixNano()
	req := fmt.Sprintf("req-%d", nonce)
	if _, err := snd.WriteToUDP([]byte(req), &net.UDPAddr{IP: group.AsSlice(), Port: port}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	for i, c := range rsps {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, from, err := c.ReadFromUDP(buf)
		if err != nil || string(buf[:k]) != req {
			t.Fatalf("responder %d got %q, %v", i, buf[:k], err)
		}
		if _, err := c.WriteToUDP(fmt.Appendf(nil, "rep-%d-%d", i, nonce), from); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		snd.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err := snd.ReadFromUDP(buf); err != nil {
			t.Fatalf("sender: %v", err)
		}
	}
	seen := map[string]int{}
	for _, f := range drain(t, capFD) {
		if strings.HasSuffix(f.payload, fmt.Sprint(nonce)) {
			seen[f.payload]++
		}
	}
	want := map[string]int{req: 1}
	for i := range n {
		want[fmt.Sprintf("rep-%d-%d", i, nonce)] = 1
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("capture saw %v, want %v", seen, want)
	}
	if _, err := netlab.Up(context.Background(), topo.Name, netlab.Options{Responders: 2}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Up with 2 responders on a lab of 3: %v, want os.ErrExist", err)
	}
	if err := netlab.Down(topo.Name); err != nil {
		t.Fatal(err)
	}
	for _, ns := range topo.Namespaces() {
		if _, err := os.Lstat(filepath.Join("/run/netns", ns)); err == nil {
			t.Errorf("namespace %s left after Down", ns)
		}
	}
}
