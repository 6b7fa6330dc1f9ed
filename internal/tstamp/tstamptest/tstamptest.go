// Package tstamptest holds test helpers for code that reads kernel
// timestamps.
package tstamptest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/tstamp"
)

// HoldSoftwareRX turns the kernel's RX software stamping on for the rest
// of the test and returns once it is on. It is one host-wide switch (a
// static key) that the kernel flips from a workqueue when the first socket
// asks for stamps, and back off the same way when the last one closes, so
// packets sent right after a socket enabled stamping can arrive unstamped.
// Call it before sending the packets whose stamps the test checks. It holds
// a stamping socket on loopback until the test ends, pings itself until a
// stamp comes back, and fails the test if none does within 5 s.
func HoldSoftwareRX(tb testing.TB) {
	tb.Helper()
	c, err := tstamp.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), tstamp.UDPOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if _, err := c.EnableTimestamping(tstamp.Software, tstamp.Options{}); err != nil {
		tb.Fatal(err)
	}
	self, err := c.LocalAddr()
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 64)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err := c.SendTo(buf[:8], self, 0); err != nil {
			tb.Fatal(err)
		}
		if ok, err := c.Poll(time.Second); err != nil || !ok {
			tb.Fatalf("loopback ping not readable within 1s: %v", err)
		}
		_, _, st, err := c.Recv(buf, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if st.SW != 0 {
			return
		}
	}
	tb.Fatal("no software RX stamp within 5s of enabling stamping")
}
