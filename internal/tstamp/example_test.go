package tstamp_test

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"

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
