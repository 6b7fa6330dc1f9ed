// Package tstamptest holds test helpers for code that reads kernel
// timestamps.
package tstamptest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/tstamp"
)

// WaitSoftwareRX returns once the kernel stamps received packets in
// software. RX software stamping is one host-wide switch (a static key)
// that the kernel flips from a workqueue after the first socket asks for
// it, so packets sent right after a socket enabled stamping can arrive
// unstamped. Call it after the sockets under test enabled stamping and
// before sending the packets whose stamps the test checks. It pings itself
// on loopback and fails the test if no stamp appears within 5 s.
func WaitSoftwareRX(tb testing.TB) {
	tb.Helper()
	c, err := tstamp.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), tstamp.UDPOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if _, err := c.EnableTimestamping(tstamp.Software); err != nil {
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
