package sender

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/responder"
)

func TestSchedule(t *testing.T) {
	start := time.Now()
	s := NewSchedule(start, time.Millisecond)
	if got := s.Due(1000).Sub(start); got != time.Second {
		t.Fatalf("Due(1000) = start+%v", got)
	}
	// Read 7 µs late for request 3, and 3 ms early for request 6: due in
	// wall time is the reading's wall time less the monotonic lateness.
	// (A wall-clock step between start and now cannot be made through
	// time.Time's API; DueNS reads the wall clock only from now.)
	now := start.Add(3*time.Millisecond + 7*time.Microsecond)
	if got := now.UnixNano() - s.DueNS(3, now); got != 7000 {
		t.Fatalf("lateness %d ns, want 7000", got)
	}
	if got := now.UnixNano() - s.DueNS(6, now); got != -2_993_000 {
		t.Fatalf("lateness %d ns, want -2993000", got)
	}
}

// config is rig send's command line on iface: the defaults, changed by set.
func config(iface string, set func(*probe.Send)) probe.Send {
	c := probe.DefaultSend()
	c.Iface = iface
	set(&c)
	return c
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []probe.Send{
		config("lo", func(c *probe.Send) { c.Count = 0 }),
		config("lo", func(c *probe.Send) { c.Count, c.Size = 10, 20 }),
		config("lo", func(c *probe.Send) { c.Group, c.Count = netip.MustParseAddrPort("10.0.0.1:9000"), 10 }),
		config("lo", func(c *probe.Send) { c.Count, c.Interval = 10, -1 }),
		config("lo", func(c *probe.Send) { c.ReplyTimeout = 0 }), // no silent 1 s
	} {
		if _, err := New(c, Options{}); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("New(%+v) = %v, want a usage error", c, err)
		}
	}
}

