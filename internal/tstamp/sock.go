package tstamp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var nativeEndian = binary.NativeEndian

// ErrWouldBlock is returned by the receive methods when nothing is queued on
// a non-blocking socket (or with MSG_DONTWAIT). It is unix.EAGAIN, so
// errors.Is(err, syscall.EAGAIN) also holds.
var ErrWouldBlock error = unix.EAGAIN

// ErrTruncated is returned with the bytes that fit when a datagram or frame
// was longer than the buffer.
var ErrTruncated = errors.New("tstamp: packet truncated: receive buffer too small")

// ErrClosed is returned by methods called after Close. It is net.ErrClosed.
var ErrClosed = net.ErrClosed

// Preallocated errors: converting most syscall.Errno values to error would
// not allocate either (small integers), but these are the common ones.
var (
	errEINTR  error = unix.EINTR
	errEINVAL error = unix.EINVAL
)

func errnoErr(e syscall.Errno) error {
	switch e {
	case 0:
		return nil
	case unix.EAGAIN:
		return ErrWouldBlock
	case unix.EINTR:
		return errEINTR
	case unix.EINVAL:
		return errEINVAL
	}
	return e
}

// sock is the fd plus the reference count that keeps Close from releasing
// the descriptor while another thread is inside a syscall on it (a reused fd
// number would otherwise receive someone else's traffic).
type sock struct {
	fd    int
	state atomic.Int64 // bit 0: closed; bits 1..: callers inside
	// nonblock mirrors O_NONBLOCK so receive calls that cannot block use
	// RawSyscall (no scheduler hand-off in a busy-spin loop).
	nonblock atomic.Bool
	shutdown bool // shutdown(2) wakes blocked readers (UDP yes, AF_PACKET no)

	pollMu  atomic.Bool // guards pollFds/pollTs and the timer: one Poll at a time
	pollFds [2]unix.PollFd
	pollTs  unix.Timespec

	// PollUntil's deadline timer (a timerfd, made by the first call) and
	// the deadline it is armed for (zero: disarmed or fired).
	timerFD   int
	hasTimer  bool
	timerAt   time.Time
	timerSpec unix.ItimerSpec
	timerBuf  [8]byte
}

func (s *sock) acquire() bool {
	for {
		v := s.state.Load()
		if v&1 != 0 {
			return false
		}
		if s.state.CompareAndSwap(v, v+2) {
			return true
		}
	}
}

func (s *sock) release() {
	if s.state.Add(-2) == 1 {
		s.closeFDs()
	}
}

func (s *sock) closeFDs() error {
	if s.hasTimer {
		unix.Close(s.timerFD)
	}
	return unix.Close(s.fd)
}

// close marks the socket closed, wakes blocked readers where the protocol
// supports it, and closes the fd now or when the last caller leaves.
func (s *sock) close() error {
	for {
		v := s.state.Load()
		if v&1 != 0 {
			return ErrClosed
		}
		if s.state.CompareAndSwap(v, v|1) {
			if v == 0 {
				return s.closeFDs()
			}
			if s.shutdown {
				_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
			}
			return nil
		}
	}
}

// FD returns the descriptor for options this package does not wrap. Do not
// close it; it is invalid after Close.
func (s *sock) FD() int { return s.fd }

// SetNonblock switches O_NONBLOCK. In non-blocking mode receives return
// ErrWouldBlock instead of waiting (busy-spin loops).
func (s *sock) SetNonblock(on bool) error {
	if !s.acquire() {
		return ErrClosed
	}
	defer s.release()
	if err := unix.SetNonblock(s.fd, on); err != nil {
		return fmt.Errorf("tstamp: set O_NONBLOCK=%v: %w", on, err)
	}
	s.nonblock.Store(on)
	return nil
}

// StallRcvBuf is the receive buffer rig's sender and responder ask for:
// at 50 000 requests/s a datagram and a TX stamp (about 1.5 KiB of truesize
// together) arrive every 20 µs, so 8 MiB (16 MiB granted) holds ~200 ms of
// traffic — longer than the multi-ms stalls a VM shows — where the default
// 208 KiB held ~3 ms and lost 0.9 % of replies and TX stamps.
const StallRcvBuf = 8 << 20

