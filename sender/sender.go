// Package sender emits the rig's requests on an absolute schedule and
// receives the replies.
//
// One locked OS thread sends on schedule and, while it waits for the next
// due time, serves the socket: the data queue (replies: rx stamps) and the
// error queue (TX stamps, keyed by sequence), blocking in ppoll or polling
// without blocking (Config.Poll). It does not allocate per request;
// records are preallocated, one per sequence.
package sender

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/responder"
)

// Config configures one round of requests.
type Config struct {
	Iface string         // interface the requests leave on (required)
	Group netip.AddrPort // multicast requests: the group:port
	// To is where unicast requests go: the responder's IPv4 address:port.
	// Exactly one of Group and To is set.
	To netip.AddrPort
	// Port is the local (source) port; 0 = ephemeral. Replies sent to a
	// reply group must use this port, and ReplyGroup is joined.
	Port       uint16
	ReplyGroup netip.Addr    // joined on Iface when replies go to a group
	Interval   time.Duration // default 1 ms
	Count      int           // requests in the round
	Size       int           // UDP payload bytes (default 64)
	Spin       time.Duration // spin window before each due time (default 50 µs)
	CPU        int           // pacer CPU; -1 = no pinning
	Sched      cpusched.Sched
	Timestamps tstamp.Mode
	// Poll is how the one sending thread waits for replies and TX stamps
	// between sends. Block (default): it sleeps in ppoll(2) and pays a
	// wake-up per reply. Busy: it polls the socket with non-blocking
	// recvmsg (sockperf --nonblocked's shape): no wake-up on the reply
	// path, one CPU at 100 %.
	Poll     responder.PollMode
	RunID    uint64 // random when 0
	Arm      string
	ArmIndex int
	Round    int
	Warmup   int
	// ReplyTimeout: a reply more than this after its request left is late
	// (samples.ReplyLate: flagged and counted apart from lost, stamps kept),
	// and the round waits this long after the last send. Default 1 s.
	ReplyTimeout time.Duration
	// TxWait bounds the wait for TX stamps after the last send (default 500 ms).
	TxWait time.Duration
	Host   string
	// Device answers for the NIC (nil: the host's); tests pass driver
	// profiles.
	Device tstamp.Device
}

// ErrConfig is wrapped by New for an invalid Config (bad input, not a host
// failure).
var ErrConfig = errors.New("invalid sender configuration")

func (c *Config) defaults() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

func (c *Config) check() error {
	if c.Interval == 0 {
		c.Interval = time.Millisecond
	}
	if c.Interval < 0 {
		return fmt.Errorf("interval %v must be positive (e.g. 1ms)", c.Interval)
	}
	if c.Size == 0 {
		c.Size = wire.DefaultSize
	}
	if err := wire.CheckSize(c.Size); err != nil {
		return err
	}
	if c.Count <= 0 || c.Count > 1<<31 {
		return fmt.Errorf("count %d out of range: 1..%d", c.Count, 1<<31)
	}
	if c.Spin < 0 {
		return fmt.Errorf("spin %v must not be negative", c.Spin)
	}
	if c.ReplyTimeout <= 0 {
		c.ReplyTimeout = time.Second
	}
	if c.TxWait <= 0 {
		c.TxWait = 500 * time.Millisecond
	}
	if err := responder.CheckDest(c.Group, c.To); err != nil {
		return err
	}
	if c.RunID == 0 {
		c.RunID = wire.NewRunID()
	}
	return nil
}

// Sender is one round's sender.
type Sender struct {
	cfg     Config
	conn    *tstamp.Conn
	granted tstamp.Granted
	hw      *tstamp.HWProof // do the requests and replies carry the NIC's stamps?
	sched   Schedule
	dst     netip.AddrPort // Group or To
	recs    []samples.Record
	txBuf   [wire.MaxSize]byte
	rxBuf   [2048]byte
	txHdr   wire.Header
	rxHdr   wire.Header

	cnt      samples.Counters // owned by the sending thread until Run returns
	maxSeq   uint64
	seenAny  bool
	lastSeq  int64 // last request sent, −1 before the first
	yield    cpusched.Yielder
	thread   *samples.ThreadUsage // the pacing thread over the round
	rcvbuf   int                  // SO_RCVBUF granted
	sent     atomic.Int64         // for Progress
	received atomic.Int64
	stopped  string
	started  time.Time
	phc      *tstamp.PHCRecord
	onTx     func(tstamp.TxStamp)
	txWant   samples.TxWant // the TX stamps a request gets back (none: timestamps off)
}

