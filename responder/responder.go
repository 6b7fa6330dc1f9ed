// Package responder is the host under test: it answers every rig request
// from a loop on a locked, pinned OS thread, and records when the request
// reached the NIC, the kernel and the program, and when the reply left them.
//
// The loop does not allocate: buffers and one record per sequence are
// preallocated. Foreign and malformed packets are counted and ignored.
//
// Run leaves the Go runtime as it finds it. rig respond runs it with the
// garbage collector off and at least two Ps (cpusched.TuneRuntime): a
// collection would stop the measured loop, and with one P the locked
// thread takes turns with every other goroutine. A program or a test that
// embeds the package and wants rig's numbers does the same.
package responder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// Options are what New and NewNative take beside the command line: what
// is not one of rig respond's flags.
type Options struct {
	Host string // names this host in the sample file
	// Ready is called from the loop thread once the socket is joined and
	// the loop is about to wait for the first request.
	Ready func()
	// Device answers for the NIC (nil: the host's); tests pass driver
	// profiles. Owner is who keeps the NIC's timestamping config
	// (tstamp.Options.Owner): no hardware TX stamps are taken next to it.
	Device tstamp.Device
	Owner  string
	Note   func(string) // hears Native's notes (Open)
}

// Responder answers requests and records their stamps.
type Responder struct {
	cfg     probe.Respond
	opt     Options
	conn    *tstamp.Conn
	granted tstamp.Granted
	hw      *tstamp.HWProof // do the requests and replies carry the NIC's stamps?
	recs    []samples.Record
	cnt     samples.Counters
	runID   uint64
	buf     [2048]byte
	hdr     wire.Header
	stop    atomic.Bool
	tid     atomic.Int64
	started time.Time
	stopped string
	phc     *tstamp.PHCRecord
	onTx    func(tstamp.TxStamp)
	txFiled func() bool // !txAwaited, made once (ReadTx must not allocate)
	yield   cpusched.Yielder
	lastReq int64                // the last request's user RX stamp (ns): the Yielder's cycle
	thread  *samples.ThreadUsage // the loop thread over the round
	last    *samples.Record      // the last reply sent; nil: none, or out of range
	rcvbuf  int                  // SO_RCVBUF granted
	txWant  samples.TxWant       // the TX stamps a reply gets back (none: timestamps off)
}

// New opens the responder's socket for cfg, rig respond's command line
// (probe.DefaultRespond and its changes): bound to the group's port,
// joined to the group on Iface, timestamping enabled per cfg.Timestamps.
// What cfg.Check refuses is bad input (cli.ErrUsage); other errors name
// the interface or the missing privilege.
func New(cfg probe.Respond, o Options) (*Responder, error) {
	ifi, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	laddr := netip.AddrPortFrom(netip.IPv4Unspecified(), cfg.Group.Port())
	if cfg.Unicast.IsValid() {
		laddr = cfg.Unicast
	}
	conn, err := tstamp.ListenUDP(laddr,
		tstamp.UDPOptions{Device: cfg.Iface, ReuseAddr: true, NonBlocking: cfg.Poll.Mode == probe.Busy})
	if err != nil {
		return nil, err
	}
	r := &Responder{cfg: cfg, opt: o, conn: conn, runID: cfg.RunID, recs: make([]samples.Record, cfg.Capacity)}
	r.onTx = r.fileTx // made once: the error-queue drain must not allocate
	r.txFiled = func() bool { return !r.txAwaited() }
	fail := func(err error) (*Responder, error) { conn.Close(); return nil, err }
	if r.granted, err = conn.EnableTimestamping(cfg.Timestamps, tstamp.Options{Device: o.Device, Owner: o.Owner}); err != nil {
		return fail(err)
	}
	r.hw = tstamp.NewHWProof(r.granted, cfg.TxWait, "the responder's UDP socket", "requests", "replies")
	r.txWant = samples.TxWanted(r.granted.Software(), r.hw.TX())
	if cfg.Group.IsValid() {
		if err := conn.JoinGroup(cfg.Group.Addr(), ifi.Index); err != nil {
			return fail(err)
		}
	}
	if err := conn.SetMulticastInterface(ifi.Index); err != nil {
		return fail(err)
	}
	if err := conn.SetMulticastLoop(false); err != nil {
		return fail(err)
	}
	if r.rcvbuf, err = conn.SetRcvBuf(tstamp.StallRcvBuf); err != nil {
		return fail(err)
	}
	if cfg.Poll.BusyPollUS > 0 {
		if err := conn.SetBusyPoll(cfg.Poll.BusyPollUS); err != nil {
			return fail(err)
		}
	}
	return r, nil
}

// prepare checks cfg as both engines need it — the command line, the
// CPU, the interface (returned) and a unicast address on it.
func prepare(cfg probe.Respond) (*net.Interface, error) {
	if err := cfg.Check(); err != nil {
		return nil, cli.Usage(err)
	}
	ifi, err := cfg.Host(cfg.CPU)
	if err != nil {
		return nil, err
	}
	if cfg.Unicast.IsValid() {
		if err := onIface(cfg.Iface, cfg.Unicast.Addr()); err != nil {
			return nil, err
		}
	}
	return ifi, nil
}

