package responder

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/tstamp/tstamptest"
	"github.com/rig-project/rig/internal/wire"
)

// TestNativeHardwareProof: on a veth that a driver profile (mlx5, stamping
// on) says stamps in hardware, the native engine asks for hardware stamps
// that never come. With --timestamps hardware the program stops by itself
// after the proof window, as the Go engine's loop does, and Run fails
// saying so; with auto it answers every request and the file's software
// columns say why there is no hardware one.
func TestNativeHardwareProof(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	prog := filepath.Join(testbin.Native(t), native.RespondProgram)
	nic := nicfake.New(nicfake.MLX5(), topo.Responder.Interface)
	nic.SetConfig(tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll})
	group := netip.MustParseAddrPort("239.8.8.9:9210")
	tstamptest.HoldSoftwareRX(t)
	const sent = 3 * tstamp.ProofWindow
	for _, mode := range []tstamp.Mode{tstamp.Hardware, tstamp.Auto} {
		var n *Native
		err := topo.Do(netlab.Responder, func() error {
			var err error
			n, err = NewNative(config(topo.Responder.Interface, func(c *probe.Respond) {
				c.Group, c.Timestamps, c.RunID, c.TxWait, c.Count, c.Engine = group, mode, 78, 50*time.Millisecond, sent, probe.EngineNative
			}), Options{Device: nic}, prog)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if g := n.Granted(); !g.HardwareRX() || !g.HardwareTX() {
			t.Fatalf("%s: the program was not asked for hardware stamps: %s", mode, g)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		err = topo.Do(netlab.Sender, func() error {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(group))
			if err != nil {
				return err
			}
			defer c.Close()
			buf := make([]byte, 64)
			for i := range sent {
				if _, err := c.Write(wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 78, Seq: uint64(i)})); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = <-done
		expired := ctx.Err()
		cancel()
		n.Close()
		c := n.Counters()
		switch mode {
		case tstamp.Hardware:
			if !errors.Is(err, tstamp.ErrNoHardwareStamp) || !strings.Contains(err.Error(), "RX hardware stamp never came: the first 16 requests") ||
				c.Received != tstamp.ProofWindow || expired != nil {
				t.Errorf("hardware: Run %v, counters %+v: want the program to stop after %d requests", err, c, tstamp.ProofWindow)
			}
		case tstamp.Auto:
			h := n.Header(0, 0)
			if err != nil || expired != nil || c.Sent != sent || c.TxStampsMissing != 0 || !strings.Contains(h.Clocks["req_rx_sw"].Note, "hardware RX stamps were requested") ||
				h.Clocks["req_rx_hw"].Source != "" || h.Settings["hardware_stamps"] != "rx absent, tx absent" {
				t.Errorf("auto: Run %v, counters %+v, clocks %+v, settings %v", err, c, h.Clocks, h.Settings)
			}
			for _, r := range n.Records() {
				if r.T[samples.ReqRxHW] != 0 || r.T[samples.ReqRxSW] == 0 {
					t.Fatalf("auto: record %+v", r)
				}
			}
		}
	}
}