// New opens the sender socket on Iface with timestamps per Config.
func New(cfg Config) (*Sender, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.CPU >= 0 {
		if err := cpusched.CheckCPU(hostfs.Default(), cfg.CPU); err != nil {
			return nil, err
		}
	}
	ifi, err := net.InterfaceByName(cfg.Iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w (list them with `ip link`)", cfg.Iface, os.ErrNotExist)
	}
	conn, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), cfg.Port),
		tstamp.UDPOptions{Device: cfg.Iface, ReuseAddr: cfg.ReplyGroup.IsValid()})
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, conn: conn, dst: cfg.dest(), recs: make([]samples.Record, cfg.Count), lastSeq: -1}
	s.onTx = s.fileTx // made once: the error-queue drain must not allocate
	fail := func(err error) (*Sender, error) { conn.Close(); return nil, err }
	if s.granted, err = conn.EnableTimestampingWith(cfg.Timestamps, tstamp.Options{Device: cfg.Device}); err != nil {
		return fail(err)
	}
	s.hw = tstamp.NewHWProof(s.granted, cfg.TxWait, "the sender's UDP socket", "replies", "requests")
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
	if cfg.Group.IsValid() {
		if err := conn.SetMulticastInterface(ifi.Index); err != nil {
			return fail(err)
		}
		if err := conn.SetMulticastLoop(false); err != nil {
			return fail(err)
		}
	}
	if s.rcvbuf, err = conn.SetRcvBuf(tstamp.StallRcvBuf); err != nil {
		return fail(err)
	}
	if cfg.ReplyGroup.IsValid() {
		if err := conn.JoinGroup(cfg.ReplyGroup, ifi.Index); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// Granted reports the timestamping the kernel granted.
func (s *Sender) Granted() tstamp.Granted { return s.granted }

// RunID is the run id carried by every request.
func (s *Sender) RunID() uint64 { return s.cfg.RunID }

// Progress returns requests sent and replies received so far.
func (s *Sender) Progress() (sent, received int) {
	return int(s.sent.Load()), int(s.received.Load())
}

// Run sends Count requests and collects replies and TX stamps. On ctx
// cancellation it stops sending, still collects what is in flight, and
// returns ctx's error with the records kept.
func (s *Sender) Run(ctx context.Context) error {
	defer cpusched.EnsureProcs(2)() // the sending thread, and the rest
	gc := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gc)
	if s.phc = s.granted.PHC(); s.phc != nil {
		s.phc.Take()
		defer s.phc.Take()
	}
	s.started = time.Now()
	// Start one interval from now so the thread is set up before request 0.
	s.sched = NewSchedule(s.started.Add(s.cfg.Interval), s.cfg.Interval)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // pinned/real-time: never returned to the pool
		done <- s.run(ctx)
	}()
	err := <-done
	switch {
	case ctx.Err() != nil:
		s.stopped = samples.StoppedInterrupted + context.Cause(ctx).Error()
	case err != nil:
		s.stopped = samples.StoppedFailed + err.Error()
	}
	s.hw.Finish()
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
	s.finish()
	if err != nil {
		return err
	}
	if err := s.hw.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// run is the sender: one locked thread sends on schedule and, while it
