package tstamp_test

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"github.com/rig-project/rig/internal/tstamp"
)

// A responder echo loop that busy-spins on a locked OS thread: nothing in
// the loop allocates, so the GC never has to run during a round.
func ExampleConn_responder() {
	c, err := tstamp.ListenUDP(netip.MustParseAddrPort("0.0.0.0:47000"),
		tstamp.UDPOptions{Device: "eth1", ReuseAddr: true, NonBlocking: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.JoinGroup(netip.MustParseAddr("239.1.1.1"), 3); err != nil {
		fmt.Println(err)
		return
	}
	g, err := c.EnableTimestamping(tstamp.Auto)
	if err != nil {
		fmt.Println(err) // Hardware mode would print the capability report here
		return
	}
	fmt.Println(g) // record with the run: mode, flags, fallbacks
	runtime.LockOSThread()
	buf := make([]byte, 2048)
	for {
		n, from, st, err := c.Recv(buf, 0)
		if errors.Is(err, tstamp.ErrWouldBlock) {
			continue // spin
		}
		if err != nil {
			return
		}
		_ = st // st.HW (PHC) / st.SW (CLOCK_REALTIME): request RX stamps
		seq := uint32(buf[8])<<24 | uint32(buf[9])<<16 | uint32(buf[10])<<8 | uint32(buf[11])
		_ = c.SendTo(buf[:n], from, seq) // its TX stamps come back keyed by seq
		for {
			ts, err := c.RecvErr()
			if err != nil {
				break // ErrWouldBlock: drained
			}
			_ = ts // ts.Key == seq of the reply, ts.Kind, ts.SW/ts.HW
		}
	}
}

// A sender's TX-stamp reader: stamps are matched by key with a bounded wait.
func ExampleTxTable() {
	table, err := tstamp.NewTxTable(4096, 500*time.Millisecond, tstamp.WantSW|tstamp.WantSched)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Now().UnixNano() // CLOCK_REALTIME, same clock as SW stamps
	_ = table.Sent(1, now)       // right after SendTo(…, key 1)
	table.Record(tstamp.TxStamp{Key: 1, Kind: tstamp.KindSched, SW: now + 1000}, now+2000)
	table.Record(tstamp.TxStamp{Key: 1, Kind: tstamp.KindSnd, SW: now + 3000}, now+4000)
	e, ok := table.Next(now + 5000)
	fmt.Println(ok, e.Key, e.SW-e.Sched, e.Missing == 0)
	fmt.Printf("%+v\n", table.Stats())
	// Output:
	// true 1 2000 true
	// {Sent:1 Recorded:2 Complete:1 Missing:0 Late:0 Duplicate:0 Unknown:0 Unwanted:0 Overflowed:0}
}