// Granted reports the timestamping the kernel granted.
func (r *Responder) Granted() tstamp.Granted { return r.granted }

// ThreadID is the OS thread id of the loop once it runs (0 before).
func (r *Responder) ThreadID() int { return int(r.tid.Load()) }

// Stop ends Run at the next loop iteration (safe from any goroutine).
func (r *Responder) Stop() { r.stop.Store(true) }

// Run answers requests until ctx is done or Stop is called, then waits up
// to TxWait for the last TX stamps. The loop runs on a locked OS thread
// (cpusched.RunLocked), pinned and scheduled per --cpu and --sched.
func (r *Responder) Run(ctx context.Context) error {
	var err error
	r.stopped, err = cpusched.RunLocked(ctx, cpusched.Thread{CPU: r.cfg.CPU, Sched: r.cfg.Sched}, r.loop, r.Stop)
	return err
}

func (r *Responder) loop() error {
	r.tid.Store(int64(cpusched.Tid()))
	if r.cfg.Poll.Mode == probe.Block {
		// Block waits inside recvmsg itself, as sockperf's server does: a
		// request wakes the thread straight into the read, one syscall
		// fewer than ppoll then recvmsg (docs/probes.md), and
		// SO_BUSY_POLL only polls there. The timeout lets the loop see Stop.
		if err := r.conn.SetRecvTimeout(pollTimeout); err != nil {
			return err
		}
	}
	if r.phc = r.granted.PHC(); r.phc != nil {
		r.phc.Take()
		defer r.phc.Take()
	}
	r.started = time.Now()
	meter := cpusched.StartMeter()
	if r.opt.Ready != nil {
		r.opt.Ready()
	}
	for !r.stop.Load() {
		if err := r.step(); err != nil {
			return err
		}
	}
	r.thread = meter.Stop()
	// Collect the TX stamps of the last replies.
	deadline := time.Now().Add(r.cfg.TxWait)
	for samples.ResponderTx.Awaiting(r.recs, r.txWant) > 0 && time.Now().Before(deadline) {
		r.drainErrqueue()
		time.Sleep(time.Millisecond)
	}
	r.hw.Finish()
	r.txWant = samples.TxWanted(r.granted.Software(), r.hw.TX())
	r.cnt.TxStampsMissing = samples.ResponderTx.Awaiting(r.recs, r.txWant)
	return r.hw.Err()
}

const pollTimeout = 50 * time.Millisecond

// step is one loop iteration: wait (per mode), drain TX stamps, answer at
// most one request. It does not allocate.
func (r *Responder) step() error {
	// TX stamps first: a software stamp is queued before sendmsg returns, so
	// the last reply's is read here, before the wait, not after a request.
	// Both loops read the error queue only while the last reply's stamp is
	// missing, and stop once it is filed: one recvmsg per reply, not a
	// second that finds the queue empty (older stamps queue before it).
	if r.txWant != 0 {
		r.conn.ReadTx(r.onTx, r.txFiled)
	}
	flags := syscall.MSG_DONTWAIT
	if r.cfg.Poll.Mode == probe.Block {
		flags = 0 // blocking recvmsg, SO_RCVTIMEO (see loop)
	}
	n, from, st, err := r.conn.Recv(r.buf[:], flags)
	var user int64
	switch {
	case err == nil:
		// Read the clock only for a datagram: a busy loop's empty reads
		// (most of its iterations) would pay for it too.
		user = time.Now().UnixNano()
	case errors.Is(err, tstamp.ErrWouldBlock), errors.Is(err, syscall.EINTR):
		r.quiet() // nothing arrived for a while when this yields
		return nil
	case errors.Is(err, tstamp.ErrTruncated):
		r.cnt.Malformed++
		return nil
	default:
		return fmt.Errorf("recvmsg: %w", err)
	}
	p := r.buf[:n]
	if err := wire.Decode(p, r.runID, &r.hdr); err != nil {
		r.countBad(err)
		return nil
	}
	if r.hdr.Type != wire.Request || r.hdr.Arm != uint32(r.cfg.ArmIndex) || r.hdr.Round != uint32(r.cfg.Round) {
		r.cnt.Foreign++ // a reply, or another arm's or round's request
		return nil
	}
	r.cnt.Received++
	if r.lastReq != 0 {
		r.yield.Gap(time.Duration(user - r.lastReq)) // the Yielder's cycle
	}
	r.lastReq = user
	st.HW = r.hw.Recv(st.HW, st.SW)
	seq := r.hdr.Seq
	var rec *samples.Record
	if seq < uint64(len(r.recs)) {
		rec = &r.recs[seq]
		if rec.T[samples.ReqRxUser] != 0 {
			rec.Flags |= samples.FlagDuplicate
			r.cnt.Duplicated++
			return nil // answer each sequence once
		}
		rec.Seq = seq
		rec.T[samples.ReqRxSW] = st.SW
		rec.T[samples.ReqRxHW] = st.HW
		rec.T[samples.ReqRxUser] = user
	} else {
		r.cnt.OutOfRange++
	}
	wire.MakeReply(p, uint32(r.cfg.ID))
	dst := from
	if r.cfg.Reply.IsValid() {
		dst = r.cfg.Reply
	}
	txUser := time.Now().UnixNano()
	if err := r.conn.SendTo(p, dst, uint32(seq)); err != nil {
		r.cnt.SendErrors++
		return nil
	}
	r.cnt.Sent++
	r.last = rec
	if rec != nil {
		rec.T[samples.RepTxUser] = txUser
	}
	r.hw.Sent(txUser)
	if err := r.hw.Err(); err != nil {
		return err // timestamps: hardware, and the NIC's stamps do not come
	}
	r.txWant = samples.TxWanted(r.granted.Software(), r.hw.TX())
	r.quiet() // just answered: the quietest moment there is
	if r.cfg.Count > 0 && r.cnt.Sent >= uint64(r.cfg.Count) {
		r.stop.Store(true)
	}
	return nil
}