// waits for the next due time, serves the socket (replies and TX stamps)
// the way Poll says: blocking in ppoll or polling without blocking.
//
// One thread, not a pacer and a receiver: a second thread on the sender's
// CPU must be woken for every reply and, when the pacer spins, waits for
// the scheduler to preempt it (median user RTT 5.5–6.5 ms at a 1 ms interval
// with --spin 1ms on a 2-vCPU VM), and every TX stamp woke it a second time.
func (s *Sender) run(ctx context.Context) error {
	if err := s.setupPacer(); err != nil {
		return err
	}
	meter := cpusched.StartMeter()
	defer func() { s.thread = meter.Stop() }()
	done := ctx.Done()
send:
	for k := 0; k < s.cfg.Count; k++ {
		select {
		case <-done:
			break send
		default:
		}
		if err := s.waitServing(s.sched.Due(uint64(k))); err != nil {
			return err
		}
		s.sendNow(uint64(k))
		if err := s.hw.Err(); err != nil {
			return err // timestamps: hardware, and the NIC's stamps do not come
		}
	}
	// Collect what is in flight; check completion (a scan of the records)
	// once a millisecond, not on every wake-up.
	for next := time.Now(); ; {
		if err := s.serve(next); err != nil {
			return err
		}
		if now := time.Now(); now.After(next) {
			s.drainErrqueue() // serve reads it only for the last request
			if s.receiveDone() {
				return nil
			}
			next = now.Add(time.Millisecond)
		}
	}
}

// busyGuard: a busy wait stops polling the socket this long before a due
// time and spins on the clock alone, so a poll in progress does not make
// the send late.
const busyGuard = 3 * time.Microsecond

// replyGuard: while the reply to the last request is awaited, a blocking
// wait sleeps in ppoll until this long before the due time even when the
// spin window is longer, so the reply wakes the thread (sockperf's client
// shape with --spin ≥ interval: block for the reply, spin to the next send).
const replyGuard = 50 * time.Microsecond

// quietBefore: the thread yields to the Go scheduler (cpusched.Yielder)
// only when the next send is at least this far off and no reply is awaited.
const quietBefore = 200 * time.Microsecond

// waitServing waits until due, serving the socket meanwhile: Block sleeps
// in ppoll until due − Spin (due − min(Spin, replyGuard) while a reply is
// awaited), Busy polls without blocking until due − busyGuard; both then
// spin on the clock alone. It does not allocate.
func (s *Sender) waitServing(due time.Time) error {
	for {
		now := time.Now()
		left := due.Sub(now)
		var wake time.Time // Block: sleep until then; Busy: serve ignores it
		if s.cfg.Poll == responder.Busy {
			if left <= busyGuard {
				break
			}
			if !s.awaitingReply() && !s.txAwaited() {
				// Nothing due from the socket: spin on the clock in user
				// space, as sockperf's client does, not in recvmsg.
				continue
			}
		} else {
			awaiting := s.awaitingReply()
			if !awaiting && left > quietBefore && s.yield.Quiet(now) {
				continue
			}
			spin := s.cfg.Spin
			if awaiting {
				spin = min(spin, replyGuard)
			}
			if left <= spin {
				break
			}
			wake = due.Add(-spin)
		}
		if err := s.serve(wake); err != nil {
			return err
		}
	}
	for time.Now().Before(due) {
	}
	return nil
}

// awaitingReply reports whether the last request sent has no reply yet.
func (s *Sender) awaitingReply() bool {
	k := s.lastSeq
	return k >= 0 && s.recs[k].T[samples.TxUser] != 0 && s.recs[k].T[samples.RxUser] == 0
}

// txAwaited reports whether the last request sent still awaits its TX
// stamp: a busy wait reads the error queue only then, so it spins on one
// recvmsg, not two (older stamps still arriving are read with the next).
func (s *Sender) txAwaited() bool {
	k := s.lastSeq
	return k >= 0 && samples.SenderTx.Awaits(&s.recs[k], s.txWant)
}

// serve reads what the socket holds: Busy without blocking, Block after
// waiting until the deadline for either queue (tstamp's PollUntil: a
// reply's wake-up does not pay for cancelling a ppoll timeout). Replies are
// read before TX stamps so a reply's user stamp does not wait behind an
// error-queue read. It does not allocate.
func (s *Sender) serve(deadline time.Time) error {
	var ready tstamp.Ready
	if s.cfg.Poll == responder.Busy {
		ready = tstamp.ReadyData
		if s.txAwaited() {
			ready |= tstamp.ReadyErr
		}
	} else {
		var err error
		if ready, err = s.conn.PollUntil(deadline); err != nil {
			return fmt.Errorf("poll: %w", err)
		}
	}
	if ready&tstamp.ReadyData != 0 {
		if err := s.drainReplies(); err != nil {
			return err
		}
	}
	if ready&tstamp.ReadyErr != 0 {
		s.drainErrqueue()
	}
	return nil
}