// SetRcvBuf sizes the receive buffer to bytes and returns what the kernel
// granted (getsockopt SO_RCVBUF: twice the request, for its bookkeeping).
// The TX-stamp error queue is charged to the same buffer: when it is full
// new stamps and datagrams are dropped silently, so size it for what may
// queue during a stall. It uses SO_RCVBUFFORCE, which passes
// net.core.rmem_max, and falls back to SO_RCVBUF (capped by rmem_max)
// without CAP_NET_ADMIN; the granted size says which happened.
func (s *sock) SetRcvBuf(bytes int) (granted int, err error) {
	if !s.acquire() {
		return 0, ErrClosed
	}
	defer s.release()
	if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bytes); err != nil {
		if err != unix.EPERM {
			return 0, fmt.Errorf("tstamp: setsockopt(SO_RCVBUFFORCE=%d): %w", bytes, err)
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, bytes); err != nil {
			return 0, fmt.Errorf("tstamp: setsockopt(SO_RCVBUF=%d): %w", bytes, err)
		}
	}
	granted, err = unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0, fmt.Errorf("tstamp: getsockopt(SO_RCVBUF): %w", err)
	}
	return granted, nil
}

// SetBusyPoll sets SO_BUSY_POLL: how long (µs) a blocking receive busy-polls
// the device queue before sleeping. Values above net.core.busy_poll need
// CAP_NET_ADMIN.
func (s *sock) SetBusyPoll(usec int) error {
	return s.setInt(unix.SOL_SOCKET, unix.SO_BUSY_POLL, usec, "SO_BUSY_POLL")
}

func (s *sock) setInt(level, opt, v int, name string) error {
	if !s.acquire() {
		return ErrClosed
	}
	defer s.release()
	if err := unix.SetsockoptInt(s.fd, level, opt, v); err != nil {
		return fmt.Errorf("tstamp: setsockopt(%s=%d): %w", name, v, err)
	}
	return nil
}

// Ready tells which queues of a socket have something to read.
type Ready uint8

// The queues Poll reports.
const (
	ReadyData Ready = 1 << iota // the data queue (POLLIN), or the socket hung up
	ReadyErr                    // the error queue (POLLERR): TX stamps
)

// Poll waits up to timeout (negative: forever) until the socket is readable
// or its error queue holds TX stamps, and reports whether either is. EINTR
// reports false with no error. It does not allocate. Only one goroutine may
// Poll a socket at a time.
func (s *sock) Poll(timeout time.Duration) (readable bool, err error) {
	r, err := s.PollReady(timeout)
	return r != 0, err
}

// PollReady is Poll that says which queue is ready, so a caller reads only
// that one: a receive loop then does not pay an error-queue recvmsg before
// the data it was woken for. It does not allocate.
func (s *sock) PollReady(timeout time.Duration) (Ready, error) {
	if err := s.enterPoll(); err != nil {
		return 0, err
	}
	defer s.exitPoll()
	return s.ppoll(1, timeout)
}

// PollUntil is PollReady with an absolute deadline (zero Ready when it
// passes). The deadline lives in a timerfd polled beside the socket, not in
// ppoll's timeout: a ppoll woken by data before its timeout cancels its
// hrtimer on the way out, which reprograms the CPU's timer — on a VM a
// trap to the hypervisor on the wake-up path (docs/probes.md has what it
// cost on the development VM). The timer stays armed when data wakes the caller
// and is re-armed only when the deadline changes, off the wake-up path.
// The first call makes the timerfd; it does not allocate.
func (s *sock) PollUntil(deadline time.Time) (Ready, error) {
	if err := s.enterPoll(); err != nil {
		return 0, err
	}
	defer s.exitPoll()
	left := time.Until(deadline)
	if left <= 0 {
		return s.ppoll(1, 0)
	}
	if err := s.armTimer(deadline, left); err != nil {
		return 0, err
	}
	s.pollFds[1] = unix.PollFd{Fd: int32(s.timerFD), Events: unix.POLLIN}
	r, err := s.ppoll(2, -1)
	if s.pollFds[1].Revents&unix.POLLIN != 0 {
		// Fired: read the expiry count to disarm readiness.
		unix.RawSyscall(unix.SYS_READ, uintptr(s.timerFD), uintptr(unsafe.Pointer(&s.timerBuf[0])), 8)
		s.timerAt = time.Time{}
	}
	return r, err
}

// enterPoll holds the socket open and claims the poll state; exitPoll
// releases both.
func (s *sock) enterPoll() error {
	if !s.acquire() {
		return ErrClosed
	}
	if !s.pollMu.CompareAndSwap(false, true) {
		s.release()
		return errConcurrentPoll
	}
	return nil
}

func (s *sock) exitPoll() {
	s.pollMu.Store(false)
	s.release()
}