// TestSendAllocs proves that one send, the wait for a due time (in both
// modes) and the TX-stamp drain do not allocate, and that a wait does not
// return early.
func TestSendAllocs(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	err := topo.Do(netlab.Sender, func() error {
		s, err := New(config(topo.Sender.Interface, func(c *probe.Send) {
			c.Group, c.Port, c.Count, c.Interval, c.Spin, c.Timestamps = netip.MustParseAddrPort("239.8.8.9:9300"), 0, 1000, time.Microsecond, 0, tstamp.Software
		}), Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		s.sched = NewSchedule(time.Now(), time.Microsecond)
		k := uint64(0)
		allocs := testing.AllocsPerRun(500, func() {
			s.sendNow(k)
			k++
		})
		if allocs != 0 {
			t.Errorf("one send allocated %v times", allocs)
		}
		if s.cnt.Sent != k || s.recs[10].T[samples.TxUser] == 0 || s.recs[10].T[samples.Due] == 0 {
			t.Errorf("sent %d of %d; record 10 %+v", s.cnt.Sent, k, s.recs[10].T)
		}
		// A software TX stamp is queued while sendmsg runs: the blocking
		// sender read it right after each send, so its wait for the reply
		// does not return at once for POLLERR.
		if s.txMisses != 0 || s.recs[10].T[samples.TxSW] == 0 || s.recs[k-1].T[samples.TxSW] == 0 {
			t.Errorf("TX stamps after the sends: %d misses, record 10 %+v, last %+v; want every stamp read at its send", s.txMisses, s.recs[10].T, s.recs[k-1].T)
		}
		for _, mode := range []probe.PollMode{probe.Block, probe.Busy} {
			s.cfg.Poll, s.cfg.Spin = mode, 20*time.Microsecond
			var early time.Duration
			allocs = testing.AllocsPerRun(50, func() {
				due := time.Now().Add(100 * time.Microsecond)
				if err := s.waitServing(due); err != nil {
					t.Error(err)
				}
				early = max(early, time.Until(due))
			})
			if allocs != 0 {
				t.Errorf("%s: a wait allocated %v times", mode, allocs)
			}
			if early > 0 {
				t.Errorf("%s: a wait returned %v before its due time", mode, early)
			}
		}
		// Draining the error queue allocates nothing (the stamps were read
		// and filed at their sends, allocation-free above).
		allocs = testing.AllocsPerRun(10, func() { s.drainErrqueue() })
		if allocs != 0 {
			t.Errorf("TX stamp drain allocated %v times", allocs)
		}
		if s.recs[10].T[samples.TxSW] == 0 {
			t.Error("no TX software stamp for seq 10")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunNoResponder runs both sender modes against nobody: every request
// is sent and lost and every TX stamp collected.
func TestRunNoResponder(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	for _, mode := range []probe.PollMode{probe.Block, probe.Busy} {
		err := topo.Do(netlab.Sender, func() error {
			s, err := New(config(topo.Sender.Interface, func(c *probe.Send) {
				c.Group, c.Port, c.Count, c.Interval, c.Spin, c.Timestamps = netip.MustParseAddrPort("239.8.8.9:9300"), 0, 50, 200*time.Microsecond, 0, tstamp.Software
				c.Poll, c.ReplyTimeout, c.TxWait = mode, 50*time.Millisecond, 50*time.Millisecond
			}), Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Run(context.Background()); err != nil {
				return err
			}
			c := s.Counters()
			if c.Sent != 50 || c.Lost != 50 || c.Received != 0 || c.TxStampsMissing != 0 {
				t.Errorf("%s: counters %+v: want 50 sent, 50 lost, all TX stamps", mode, c)
			}
			// The pacing thread's usage: a blocking sender sleeps (voluntary
			// switches), a busy one runs most of the round.
			if u := s.Thread(); u == nil || u.WallNS <= 0 || u.CPUNS <= 0 {
				t.Errorf("%s: thread usage %+v, want figures", mode, u)
			} else if mode == probe.Block && u.Voluntary == 0 {
				t.Errorf("block: thread usage %+v, want voluntary switches (it waits in ppoll)", u)
			} else if mode == probe.Busy && u.CPUNS < u.WallNS/4 {
				t.Errorf("busy: thread usage %+v, want it on CPU most of the round", u)
			}
			if got := s.Header().Settings["poll"]; got != mode.String() {
				t.Errorf("header poll = %v, want %s", got, mode)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBlockSpinWholeInterval is sockperf's client shape: --spin ≥ interval
// busy-waits between sends, yet the reply is still awaited in ppoll, so it
// is read when it arrives and not when the next send is done. (With a
// separate receiver thread the spinning pacer kept it off the CPU: a
// median user RTT of 5.5–6.5 ms at a 1 ms interval.)
func TestBlockSpinWholeInterval(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	group := netip.MustParseAddrPort("239.8.8.10:9301")
	ready := make(chan error, 1)
	rspDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		rspDone <- topo.Do(netlab.Responder, func() error {
			rc := probe.DefaultRespond()
			rc.Iface, rc.Group, rc.Timestamps, rc.Capacity, rc.RunID = topo.Responder.Interface, group, tstamp.Software, 1000, 7
			r, err := responder.New(rc, responder.Options{})
			if err != nil {
				ready <- err
				return err
			}
			defer r.Close()
			ready <- nil
			return r.Run(ctx)
		})
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	const interval = 2 * time.Millisecond
	var rtts []int64
	err := topo.Do(netlab.Sender, func() error {
		s, err := New(config(topo.Sender.Interface, func(c *probe.Send) {
			c.Group, c.Port, c.Count, c.Interval, c.Spin, c.Timestamps, c.Poll, c.RunID = group, 0, 300, interval, interval, tstamp.Software, probe.Block, 7
		}), Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Run(context.Background()); err != nil {
			return err
		}
		if c := s.Counters(); c.Received < c.Sent*9/10 {
			t.Errorf("counters %+v: want (nearly) every reply", c)
		}
		for _, r := range s.Records() {
			if r.T[samples.RxUser] != 0 {
				rtts = append(rtts, r.T[samples.RxUser]-r.T[samples.TxUser])
			}
		}
		return nil
	})
	cancel()
	if rerr := <-rspDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
		t.Errorf("responder: %v", rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rtts)
	if len(rtts) == 0 {
		t.Fatal("no replies")
	}
	if med := time.Duration(rtts[len(rtts)/2]); med >= interval {
		t.Errorf("median user RTT %v ≥ interval %v: replies waited for the next send", med, interval)
	}
}

// TestReplyToUnsentRequest: a reply whose request was not sent yet is
// forged (or another sender's): foreign, and it does not take the sequence.
func TestReplyToUnsentRequest(t *testing.T) {
	s := &Sender{cfg: probe.Send{Common: probe.Common{RunID: 5}, Count: 10, Responders: 1}}
	s.allocate()
	var buf [64]byte
	p := wire.Encode(buf[:], 64, &wire.Header{Type: wire.Reply, RunID: 5, Seq: 3})
	s.onReply(p, tstamp.Stamps{SW: 100}, 200)
	if s.cnt.Foreign != 1 || s.reps[3].T[samples.RxUser] != 0 {
		t.Fatalf("reply before its request: counters %+v, record %+v", s.cnt, s.reps[3].T)
	}
	s.recs[3].T[samples.TxUser] = 50
	s.onReply(p, tstamp.Stamps{SW: 100}, 200)
	if s.cnt.Foreign != 1 || s.reps[3].T[samples.RxUser] != 200 {
		t.Fatalf("reply after its request: counters %+v, record %+v", s.cnt, s.reps[3].T)
	}
}

// TestRepliesPerResponder: with three responders every request has one
// reply slot per responder; a reply is filed under its responder's id
// without allocating, duplicates and reordering are judged per responder,
// an id beyond the responders is foreign, and the records and counters
// say what happened to each responder's replies.
func TestRepliesPerResponder(t *testing.T) {
	const n, count = 3, 10
	s := &Sender{cfg: probe.Send{Common: probe.Common{RunID: 5}, Count: count, Responders: n, ReplyTimeout: time.Second}}
	s.allocate()
	for k := range count - 1 { // the last request is never sent
		s.recs[k].T[samples.TxUser] = int64(1000 * (k + 1))
		s.recs[k].T[samples.TxSW] = int64(1000*(k+1) + 1)
		s.cnt.Sent++
	}
	var buf [64]byte
	reply := func(seq uint64, id uint32) {
		p := wire.Encode(buf[:], 64, &wire.Header{Type: wire.Reply, RunID: 5, Seq: seq, Responder: id})
		s.onReply(p, tstamp.Stamps{SW: int64(1000*(seq+1)) + 10 + int64(id)}, int64(1000*(seq+1))+20+int64(id))
	}
	// Responder 0 answers all, 1 every other one, 2 all but seq 4 and one
	// reply twice, seqs 5 and 6 swapped.
	for seq := range uint64(count - 1) {
		reply(seq, 0)
		if seq%2 == 0 {
			reply(seq, 1)
		}
	}
	for _, seq := range []uint64{0, 1, 2, 3, 6, 5, 7, 8, 8} {
		reply(seq, 2)
	}
	reply(2, 3) // no such responder
	if s.cnt.Foreign != 1 || s.cnt.Duplicated != 1 || s.cnt.Reordered != 1 {
		t.Fatalf("counters %+v: want 1 foreign, 1 duplicated, 1 reordered", s.cnt)
	}
	s.finish()
	recs := s.Records()
	if len(recs) != count*n {
		t.Fatalf("%d records, want %d", len(recs), count*n)
	}
	for i, r := range recs {
		seq, id := uint64(i/n), uint32(i%n)
		if r.Seq != seq || r.Responder != id || r.T[samples.TxSW] != s.recs[seq].T[samples.TxSW] {
			t.Fatalf("record %d: seq %d responder %d tx_sw %d", i, r.Seq, r.Responder, r.T[samples.TxSW])
		}
		replied := seq < count-1 && (id == 0 || (id == 1 && seq%2 == 0) || (id == 2 && seq != 4))
		if got := r.T[samples.RxUser] != 0; got != replied {
			t.Errorf("seq %d responder %d: replied %v, want %v", seq, id, got, replied)
		}
		if replied && r.T[samples.RxSW]-r.T[samples.TxUser] != 10+int64(id) {
			t.Errorf("seq %d responder %d: another responder's stamp %+v", seq, id, r.T)
		}
		if (seq == count-1) != (r.Flags&samples.FlagNotSent != 0) {
			t.Errorf("seq %d: flags %b", seq, r.Flags)
		}
		if want := id == 2 && seq == 5; want != (r.Flags&samples.FlagReordered != 0) {
			t.Errorf("seq %d responder %d: reordered flag %v", seq, id, !want)
		}
		if want := id == 2 && seq == 8; want != (r.Flags&samples.FlagDuplicate != 0) {
			t.Errorf("seq %d responder %d: duplicate flag %v", seq, id, !want)
		}
	}
	per := s.PerResponder()
	for id, want := range []samples.Counters{
		{Sent: 9, Received: 9, Lost: 0, Foreign: 1},
		{Sent: 9, Received: 5, Lost: 4, Foreign: 1},
		{Sent: 9, Received: 8, Lost: 1, Foreign: 1, Duplicated: 1, Reordered: 1},
	} {
		if per[id] != want {
			t.Errorf("responder %d: counters %+v, want %+v", id, per[id], want)
		}
	}
	if c := s.Counters(); c.Received != 22 || c.Lost != 5 || c.Sent != 9 {
		t.Errorf("round counters %+v: want 22 received, 5 lost of 9 × 3", c)
	}
	s.conn = &tstamp.Conn{} // Header reads its TX keying
	if h := s.Header(); h.Responders != n {
		t.Errorf("header responders %d", h.Responders)
	}
	// Filing a reply allocates nothing, whichever responder it is from.
	a := &Sender{cfg: probe.Send{Common: probe.Common{RunID: 5}, Count: 1000, Responders: n}}
	a.allocate()
	for k := range a.recs {
		a.recs[k].T[samples.TxUser] = 1
	}
	k := 0
	allocs := testing.AllocsPerRun(500, func() {
		p := wire.Encode(buf[:], 64, &wire.Header{Type: wire.Reply, RunID: 5, Seq: uint64(k / n), Responder: uint32(k % n)})
		a.onReply(p, tstamp.Stamps{SW: 2}, 3)
		k++
	})
	if allocs != 0 || a.received.Load() != int64(k) {
		t.Errorf("filing a reply allocated %v times (%d of %d filed)", allocs, a.received.Load(), k)
	}
}