func (s *Sender) setupPacer() error {
	if s.cfg.CPU >= 0 {
		if err := cpusched.PinThread(s.cfg.CPU); err != nil {
			return err
		}
	}
	if err := cpusched.Apply(s.cfg.Sched); err != nil {
		return err
	}
	return cpusched.SetTimerSlack(time.Nanosecond)
}

// sendNow sends request k. It does not allocate.
func (s *Sender) sendNow(k uint64) {
	rec := &s.recs[k]
	rec.Seq = k
	rec.T[samples.Due] = s.sched.DueNS(k)
	s.txHdr = wire.Header{Type: wire.Request, RunID: s.cfg.RunID, Arm: uint32(s.cfg.ArmIndex),
		Round: uint32(s.cfg.Round), Seq: k, Due: rec.T[samples.Due]}
	p := wire.Encode(s.txBuf[:], s.cfg.Size, &s.txHdr)
	now := time.Now().UnixNano()
	if err := s.conn.SendTo(p, s.dst, uint32(k)); err != nil {
		s.cnt.SendErrors++
		return
	}
	rec.T[samples.TxUser] = now
	s.cnt.Sent++
	s.lastSeq = int64(k)
	s.sent.Add(1)
	s.hw.Sent(now)
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
}

func (s *Sender) receiveDone() bool {
	var last int64 // the last send's tx_user
	if s.lastSeq >= 0 {
		last = s.recs[s.lastSeq].T[samples.TxUser]
	}
	now := time.Now().UnixNano()
	allReplies := s.received.Load() >= s.sent.Load()
	repliesDone := allReplies || now-last > int64(s.cfg.ReplyTimeout)
	txDone := samples.SenderTx.Awaiting(s.recs, s.txWant) == 0 || now-last > int64(s.cfg.TxWait)
	return repliesDone && txDone
}

func (s *Sender) drainErrqueue() { s.conn.DrainTx(s.onTx) }

// fileTx files one TX stamp under its sequence; a stamp read long after
// its request's due time is late: kept, and counted.
func (s *Sender) fileTx(ts tstamp.TxStamp) {
	if !samples.SenderTx.File(s.recs, ts.Key, ts.SW, s.hw.TxStamp(ts.HW)) {
		return
	}
	if time.Now().UnixNano()-s.sched.DueNS(uint64(ts.Key)) > int64(s.cfg.TxWait) {
		s.cnt.TxStampsLate++
	}
}

func (s *Sender) drainReplies() error {
	for {
		n, _, st, err := s.conn.Recv(s.rxBuf[:], syscall.MSG_DONTWAIT)
		var user int64
		switch {
		case err == nil:
			user = time.Now().UnixNano() // only for a datagram, not an empty read
		case errors.Is(err, tstamp.ErrWouldBlock):
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, tstamp.ErrTruncated):
			s.cnt.Malformed++
			continue
		default:
			return fmt.Errorf("recvmsg: %w", err)
		}
		s.onReply(s.rxBuf[:n], st, user)
	}
}