func (r *Responder) countBad(err error) {
	switch err {
	case wire.ErrShort, wire.ErrMagic, wire.ErrRunID:
		r.cnt.Foreign++
	default:
		r.cnt.Malformed++
	}
}

// txAwaited reports whether the last reply sent still awaits its TX stamp
// (step asks only when TX stamps were granted).
// Past Capacity nothing is recorded to tell: the queue is read every time,
// or unread stamps would fill the receive buffer the requests share.
func (r *Responder) txAwaited() bool {
	if r.last == nil {
		return r.cnt.Sent > 0
	}
	return samples.ResponderTx.Awaits(r.last, r.txWant)
}

// drainErrqueue files every queued TX stamp under its sequence.
func (r *Responder) drainErrqueue() { r.conn.DrainTx(r.onTx) }

// quiet meets the Go scheduler at a quiet moment (cpusched.Yielder);
// busy loops do not, they measured worse with it.
func (r *Responder) quiet() {
	if r.cfg.Poll.Mode != probe.Busy {
		r.yield.Quiet(time.Now())
	}
}

func (r *Responder) fileTx(ts tstamp.TxStamp) {
	hw := r.hw.TxStamp(ts.HW, cmp.Or(ts.SW, samples.ResponderTx.SWOf(r.recs, ts.Key)))
	samples.ResponderTx.File(r.recs, ts.Key, ts.SW, hw)
}

// Thread returns the loop thread's CPU use over the last Run (nil when the
// kernel gave no figures).
func (r *Responder) Thread() *samples.ThreadUsage { return r.thread }

// Counters returns the counts of the last Run.
func (r *Responder) Counters() samples.Counters { return r.cnt }

// Records returns the records of the sequences that were answered.
func (r *Responder) Records() []samples.Record {
	var out []samples.Record
	for i := range r.recs {
		if r.recs[i].T[samples.ReqRxUser] != 0 {
			rec := r.recs[i]
			rec.Responder = uint32(r.cfg.ID)
			out = append(out, rec)
		}
	}
	return out
}

// Header describes the responder's sample file.
func (r *Responder) Header(arm, round int) samples.Header {
	return header(r.cfg, r.opt.Host, r.granted, r.hw, r.started, arm, round, map[string]any{
		"rcvbuf_bytes": r.rcvbuf, "tx_keying": r.conn.Keying().String(), "phc": r.phc,
	})
}

// header is the sample header of a responder of cfg on host, either
// engine's; more are the engine's own settings.
func header(cfg probe.Respond, host string, g tstamp.Granted, hw *tstamp.HWProof, started time.Time, arm, round int, more map[string]any) samples.Header {
	settings := map[string]any{
		"cpu": cfg.CPU, "poll": cfg.Poll.Mode.String(), "busy_poll_us": cfg.Poll.BusyPollUS,
		"sched": cfg.Sched.String(), "timestamps": g.String(), "hardware_stamps": hw.String(), "stack": cfg.Stack.String(),
	}
	maps.Copy(settings, more)
	h := cfg.Header(samples.RoleResponder, cfg.RunID, arm, round, host, started)
	h.ResponderID, h.Clocks, h.Settings = uint32(cfg.ID), probe.Clocks(g, hw, cfg.Iface, "req_rx", "rep_tx"), settings
	return h
}

// WriteFile writes the responder's sample file for one round.
func (r *Responder) WriteFile(path string, arm, round int) error {
	return samples.WriteFile(path, r.Header(arm, round), r.Records(), samples.Footer{Thread: r.thread,
		Counters: r.cnt, EndedAt: samples.Time(time.Now()), Stopped: r.stopped,
	})
}

// Close releases the socket.
func (r *Responder) Close() error { return r.conn.Close() }