// armTimer makes PollUntil's timerfd on first use and arms it for
// deadline, left from now, unless it is armed for it already.
func (s *sock) armTimer(deadline time.Time, left time.Duration) error {
	if !s.hasTimer {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
		if err != nil {
			return fmt.Errorf("tstamp: timerfd_create: %w", err)
		}
		s.timerFD, s.hasTimer = fd, true
	}
	if s.timerAt.Equal(deadline) {
		return nil
	}
	// Relative: the kernel adds its own CLOCK_MONOTONIC now, and
	// time.Until reads Go's monotonic clock (the same clock).
	s.timerSpec.Value = unix.NsecToTimespec(int64(left))
	if err := unix.TimerfdSettime(s.timerFD, 0, &s.timerSpec, nil); err != nil {
		return fmt.Errorf("tstamp: timerfd_settime: %w", err)
	}
	s.timerAt = deadline
	return nil
}

// ppoll waits on the socket and, with nfds 2, on pollFds[1] as the caller
// set it, up to timeout (negative: no timeout; 0: no wait, no scheduler
// hand-off), and says which of the socket's queues are ready. EINTR is no
// readiness and no error. The caller holds the poll state.
func (s *sock) ppoll(nfds int, timeout time.Duration) (Ready, error) {
	s.pollFds[0] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN | unix.POLLERR}
	s.pollFds[1].Revents = 0
	var tsp uintptr
	if timeout >= 0 {
		s.pollTs = unix.NsecToTimespec(int64(timeout))
		tsp = uintptr(unsafe.Pointer(&s.pollTs))
	}
	fds := uintptr(unsafe.Pointer(&s.pollFds[0]))
	var n uintptr
	var e syscall.Errno
	if timeout == 0 {
		n, _, e = unix.RawSyscall6(unix.SYS_PPOLL, fds, uintptr(nfds), tsp, 0, 0, 0)
	} else {
		n, _, e = unix.Syscall6(unix.SYS_PPOLL, fds, uintptr(nfds), tsp, 0, 0, 0)
	}
	if e == unix.EINTR {
		return 0, nil
	}
	if e != 0 {
		return 0, errnoErr(e)
	}
	if s.state.Load()&1 != 0 {
		return 0, ErrClosed
	}
	var r Ready
	if n > 0 {
		ev := s.pollFds[0].Revents
		if ev&(unix.POLLIN|unix.POLLHUP) != 0 {
			r |= ReadyData
		}
		if ev&unix.POLLERR != 0 {
			r |= ReadyErr
		}
	}
	return r, nil
}

var errConcurrentPoll = errors.New("tstamp: Poll called concurrently on one socket")

func getsockopt(fd, level, opt int, buf []byte) (int, error) {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, e
	}
	return int(l), nil
}

// socketDevice returns the socket family and the name of the device it is
// bound to ("" when unbound), resolved through the socket itself so it is
// right inside any network namespace.
func socketDevice(fd int) (family int, ifname string, err error) {
	family, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return 0, "", fmt.Errorf("tstamp: fd %d: getsockopt(SO_DOMAIN): %w", fd, err)
	}
	if family == unix.AF_PACKET {
		var sa unix.RawSockaddrLinklayer
		l := uint32(unsafe.Sizeof(sa))
		_, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)))
		if e != 0 {
			return family, "", fmt.Errorf("tstamp: fd %d: getsockname: %w", fd, e)
		}
		if sa.Ifindex == 0 {
			return family, "", nil
		}
		name, err := ifnameOf(fd, int(sa.Ifindex))
		return family, name, err
	}
	name, err := unix.GetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE)
	if err != nil {
		return family, "", fmt.Errorf("tstamp: fd %d: getsockopt(SO_BINDTODEVICE): %w", fd, err)
	}
	return family, name, nil
}

// ifnameOf maps an ifindex to its name with SIOCGIFNAME on fd (fd's netns).
func ifnameOf(fd, ifindex int) (string, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return "", err
	}
	ifr.SetUint32(uint32(ifindex))
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFNAME, ifr); err != nil {
		return "", fmt.Errorf("tstamp: ifindex %d: SIOCGIFNAME: %w", ifindex, wrapNoDev(err))
	}
	return ifr.Name(), nil
}

// wrapNoDev makes ENODEV/ENXIO also match os.ErrNotExist.
func wrapNoDev(err error) error {
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("%w (%w)", err, errNotExist)
	}
	return err
}

// htons converts to network byte order on any host.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return nativeEndian.Uint16(b[:])
}
