package tstamp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

func listen(t *testing.T, o UDPOptions) *Conn {
	t.Helper()
	c, err := ListenUDP(loopback, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// inSyscall waits until thread tid of this process is blocked in system
// call nr (/proc/self/task/TID/syscall), 10 s at most.
func inSyscall(tid, nr int) error {
	p, want := fmt.Sprintf("/proc/self/task/%d/syscall", tid), strconv.Itoa(nr)+" "
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(p)
		if err != nil || strings.HasPrefix(string(b), want) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("thread %d is not in system call %d after 10 s: %s", tid, nr, b)
		}
	}
}

func localAddr(t *testing.T, c *Conn) netip.AddrPort {
	t.Helper()
	a, err := c.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitErr polls the error queue until a TX stamp of kind arrives.
func waitErr(t testing.TB, c *Conn, kind Kind) TxStamp {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		ts, err := c.RecvErr()
		switch {
		case err == nil && ts.Kind == kind:
			return ts
		case err == nil, errors.Is(err, ErrWouldBlock):
			if errors.Is(err, ErrWouldBlock) {
				if _, err := c.Poll(50 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
		default:
			t.Fatalf("RecvErr: %v", err)
		}
	}
	t.Fatalf("no %s TX stamp within 2s", kind)
	return TxStamp{}
}

// TestEnableOff: mode off leaves the socket unstamped — the kernel holds
// no timestamping flags, a datagram comes back without a software stamp
// and a send queues no TX stamp — while sends and receives work as usual.
func TestEnableOff(t *testing.T) {
	c := listen(t, UDPOptions{})
	g, err := c.EnableTimestamping(Off, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Flags != 0 || g.Software() || g.HardwareRX() || g.HardwareTX() || c.Keying() != KeyNone {
		t.Fatalf("mode off granted %s, keying %s", g, c.Keying())
	}
	if !strings.Contains(g.String(), "mode=off") {
		t.Fatalf("String() = %q", g)
	}
	for _, opt := range []int{unix.SO_TIMESTAMPING_NEW, unix.SO_TIMESTAMPING} {
		if f, err := getTimestamping(c.fd, opt); err != nil || f != 0 {
			t.Fatalf("getsockopt(%s) = %s, %v: want no flags", optName(opt), f, err)
		}
	}
	if _, err := c.EnableTimestamping(Off, Options{Extra: FlagTxSched}); err == nil {
		t.Fatal("mode off with extra flags accepted")
	}
	tstampOn := listen(t, UDPOptions{}) // the kernel's RX stamping switch is on
	if _, err := tstampOn.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	warmUp(t, tstampOn, tstampOn, localAddr(t, tstampOn))
	buf := make([]byte, 64)
	if err := c.SendTo(buf[:16], localAddr(t, c), 7); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Poll(time.Second); err != nil || !ok {
		t.Fatal("not readable", err)
	}
	n, _, st, err := c.Recv(buf, 0)
	if err != nil || n != 16 || st.SW != 0 || st.HW != 0 {
		t.Fatalf("Recv = %d, %+v, %v: want 16 bytes and no stamps", n, st, err)
	}
	if ts, err := c.RecvErr(); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("RecvErr = %+v, %v: want an empty error queue", ts, err)
	}
	if s := Off.String(); s != "off" {
		t.Fatalf("Off.String() = %q", s)
	}
}

func TestEnableSoftwareLoopback(t *testing.T) {
	c := listen(t, UDPOptions{})
	g, err := c.EnableTimestamping(Software, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := FlagTxSoftware | FlagRxSoftware | FlagSoftware | FlagOptID | FlagOptTSOnly
	if g.Flags&want != want || g.Flags&(FlagTxHardware|FlagRxHardware|FlagRawHardware) != 0 {
		t.Fatalf("granted %s, want at least %s and no HW bits", g.Flags, want)
	}
	if !g.New {
		t.Fatalf("SO_TIMESTAMPING_NEW not in use on a 5.1+ kernel: %s", g)
	}
	if c.Keying() != KeyPerSend {
		t.Fatalf("keying %s, want %s", c.Keying(), KeyPerSend)
	}
	if g.HardwareRX() || g.HardwareTX() {
		t.Fatal("software mode reports hardware")
	}
}

func TestEnableHardwareNeedsDevice(t *testing.T) {
	c := listen(t, UDPOptions{})
	_, err := c.EnableTimestamping(Hardware, Options{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "bound to a device") {
		t.Fatalf("Hardware on unbound socket: %v", err)
	}
	g, err := c.EnableTimestamping(Auto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Fallbacks) == 0 || !strings.Contains(g.Fallbacks[0], "not bound") {
		t.Fatalf("Auto on unbound socket should say so: %s", g)
	}
}

func TestEnableHardwareOnLoopbackFails(t *testing.T) {
	c, err := ListenUDP(loopback, UDPOptions{Device: "lo"})
	if errors.Is(err, os.ErrPermission) {
		t.Skip("SO_BINDTODEVICE not permitted:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.EnableTimestamping(Hardware, Options{})
	if err == nil || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "lo: so_timestamping=") {
		t.Fatalf("Hardware on lo: error %v, want ErrUnsupported with the capability report", err)
	}
	g, err := c.EnableTimestamping(Auto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Ifname != "lo" || g.Flags&FlagRawHardware != 0 || !strings.Contains(strings.Join(g.Fallbacks, ";"), "software stamps") {
		t.Fatalf("Auto on lo: %s", g)
	}
}

func TestEnableWithRejectsHardwareExtra(t *testing.T) {
	c := listen(t, UDPOptions{})
	if _, err := EnableWith(c.FD(), Software, Options{Extra: FlagRxHardware}); err == nil {
		t.Fatal("hardware bits in extra accepted")
	}
	g, err := EnableWith(c.FD(), Software, Options{Extra: FlagTxSched})
	if err != nil || g.Flags&FlagTxSched == 0 {
		t.Fatalf("EnableWith TX_SCHED: %s, %v", g, err)
	}
}

// TestLoopbackStamps sends keyed datagrams and checks the RX SW stamp, the
// sender address, and SCHED+SND TX stamps carrying the chosen key.
func TestLoopbackStamps(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	if _, err := rx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.EnableTimestamping(Software, Options{Extra: FlagTxSched}); err != nil {
		t.Fatal(err)
	}
	to, from := localAddr(t, rx), localAddr(t, tx)
	warmUp(t, tx, rx, to)
	buf := make([]byte, 64)
	for _, key := range []uint32{777777, 5, 0xffffffff} {
		before := time.Now().UnixNano()
		if err := tx.SendTo([]byte("probe"), to, key); err != nil {
			t.Fatal(err)
		}
		if ok, err := rx.Poll(2 * time.Second); err != nil || !ok {
			t.Fatalf("Poll = %v, %v", ok, err)
		}
		n, src, st, err := rx.Recv(buf, 0)
		if err != nil || string(buf[:n]) != "probe" || src != from {
			t.Fatalf("Recv = %d %q from %s, %v", n, buf[:n], src, err)
		}
		if st.SW < before || st.SW > time.Now().UnixNano() || st.HW != 0 {
			t.Fatalf("RX stamps %+v outside [%d, now]", st, before)
		}
		sched := waitErr(t, tx, KindSched)
		snd := waitErr(t, tx, KindSnd)
		if sched.Key != key || snd.Key != key {
			t.Fatalf("keys sched=%d snd=%d, want %d", sched.Key, snd.Key, key)
		}
		if !(before <= sched.SW && sched.SW <= snd.SW && snd.SW <= st.SW) {
			t.Fatalf("stamp order: before=%d sched=%d snd=%d rx=%d", before, sched.SW, snd.SW, st.SW)
		}
	}
	if _, err := tx.RecvErr(); !errors.Is(err, ErrWouldBlock) || !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("empty error queue: %v", err)
	}
}

// TestCounterFallback forces the kernel to refuse the per-send key cmsg and
// checks the switch to the OPT_ID counter, which still yields SendTo keys.
func TestCounterFallback(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	if _, err := tx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	// An unknown SOL_SOCKET cmsg type gets EINVAL, as SCM_TS_OPT_ID does
	// before 6.13.
	nativeEndian.PutUint32(tx.tx.oob[cmsgHdrLen-4:], 0x7fff)
	to := localAddr(t, rx)
	keys := []uint32{1000, 1001, 1005}
	for _, k := range keys {
		if err := tx.SendTo([]byte("x"), to, k); err != nil {
			t.Fatal(err)
		}
		if tx.Keying() != KeyCounter {
			t.Fatalf("keying %s after refused cmsg", tx.Keying())
		}
	}
	for _, k := range keys {
		if ts := waitErr(t, tx, KindSnd); ts.Key != k {
			t.Fatalf("counter mode key %d, want %d", ts.Key, k)
		}
	}
}

func TestRecvErrors(t *testing.T) {
	rx := listen(t, UDPOptions{NonBlocking: true})
	tx := listen(t, UDPOptions{})
	buf := make([]byte, 4)
	if _, _, _, err := rx.Recv(buf, 0); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("empty non-blocking Recv: %v", err)
	}
	if _, _, _, err := rx.Recv(nil, 0); err == nil {
		t.Fatal("Recv(nil) accepted")
	}
	if err := tx.SendTo([]byte("too long"), localAddr(t, rx), 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := rx.Poll(2 * time.Second); !ok {
		t.Fatal("not readable")
	}
	n, _, st, err := rx.Recv(buf, 0)
	if !errors.Is(err, ErrTruncated) || n != 4 || st != (Stamps{}) {
		t.Fatalf("truncated Recv = %d, %+v, %v", n, st, err)
	}
	if ok, err := rx.Poll(0); ok || err != nil {
		t.Fatalf("Poll(0) on empty socket = %v, %v", ok, err)
	}
	if err := tx.SendTo(buf, netip.MustParseAddrPort("[::1]:9"), 0); err == nil {
		t.Fatal("IPv6 destination accepted")
	}
}

func TestCloseWakesBlockedRecv(t *testing.T) {
	c, err := ListenUDP(loopback, UDPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, tid := make(chan error, 1), make(chan int, 1)
	go func() {
		runtime.LockOSThread() // its thread is the one blocked in recvmsg
		tid <- unix.Gettid()
		_, _, _, err := c.Recv(make([]byte, 16), 0)
		done <- err
	}()
	if err := inSyscall(<-tid, unix.SYS_RECVMSG); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked Recv returned %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake a blocked Recv")
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.SendTo([]byte("x"), loopback, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("SendTo after Close: %v", err)
	}
}

func TestConnOptions(t *testing.T) {
	c := listen(t, UDPOptions{ReuseAddr: true})
	if err := c.SetMulticastLoop(false); err != nil {
		t.Fatal(err)
	}
	if v, _ := unix.GetsockoptInt(c.FD(), unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP); v != 0 {
		t.Fatalf("IP_MULTICAST_LOOP = %d", v)
	}
	if err := c.SetMulticastTTL(3); err != nil {
		t.Fatal(err)
	}
	if err := c.SetMulticastTTL(300); err == nil {
		t.Fatal("TTL 300 accepted")
	}
	if err := c.SetMulticastInterface(1); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinGroup(netip.MustParseAddr("239.1.2.3"), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinGroup(netip.MustParseAddr("10.0.0.1"), 1); err == nil {
		t.Fatal("unicast group accepted")
	}
	if got, err := c.SetRcvBuf(8 << 20); err != nil {
		t.Fatal(err)
	} else if os.Geteuid() == 0 && got != 16<<20 {
		t.Fatalf("SO_RCVBUFFORCE 8 MiB as root granted %d bytes, want 16 MiB (the kernel doubles it)", got)
	}
	if err := c.SetNonblock(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBusyPoll(50); err != nil && !errors.Is(err, os.ErrPermission) {
		t.Fatal(err)
	}
	if _, err := ListenUDP(netip.MustParseAddrPort("[::1]:0"), UDPOptions{}); err == nil {
		t.Fatal("IPv6 listen accepted")
	}
}

// warmUp pings until RX SW stamps appear: the kernel flips its global RX
// timestamp switch from a workqueue after the first socket asks, so the
// first packets can arrive unstamped.
func warmUp(tb testing.TB, tx, rx *Conn, to netip.AddrPort) {
	buf := make([]byte, 64)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := tx.SendTo(buf[:8], to, 0); err != nil {
			tb.Fatal(err)
		}
		if ok, err := rx.Poll(time.Second); err != nil || !ok {
			tb.Fatal("not readable", err)
		}
		_, _, st, err := rx.Recv(buf, 0)
		if err != nil {
			tb.Fatal(err)
		}
		for {
			if _, err := tx.RecvErr(); err != nil {
				break
			}
		}
		if st.SW != 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatal("no RX SW stamp within 3s of enabling")
}

// pingOnce is one hot-path round: send, wait, receive, drain the errqueue.
func pingOnce(tb testing.TB, tx, rx *Conn, to netip.AddrPort, key uint32, buf []byte) {
	if err := tx.SendTo(buf[:32], to, key); err != nil {
		tb.Fatal(err)
	}
	if ok, err := rx.Poll(time.Second); err != nil || !ok {
		tb.Fatal("not readable", err)
	}
	if _, _, st, err := rx.Recv(buf, 0); err != nil || st.SW == 0 {
		tb.Fatal("Recv", err)
	}
	for {
		if _, err := tx.RecvErr(); errors.Is(err, ErrWouldBlock) {
			break
		} else if err != nil {
			tb.Fatal(err)
		}
	}
}

func TestConnAllocs(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	if _, err := rx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	to := localAddr(t, rx)
	warmUp(t, tx, rx, to)
	buf := make([]byte, 256)
	key := uint32(0)
	if n := testing.AllocsPerRun(200, func() {
		key++
		pingOnce(t, tx, rx, to, key, buf)
	}); n != 0 {
		t.Fatalf("SendTo+Poll+Recv+RecvErr: %v allocs per round, want 0", n)
	}
}

func BenchmarkConnPingPong(b *testing.B) {
	rx, err := ListenUDP(loopback, UDPOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	tx, err := ListenUDP(loopback, UDPOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	rx.EnableTimestamping(Software, Options{})
	tx.EnableTimestamping(Software, Options{})
	to, _ := rx.LocalAddr()
	warmUp(b, tx, rx, to)
	buf := make([]byte, 256)
	b.ReportAllocs()
	key := uint32(0)
	for b.Loop() {
		key++
		pingOnce(b, tx, rx, to, key, buf)
	}
}

// TestBusySpinLockedThread receives on a locked OS thread with MsgDontWait
// spins (raw syscalls) while another goroutine sends.
func TestBusySpinLockedThread(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	if _, err := rx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	to := localAddr(t, rx)
	warmUp(t, tx, rx, to)
	const count = 20
	got := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := make([]byte, 64)
		n, stamped := 0, 0
		deadline := time.Now().Add(5 * time.Second)
		for n < count && time.Now().Before(deadline) {
			_, _, st, err := rx.Recv(buf, MsgDontWait)
			if errors.Is(err, ErrWouldBlock) {
				runtime.Gosched() // 2 shared vCPUs: spin politely in tests
				continue
			}
			if err != nil {
				break
			}
			n++
			if st.SW != 0 {
				stamped++
			}
		}
		got <- stamped
	}()
	for i := 0; i < count; i++ {
		if err := tx.SendTo([]byte("spin"), to, uint32(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // the traffic: the receiver spins between packets
	}
	if stamped := <-got; stamped != count {
		t.Fatalf("spinning receiver got %d stamped packets, want %d", stamped, count)
	}
}

// TestPollWakesOnErrqueue: a socket with only TX stamps queued (POLLERR) is
// reported readable, so one Poll serves both queues.
func TestPollWakesOnErrqueue(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	if _, err := tx.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := tx.Poll(0); ok {
		t.Fatal("readable before sending")
	}
	if err := tx.SendTo([]byte("x"), localAddr(t, rx), 42); err != nil {
		t.Fatal(err)
	}
	if ok, err := tx.Poll(2 * time.Second); !ok || err != nil {
		t.Fatalf("Poll with a queued TX stamp = %v, %v", ok, err)
	}
	if ts := waitErr(t, tx, KindSnd); ts.Key != 42 {
		t.Fatalf("key %d", ts.Key)
	}
}

// TestCloseDuringUse closes while other goroutines send and receive; every
// call must end with ErrClosed (never touch a reused descriptor or panic).
func TestCloseDuringUse(t *testing.T) {
	c, err := ListenUDP(loopback, UDPOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	to := localAddr(t, c)
	done := make(chan error, 3)
	var calls [3]atomic.Int64
	loop := func(i int, f func() error) {
		for {
			calls[i].Add(1)
			if err := f(); errors.Is(err, ErrClosed) {
				done <- nil
				return
			} else if err != nil && !errors.Is(err, ErrWouldBlock) && !errors.Is(err, ErrNotTimestamp) {
				done <- err
				return
			}
		}
	}
	buf := make([]byte, 64)
	go loop(0, func() error { return c.SendTo(buf[:8], to, 1) })
	go loop(1, func() error { _, _, _, err := c.Recv(buf, 0); return err })
	go loop(2, func() error { _, err := c.RecvErr(); return err })
	for i := range calls { // all three under way
		for calls[i].Load() < 100 {
			runtime.Gosched()
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a goroutine did not see ErrClosed")
		}
	}
}

// pollUntil is c.PollUntil(deadline), again while it reports nothing
// before the deadline: that is an EINTR (a signal reached the thread in
// ppoll, which no SA_RESTART restarts), which PollUntil reports as no
// error and its callers poll again. More than a few in a row are a
// PollUntil that does not sleep.
func pollUntil(t *testing.T, c *Conn, deadline time.Time) (Ready, error) {
	t.Helper()
	for early := 1; ; early++ {
		r, err := c.PollUntil(deadline)
		if r != 0 || err != nil || !time.Now().Before(deadline) {
			return r, err
		}
		if early == 3 {
			t.Fatalf("PollUntil returned nothing before its deadline %d times in a row", early)
		}
		t.Logf("PollUntil returned nothing %v before its deadline (EINTR): polling again", time.Until(deadline))
	}
}

// PollUntil sleeps to its deadline and not less, wakes early for data with
// the timer left armed, re-arms only for a new deadline, and does not
// allocate.
func TestPollUntil(t *testing.T) {
	rx := listen(t, UDPOptions{})
	tx := listen(t, UDPOptions{})
	start := time.Now()
	deadline := start.Add(20 * time.Millisecond)
	r, err := pollUntil(t, rx, deadline)
	if err != nil || r != 0 {
		t.Fatalf("PollUntil on an empty socket = %v, %v; want 0 at the deadline", r, err)
	}
	if now := time.Now(); now.Before(deadline) {
		t.Fatalf("PollUntil returned %v before its deadline", deadline.Sub(now))
	}
	if !rx.timerAt.IsZero() {
		t.Errorf("timer fired but still recorded as armed for %v", rx.timerAt)
	}
	// Data before a far deadline wakes it; the timer stays armed for it.
	far := time.Now().Add(5 * time.Second)
	runtime.LockOSThread() // this thread is the one that waits in ppoll
	defer runtime.UnlockOSThread()
	waiter, to := unix.Gettid(), localAddr(t, rx)
	sent := make(chan error, 1)
	go func() {
		err := inSyscall(waiter, unix.SYS_PPOLL)
		if err == nil {
			err = tx.SendTo([]byte("x"), to, 0)
		}
		sent <- err
	}()
	if r, err := pollUntil(t, rx, far); err != nil || r&ReadyData == 0 {
		t.Fatalf("PollUntil with a datagram = %v, %v; want ReadyData", r, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if time.Until(far) < 4*time.Second {
		t.Fatal("data did not wake PollUntil early")
	}
	if !rx.timerAt.Equal(far) {
		t.Errorf("timer armed for %v after an early wake, want %v (kept, not re-armed)", rx.timerAt, far)
	}
	var cur unix.ItimerSpec
	if err := unix.TimerfdGettime(rx.timerFD, &cur); err != nil || cur.Value.Nano() < int64(4*time.Second) {
		t.Errorf("timerfd after an early wake: %+v, %v; want still armed ~5 s out", cur, err)
	}
	// A passed deadline polls without blocking.
	if r, err := rx.PollUntil(start); err != nil || r&ReadyData == 0 {
		t.Fatalf("PollUntil(past) with the datagram still queued = %v, %v", r, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := rx.PollUntil(far); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("PollUntil allocates %v times per call", n)
	}
	fd := rx.timerFD
	rx.Close()
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		t.Error("Close left the timerfd open")
	}
}

// TestReadTxStopsWhenFiled: ReadTx hands stamps over until filed reports
// true and leaves the rest queued; with filed nil (DrainTx) it reads the
// queue empty and reports false.
func TestReadTxStopsWhenFiled(t *testing.T) {
	c := listen(t, UDPOptions{})
	if _, err := c.EnableTimestamping(Software, Options{}); err != nil {
		t.Fatal(err)
	}
	to := localAddr(t, c)
	warmUp(t, c, c, to)
	buf := make([]byte, 64)
	for k := uint32(1); k <= 3; k++ {
		if err := c.SendTo(buf[:8], to, k); err != nil {
			t.Fatal(err)
		}
		for {
			if _, _, _, err := c.Recv(buf, 0); err == nil {
				break
			}
		}
	}
	var got []uint32
	f := func(ts TxStamp) { got = append(got, ts.Key) }
	deadline := time.Now().Add(2 * time.Second)
	if !c.ReadTx(f, func() bool { return len(got) > 0 && got[len(got)-1] == 1 || time.Now().After(deadline) }) {
		t.Fatal("ReadTx reported the queue empty before stamp 1")
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("ReadTx until key 1 handed over %v", got)
	}
	for len(got) < 3 && time.Now().Before(deadline) {
		if c.ReadTx(f, nil) {
			t.Fatal("ReadTx with filed nil reported true")
		}
	}
	if len(got) != 3 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("the stamps left after key 1: %v, want 1 2 3", got)
	}
}

// TestSchedStandsInForSND: a socket on a device whose capabilities lack
// TX_SOFTWARE (its driver gives no SND software stamp: mlx5 before 6.16)
// also asks for TX_SCHED and files the qdisc's stamp as its software TX
// stamp, never an SND entry's software part; with TX_SOFTWARE in the
// capabilities it files the SND stamp only.
func TestSchedStandsInForSND(t *testing.T) {
	for _, tt := range []struct {
		caps Caps
		kind Kind
	}{{capsPTPOnly, KindSched}, {capsSW, KindSnd}} {
		c := listenLo(t)
		g, err := c.EnableTimestamping(Software, Options{Device: &fakeDev{caps: tt.caps}})
		if err != nil {
			t.Fatal(err)
		}
		sched := tt.kind == KindSched
		if g.TxSched() != sched || (g.Flags&FlagTxSched != 0) != sched || strings.Contains(strings.Join(g.Fallbacks, ";"), "labelled sched") != sched {
			t.Fatalf("caps %s: granted %s", tt.caps, g)
		}
		to := localAddr(t, c)
		warmUp(t, c, c, to)
		buf := make([]byte, 64)
		if err := c.SendTo(buf[:8], to, 42); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.Poll(2 * time.Second); err != nil || !ok {
			t.Fatal("not readable", err)
		}
		if _, _, _, err := c.Recv(buf, 0); err != nil {
			t.Fatal(err)
		}
		var filed []TxStamp // lo stamps on transmit: both entries are queued by now
		c.DrainTx(func(ts TxStamp) { filed = append(filed, ts) })
		sw := 0
		for _, ts := range filed {
			if ts.SW != 0 {
				sw++
				if ts.Kind != tt.kind || ts.Key != 42 {
					t.Errorf("caps %s: software TX stamp from a %s entry, key %d", tt.caps, ts.Kind, ts.Key)
				}
			}
		}
		if sw != 1 {
			t.Errorf("caps %s: %d software TX stamps filed (%+v), want 1 of %s", tt.caps, sw, filed, tt.kind)
		}
		c.Close()
	}
}