// onReply files one received datagram. It does not allocate.
func (s *Sender) onReply(p []byte, st tstamp.Stamps, user int64) {
	if err := wire.Decode(p, s.cfg.RunID, &s.rxHdr); err != nil {
		if err == wire.ErrShort || err == wire.ErrMagic || err == wire.ErrRunID {
			s.cnt.Foreign++
		} else {
			s.cnt.Malformed++
		}
		return
	}
	h := &s.rxHdr
	if h.Type != wire.Reply || h.Seq >= uint64(len(s.recs)) || h.Arm != uint32(s.cfg.ArmIndex) || h.Round != uint32(s.cfg.Round) {
		s.cnt.Foreign++
		return
	}
	r := &s.recs[h.Seq]
	if r.T[samples.TxUser] == 0 {
		// A reply to a request not sent yet (or whose send failed) is
		// forged or another sender's: it must not take the sequence.
		s.cnt.Foreign++
		return
	}
	if r.T[samples.RxUser] != 0 {
		r.Flags |= samples.FlagDuplicate
		s.cnt.Duplicated++
		return
	}
	if s.seenAny && h.Seq < s.maxSeq {
		r.Flags |= samples.FlagReordered
		s.cnt.Reordered++
	}
	if !s.seenAny || h.Seq > s.maxSeq {
		s.maxSeq, s.seenAny = h.Seq, true
	}
	// Late is judged in finish, once the TX stamps are in (ReplyLate).
	r.T[samples.RxSW] = st.SW
	r.T[samples.RxHW] = s.hw.Recv(st.HW)
	r.T[samples.RxUser] = user
	s.received.Add(1)
}

// finish completes the counters after the thread stopped.
func (s *Sender) finish() {
	c := s.cnt
	c.Received, c.Late = 0, 0
	for i := range s.recs {
		r := &s.recs[i]
		if r.T[samples.TxUser] == 0 {
			r.Seq = uint64(i)
			r.Flags |= samples.FlagNotSent
			continue
		}
		if r.T[samples.RxUser] != 0 {
			c.Received++
			if samples.ReplyLate(r, int64(s.cfg.ReplyTimeout)) {
				r.Flags |= samples.FlagLate
				c.Late++
			}
		}
		if samples.SenderTx.Awaits(r, s.txWant) {
			c.TxStampsMissing++
		}
	}
	c.Lost = c.Sent - c.Received
	s.cnt = c
}

// Thread returns the pacing thread's CPU use over the round (valid after
// Run; nil when the kernel gave no figures).
func (s *Sender) Thread() *samples.ThreadUsage { return s.thread }

// Counters returns the round's counts (valid after Run).
func (s *Sender) Counters() samples.Counters { return s.cnt }

// Records returns one record per sequence (valid after Run).
func (s *Sender) Records() []samples.Record { return s.recs }

// Header describes the sender's sample file.
func (s *Sender) Header() samples.Header {
	clocks := responder.Clocks(s.granted, s.hw, s.cfg.Iface, "rx", "tx")
	clocks["due"] = samples.Clock{Source: "user", Clock: "CLOCK_REALTIME", Note: "start + k·interval"}
	h := samples.Header{
		WireVersion: wire.Version,
		RigVersion:  version.String(),
		Role:        samples.RoleSender,
		RunID:       wire.FormatRunID(s.cfg.RunID),
		Arm:         s.cfg.Arm,
		ArmIndex:    s.cfg.ArmIndex,
		Round:       s.cfg.Round,
		Host:        s.cfg.Host,
		Iface:       s.cfg.Iface,
		IntervalNS:  int64(s.cfg.Interval),
		Count:       s.cfg.Count,
		Size:        s.cfg.Size,
		Warmup:      s.cfg.Warmup,
		Clocks:      clocks,
		Settings: map[string]any{
			"cpu": s.cfg.CPU, "sched": s.cfg.Sched.String(), "rcvbuf_bytes": s.rcvbuf, "spin_ns": int64(s.cfg.Spin), "poll": s.cfg.Poll.String(),
			"timestamps": s.granted.String(), "tx_keying": s.conn.Keying().String(),
			"reply_timeout_ns": int64(s.cfg.ReplyTimeout), "tx_wait_ns": int64(s.cfg.TxWait), "phc": s.phc,
			"hardware_stamps": s.hw.String(),
		},
		StartedAt: s.started.UTC().Format(time.RFC3339Nano),
	}
	h.SetRequests(s.cfg.Group, s.cfg.To)
	return h
}

// WriteFile writes the sender's sample file.
func (s *Sender) WriteFile(path string) error {
	return samples.WriteFile(path, s.Header(), s.recs, samples.Footer{Thread: s.thread,
		Counters: s.cnt, EndedAt: time.Now().UTC().Format(time.RFC3339Nano), Stopped: s.stopped,
	})
}

// Close releases the socket.
func (s *Sender) Close() error { return s.conn.Close() }
