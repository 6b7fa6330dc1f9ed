// Package sender emits the rig's requests on an absolute schedule and
// receives the replies.
//
// One locked OS thread sends on schedule and, while it waits for the next
// due time, serves the socket: the data queue (replies: rx stamps) and the
// error queue (TX stamps, keyed by sequence), blocking in ppoll or polling
// without blocking (probe.Send.Poll). It does not allocate per request;
// records are preallocated, one per sequence.
//
// Run leaves the Go runtime as it finds it. rig send runs it with the
// garbage collector off and at least two Ps (cpusched.TuneRuntime): a
// collection would stop the measured loop, and with one P the locked
// thread takes turns with every other goroutine. A program or a test that
// embeds the package and wants rig's numbers does the same.
package sender

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// Options are what New takes beside the command line: what is not one of
// rig send's flags.
type Options struct {
	Host string // names this host in the sample file
	// Device answers for the NIC (nil: the host's); tests pass driver
	// profiles. Owner is who keeps the NIC's timestamping config
	// (tstamp.Options.Owner): no hardware TX stamps are taken next to it.
	Device tstamp.Device
	Owner  string
}

// Sender is one round's sender.
type Sender struct {
	cfg     probe.Send
	opt     Options
	conn    *tstamp.Conn
	granted tstamp.Granted
	hw      *tstamp.HWProof // do the requests and replies carry the NIC's stamps?
	sched   Schedule
	dst     netip.AddrPort   // Group or Unicast
	recs    []samples.Record // per request: its send stamps
	// reps holds the reply slots, Responders per request: request k's
	// reply from responder i is reps[k·Responders+i] (its rx stamps and
	// flags). Records merges them with recs after the round.
	reps    []samples.Record
	per     []samples.Counters // per responder: replies, duplicates, reordering
	maxSeqs []int64            // per responder: highest sequence replied, −1 before the first
	out     []samples.Record   // Records, built by finish
	txBuf   [wire.MaxSize]byte
	rxBuf   [2048]byte
	txHdr   wire.Header
	rxHdr   wire.Header

	cnt      samples.Counters // owned by the sending thread until Run returns
	lastSeq  int64            // last request sent, −1 before the first
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
	// txMisses counts the sender's reads of the error queue right after a
	// send that found no stamp; at txEagerMisses it stops trying (the
	// stamps come later: the NIC's) and reads them while it waits instead
	// (Block: on POLLERR; Busy: while the last request's is awaited).
	txMisses int
	txFiled  func() bool // !txAwaited, made once (ReadTx must not allocate)
	nat      *nativeLoop // the native engine's program, when it runs the loop (NewNative)
}

// txEagerMisses: after this many sends whose TX stamp was not queued yet
// when sendmsg returned, the sender stops reading the error queue right
// after each send.
const txEagerMisses = 3

