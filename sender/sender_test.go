package sender

import (
	"context"
	"errors"
	"github.com/rig-project/rig/responder"
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

func TestSchedule(t *testing.T) {
	start := time.Now()
	s := NewSchedule(start, time.Millisecond)
	if got := s.Due(1000).Sub(start); got != time.Second {
		t.Fatalf("Due(1000) = start+%v", got)
	}
	if s.DueNS(3)-s.DueNS(0) != 3_000_000 {
		t.Fatal("DueNS not absolute")
	}
	// A wait for a past due time returns at once; a future one not early.
	WaitUntil(start.Add(-time.Second), 0)
	due := time.Now().Add(2 * time.Millisecond)
	WaitUntil(due, 200*time.Microsecond)
	if time.Now().Before(due) {
		t.Fatal("WaitUntil returned early")
	}
}

func TestConfigErrors(t *testing.T) {
	g := netip.MustParseAddrPort("239.1.1.1:9000")
	for _, c := range []Config{
		{Iface: "lo", Group: g, Count: 0},
		{Iface: "lo", Group: g, Count: 10, Size: 20},
		{Iface: "lo", Group: netip.MustParseAddrPort("10.0.0.1:9000"), Count: 10},
		{Iface: "lo", Group: g, Count: 10, Interval: -1},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

// TestSendAllocs proves that one paced send does not allocate.
func TestSendAllocs(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	err := topo.Do(netlab.Sender, func() error {
		s, err := New(Config{Iface: topo.Sender.Interface, Group: netip.MustParseAddrPort("239.8.8.9:9300"),
			Count: 1000, Interval: time.Microsecond, CPU: -1, Timestamps: tstamp.Software})
		if err != nil {
			return err
		}
		defer s.Close()
		s.sched = NewSchedule(time.Now(), time.Microsecond)
		k := uint64(0)
		allocs := testing.AllocsPerRun(500, func() {
			s.sendOne(k)
			k++
		})
		if allocs != 0 {
			t.Errorf("one send allocated %v times", allocs)
		}
		if s.pc.Sent != k || s.recs[10].T[samples.TxUser] == 0 || s.recs[10].T[samples.Due] == 0 {
			t.Errorf("sent %d of %d; record 10 %+v", s.pc.Sent, k, s.recs[10].T)
		}
		// The receiver files TX stamps by sequence without allocating.
		time.Sleep(10 * time.Millisecond)
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

// TestRunNoResponder runs both sender modes (two threads blocking, one
// thread busy) against nobody: every request is sent and lost and every TX
// stamp collected; the busy mode's wait-and-poll step does not allocate.
func TestRunNoResponder(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	for _, mode := range []responder.PollMode{responder.Block, responder.Busy} {
		err := topo.Do(netlab.Sender, func() error {
			s, err := New(Config{Iface: topo.Sender.Interface, Group: netip.MustParseAddrPort("239.8.8.9:9300"),
				Count: 50, Interval: 200 * time.Microsecond, CPU: -1, Timestamps: tstamp.Software, Poll: mode,
				ReplyTimeout: 50 * time.Millisecond, TxWait: 50 * time.Millisecond})
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
			if got := s.Header().Settings["poll"]; got != mode.String() {
				t.Errorf("header poll = %v, want %s", got, mode)
			}
			if mode != responder.Busy {
				return nil
			}
			allocs := testing.AllocsPerRun(100, func() {
				if err := s.busyWait(time.Now().Add(5 * time.Microsecond)); err != nil {
					t.Error(err)
				}
			})
			if allocs != 0 {
				t.Errorf("busy wait allocated %v times", allocs)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