// New opens the sender socket on Iface with timestamps per cfg, rig
// send's command line (probe.DefaultSend and its changes): what cfg.Check
// refuses is bad input (cli.ErrUsage). A zero RunID becomes a random one.
func New(cfg probe.Send, o Options) (*Sender, error) {
	ifi, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	conn, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), cfg.LocalPort()),
		tstamp.UDPOptions{Device: cfg.Iface, ReuseAddr: cfg.ReplyGroup.IsValid()})
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, opt: o, conn: conn, dst: cfg.Dest(), lastSeq: -1}
	s.yield.Cycle = cfg.Interval // a quiet moment comes once a request
	s.allocate()
	s.onTx = s.fileTx // made once: the error-queue drain must not allocate
	s.txFiled = func() bool { return !s.txAwaited() }
	fail := func(err error) (*Sender, error) { conn.Close(); return nil, err }
	if s.granted, err = conn.EnableTimestamping(cfg.Timestamps, tstamp.Options{Device: o.Device, Owner: o.Owner}); err != nil {
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
		if err := conn.JoinGroup(cfg.ReplyGroup.Addr(), ifi.Index); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// prepare checks cfg as New and NewNative do, gives it a run id when it
// has none, and finds its interface.
func prepare(cfg *probe.Send) (*net.Interface, error) {
	if err := cfg.Check(); err != nil {
		return nil, cli.Usage(err)
	}
	if cfg.RunID == 0 {
		cfg.RunID = wire.NewRunID()
	}
	return cfg.Host(cfg.CPU)
}

// allocate makes the records and reply slots of the round up front: the
// sending thread fills them and never allocates.
func (s *Sender) allocate() {
	n := s.cfg.Responders
	s.recs = make([]samples.Record, s.cfg.Count)
	s.reps = make([]samples.Record, s.cfg.Count*n)
	s.per = make([]samples.Counters, n)
	s.maxSeqs = make([]int64, n)
	for i := range s.maxSeqs {
		s.maxSeqs[i] = -1
	}
}

// Granted reports the timestamping the kernel granted.
func (s *Sender) Granted() tstamp.Granted { return s.granted }

// RunID is the run id carried by every request.
func (s *Sender) RunID() uint64 { return s.cfg.RunID }

// Progress returns requests sent and replies received so far.
func (s *Sender) Progress() (sent, received int) {
	if n := s.nat; n != nil && !n.taken.Load() {
		return int(n.proc.Live(native.LiveSent)), int(n.proc.Live(native.LiveReceived)) // the program's, as it runs
	}
	return int(s.sent.Load()), int(s.received.Load())
}

// Run sends Count requests and collects replies and TX stamps. On ctx
// cancellation it stops sending, still collects what is in flight, and
// returns ctx's error with the records kept.
func (s *Sender) Run(ctx context.Context) error {
	if s.phc = s.granted.PHC(); s.phc != nil {
		s.phc.Take()
		defer s.phc.Take()
	}
	s.started = time.Now()
	if s.nat != nil {
		return s.runNative(ctx)
	}
	// Start one interval from now so the thread is set up before request 0.
	s.sched = NewSchedule(s.started.Add(s.cfg.Interval), s.cfg.Interval)
	// The thread stops sending when ctx is done and still collects what
	// is in flight: RunLocked needs no stop function.
	var err error
	s.stopped, err = cpusched.RunLocked(ctx, cpusched.Thread{CPU: s.cfg.CPU, Sched: s.cfg.Sched}, func() error { return s.run(ctx) }, nil)
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
	// Pinned and scheduled by RunLocked; a 1 ns timer slack so that a
	// sleep until due − Spin ends then, not up to 50 µs later.
	if err := cpusched.SetTimerSlack(time.Nanosecond); err != nil {
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
		if s.cfg.Poll == probe.Busy {
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

// awaitingReply reports whether the last request sent lacks a responder's
// reply.
func (s *Sender) awaitingReply() bool {
	k := s.lastSeq
	if k < 0 || s.recs[k].T[samples.TxUser] == 0 {
		return false
	}
	n := int64(s.cfg.Responders)
	for _, r := range s.reps[k*n : (k+1)*n] {
		if r.T[samples.RxUser] == 0 {
			return true
		}
	}
	return false
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
	if s.cfg.Poll == probe.Busy {
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

// sendNow sends request k. It does not allocate.
func (s *Sender) sendNow(k uint64) {
	rec := &s.recs[k]
	rec.Seq = k
	// One clock reading gives tx_user and due (Schedule.DueNS): the header
	// written after it takes tens of nanoseconds.
	t := time.Now()
	now := t.UnixNano()
	rec.T[samples.Due] = s.sched.DueNS(k, t)
	s.txHdr = wire.Header{Type: wire.Request, RunID: s.cfg.RunID, Arm: uint32(s.cfg.ArmIndex),
		Round: uint32(s.cfg.Round), Seq: k, Due: rec.T[samples.Due]}
	p := wire.Encode(s.txBuf[:], s.cfg.Size, &s.txHdr)
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
	if s.txMisses < txEagerMisses && s.txWant != 0 {
		s.readTxEager()
	}
}

// readTxEager reads the error queue right after a send, until its stamp
// is filed. A software TX stamp is taken while sendmsg runs (the driver's
// transmit), so it is usually queued already: read now, it does not make
// the wait for the
// reply return at once for POLLERR and poll again (one ppoll less per
// request), and a busy wait polls for the reply alone, not the error
// queue between its reads (one recvmsg per request where it made two: the
// stamp, then the empty queue). It does not allocate.
func (s *Sender) readTxEager() {
	if s.conn.ReadTx(s.onTx, s.txFiled) {
		s.txMisses = 0
	} else {
		s.txMisses++ // empty: this send's stamp comes later
	}
}

func (s *Sender) receiveDone() bool {
	var last int64 // the last send's tx_user
	if s.lastSeq >= 0 {
		last = s.recs[s.lastSeq].T[samples.TxUser]
	}
	now := time.Now().UnixNano()
	allReplies := s.received.Load() >= s.sent.Load()*int64(s.cfg.Responders)
	repliesDone := allReplies || now-last > int64(s.cfg.ReplyTimeout)
	txDone := samples.SenderTx.Awaiting(s.recs, s.txWant) == 0 || now-last > int64(s.cfg.TxWait)
	return repliesDone && txDone
}

func (s *Sender) drainErrqueue() { s.conn.DrainTx(s.onTx) }

// fileTx files one TX stamp under its sequence; a stamp read long after
// its request's due time is late: kept, and counted.
func (s *Sender) fileTx(ts tstamp.TxStamp) {
	hw := s.hw.TxStamp(ts.HW, cmp.Or(ts.SW, samples.SenderTx.SWOf(s.recs, ts.Key)))
	if !samples.SenderTx.File(s.recs, ts.Key, ts.SW, hw) {
		return
	}
	if time.Now().UnixNano()-s.recs[ts.Key].T[samples.Due] > int64(s.cfg.TxWait) {
		s.cnt.TxStampsLate++
	}
}

// drainReplies reads the replies queued. The blocking sender stops at the
// first reply it files (one recvmsg per reply, not a second one that finds
// the queue empty: poll reports whatever is left); otherwise it reads until
// the queue is empty.
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
		if s.onReply(s.rxBuf[:n], st, user) && s.cfg.Poll != probe.Busy {
			return nil
		}
	}
}

// onReply files one received datagram and reports whether it was a reply
// to a request of this round (duplicates included). It does not allocate.
func (s *Sender) onReply(p []byte, st tstamp.Stamps, user int64) bool {
	if err := wire.Decode(p, s.cfg.RunID, &s.rxHdr); err != nil {
		if err == wire.ErrShort || err == wire.ErrMagic || err == wire.ErrRunID {
			s.cnt.Foreign++
		} else {
			s.cnt.Malformed++
		}
		return false
	}
	h := &s.rxHdr
	if h.Type != wire.Reply || h.Seq >= uint64(len(s.recs)) || h.Responder >= uint32(s.cfg.Responders) ||
		h.Arm != uint32(s.cfg.ArmIndex) || h.Round != uint32(s.cfg.Round) {
		s.cnt.Foreign++ // a request, another arm's or round's, or no responder of ours
		return false
	}
	if s.recs[h.Seq].T[samples.TxUser] == 0 {
		// A reply to a request not sent yet (or whose send failed) is
		// forged or another sender's: it must not take the sequence.
		s.cnt.Foreign++
		return false
	}
	id := h.Responder
	r := &s.reps[h.Seq*uint64(s.cfg.Responders)+uint64(id)]
	pc := &s.per[id]
	if r.T[samples.RxUser] != 0 {
		r.Flags |= samples.FlagDuplicate
		s.cnt.Duplicated++
		pc.Duplicated++
		return true
	}
	seq := int64(h.Seq)
	if seq < s.maxSeqs[id] {
		r.Flags |= samples.FlagReordered
		s.cnt.Reordered++
		pc.Reordered++
	}
	s.maxSeqs[id] = max(s.maxSeqs[id], seq)
	// Late is judged in finish, once the TX stamps are in (ReplyLate).
	r.T[samples.RxSW] = st.SW
	r.T[samples.RxHW] = s.hw.Recv(st.HW, st.SW)
	r.T[samples.RxUser] = user
	s.received.Add(1)
	return true
}

// finish completes the counters after the thread stopped and merges each
// request's send stamps with each responder's reply into the records: one
// per request and responder, in that order.
func (s *Sender) finish() {
	c := s.cnt
	c.Received, c.Late = 0, 0
	n := s.cfg.Responders
	s.out = make([]samples.Record, 0, len(s.reps))
	for k := range s.recs {
		q := &s.recs[k]
		q.Seq = uint64(k)
		if q.T[samples.TxUser] == 0 {
			q.Flags |= samples.FlagNotSent
		} else if samples.SenderTx.Awaits(q, s.txWant) {
			c.TxStampsMissing++
		}
		for id := range n {
			r := *q
			rep := &s.reps[k*n+id]
			r.Responder = uint32(id)
			r.Flags |= rep.Flags
			for _, st := range [...]samples.Stamp{samples.RxHW, samples.RxSW, samples.RxUser} {
				r.T[st] = rep.T[st]
			}
			if q.T[samples.TxUser] != 0 && r.T[samples.RxUser] != 0 {
				s.per[id].Received++
				if samples.ReplyLate(&r, int64(s.cfg.ReplyTimeout)) {
					r.Flags |= samples.FlagLate
					s.per[id].Late++
				}
			}
			s.out = append(s.out, r)
		}
	}
	for id := range s.per {
		p := &s.per[id]
		c.Received += p.Received
		c.Late += p.Late
		p.Lost = c.Sent - p.Received
		// What no reply tells apart is the round's.
		p.Sent, p.SendErrors, p.Foreign, p.Malformed = c.Sent, c.SendErrors, c.Foreign, c.Malformed
		p.TxStampsMissing, p.TxStampsLate = c.TxStampsMissing, c.TxStampsLate
	}
	c.Lost = c.Sent*uint64(n) - c.Received
	s.cnt = c
}

// Thread returns the pacing thread's CPU use over the round (valid after
// Run; nil when the kernel gave no figures).
func (s *Sender) Thread() *samples.ThreadUsage { return s.thread }

// Counters returns the round's counts (valid after Run).
func (s *Sender) Counters() samples.Counters { return s.cnt }

// Records returns one record per sequence and responder, in that order
// (valid after Run).
func (s *Sender) Records() []samples.Record { return s.out }

// PerResponder returns each responder's counters (valid after Run; nil
// with one responder, whose counters are Counters).
func (s *Sender) PerResponder() []samples.Counters {
	if s.cfg.Responders == 1 {
		return nil
	}
	return s.per
}

// Header describes the sender's sample file.
func (s *Sender) Header() samples.Header {
	clocks := probe.Clocks(s.granted, s.hw, s.cfg.Iface, "rx", "tx")
	clocks["due"] = samples.Clock{Source: "user", Clock: "CLOCK_REALTIME", Note: "start + k·interval"}
	h := s.cfg.Header(samples.RoleSender, s.cfg.RunID, s.cfg.ArmIndex, s.cfg.Round, s.opt.Host, s.started)
	h.IntervalNS, h.Count, h.Size, h.Warmup, h.Clocks = int64(s.cfg.Interval), s.cfg.Count, s.cfg.Size, s.cfg.Warmup, clocks
	h.Settings = map[string]any{
		"cpu": s.cfg.CPU, "sched": s.cfg.Sched.String(), "rcvbuf_bytes": s.rcvbuf, "spin_ns": int64(s.cfg.Spin), "poll": s.cfg.Poll.String(),
		"timestamps": s.granted.String(), "tx_keying": s.keying().String(),
		"reply_timeout_ns": int64(s.cfg.ReplyTimeout), "tx_wait_ns": int64(s.cfg.TxWait), "phc": s.phc,
		"hardware_stamps": s.hw.String(),
	}
	h.SetResponders(s.cfg.Responders)
	s.nat.settings(h.Settings)
	return h
}

// WriteFile writes the sender's sample file.
func (s *Sender) WriteFile(path string) error {
	return samples.WriteFile(path, s.Header(), s.out, samples.Footer{Thread: s.thread,
		Counters: s.cnt, PerResponder: s.PerResponder(), EndedAt: samples.Time(time.Now()), Stopped: s.stopped,
	})
}

// Close releases the socket, or stops the native program.
func (s *Sender) Close() error {
	if s.nat != nil {
		s.nat.proc.Close()
		return nil
	}
	return s.conn.Close()
}
