package nicctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/tstamp"
)

// ProbeOptions configure Probe.
type ProbeOptions struct {
	// Mode is auto (take what the NIC gives) or hardware (demand it: a
	// NIC that cannot is reported and Probe fails).
	Mode      tstamp.Mode
	AllowMgmt bool
	TakeOver  bool
	// Count datagrams are sent to ProbeGroup (default 8); Listen is how
	// long received frames are watched (default 2 s); TxWait bounds the
	// wait for their TX stamps (default 500 ms).
	Count  int
	Listen time.Duration
	TxWait time.Duration
}

// ProbeGroup is where Probe's datagrams go: an administratively scoped
// group, TTL 1, the discard port. They leave the NIC (so it stamps them)
// and go no further than the link.
var ProbeGroup = netip.MustParseAddrPort("239.255.0.99:9")

// ProbeReport is what Probe found: the answer a user needs before a real
// run. Counts are of packets, stamps of the kind named.
type ProbeReport struct {
	Prepare TSResult `json:"prepare"`
	// TX: datagrams sent, and how many came back from the error queue
	// with a kernel (software) and a NIC (hardware) stamp; TxSched: the
	// kernel stamps are the qdisc's, the driver giving none
	// (tstamp.Granted.TxSched).
	TxSent  int  `json:"tx_sent"`
	TxSW    int  `json:"tx_sw"`
	TxHW    int  `json:"tx_hw"`
	TxSched bool `json:"tx_sched,omitempty"`
	// RX: frames received on the interface while listening, with stamps.
	RxFrames   int   `json:"rx_frames"`
	RxSW       int   `json:"rx_sw"`
	RxHW       int   `json:"rx_hw"`
	ListenedNS int64 `json:"listened_ns"`
	// PHC is the PHC↔CLOCK_REALTIME offset measurement (nil without a PHC)
	// and PHCError why it failed.
	PHC      *tstamp.PHCOffset `json:"phc,omitempty"`
	PHCError string            `json:"phc_error,omitempty"`
	// Verdict is one line: what rig's probes will get on this interface.
	Verdict string `json:"verdict"`
}

// Probe is the hardware self-test a user runs before a real run: it
// prepares iface's timestamping as a run would (PrepareTimestamping with
// what the sender and responder need, journaled in j: put back by the
// caller's undo), sends a few datagrams and reads their TX stamps back,
// watches the frames that arrive, measures the PHC offset, and says what
// it saw — proven stamps, not capability bits. On a NIC without hardware
// stamping it reports "software only" truthfully.
func Probe(ctx context.Context, env *Env, j *journal.Journal, iface string, o ProbeOptions) (*ProbeReport, error) {
	if o.Count <= 0 {
		o.Count = 8
	}
	if o.Listen <= 0 {
		o.Listen = 2 * time.Second
	}
	if o.TxWait <= 0 {
		o.TxWait = 500 * time.Millisecond
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w (list them with `ip link`)", iface, facts.ErrNoDevice)
	}
	r := &ProbeReport{}
	// Switch on whatever the NIC can stamp (an RX-only NIC gets RX), in
	// auto: the probe reports what arrives, and judges the mode after.
	st, err := tstamp.ReadNIC(env.TSDevice(), iface)
	if err != nil {
		return r, err
	}
	need := tstamp.Need{RX: st.Caps.RxAll(), TX: st.Caps.HardwareTX()}
	if need == (tstamp.Need{}) {
		need = tstamp.NeedProbe
	}
	r.Prepare, err = PrepareTimestamping(ctx, env, j, iface, TSRequest{Mode: tstamp.Auto, Need: need, AllowMgmt: o.AllowMgmt, TakeOver: o.TakeOver})
	if err != nil {
		return r, err
	}
	if err := r.probeTX(env, ifi, o); err != nil {
		return r, err
	}
	if err := r.probeRX(ctx, env, ifi, o); err != nil {
		return r, err
	}
	if c := r.Prepare.State.Caps; c.HasPHC() {
		off, err := tstamp.MeasurePHC(c.PHCIndex)
		if err != nil {
			r.PHCError = err.Error()
		} else {
			r.PHC = &off
		}
	}
	r.Verdict = r.verdict(iface)
	if o.Mode == tstamp.Hardware && (r.TxHW == 0 || r.RxHW == 0) {
		return r, refuse("--timestamps hardware: rig's sender and responder need hardware RX and TX stamps, and %s", r.Verdict)
	}
	return r, nil
}

func (r *ProbeReport) probeTX(env *Env, ifi *net.Interface, o ProbeOptions) error {
	c, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), tstamp.UDPOptions{Device: ifi.Name})
	if err != nil {
		return err
	}
	defer c.Close()
	owner := r.Prepare.State.Owner
	if o.TakeOver {
		owner = ""
	}
	g, err := c.EnableTimestamping(tstamp.Auto, tstamp.Options{Device: env.TS, Owner: owner})
	if err != nil {
		return err
	}
	r.TxSched = g.TxSched()
	for _, set := range []func() error{
		func() error { return c.SetMulticastInterface(ifi.Index) },
		func() error { return c.SetMulticastLoop(false) },
		func() error { return c.SetMulticastTTL(1) },
	} {
		if err := set(); err != nil {
			return err
		}
	}
	payload := []byte("rig nicctl probe: timestamping self-test, discard me")
	seen := make([]struct{ sw, hw bool }, o.Count)
	for k := 0; k < o.Count; k++ {
		if err := c.SendTo(payload, ProbeGroup, uint32(k)); err != nil {
			return fmt.Errorf("sending probe datagram %d to %s on %s: %w", k, ProbeGroup, ifi.Name, err)
		}
		r.TxSent++
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(o.TxWait)
	for time.Now().Before(deadline) {
		if _, err := c.PollReady(10 * time.Millisecond); err != nil {
			return err
		}
		c.DrainTx(func(ts tstamp.TxStamp) {
			if int(ts.Key) < len(seen) {
				seen[ts.Key].sw = seen[ts.Key].sw || ts.SW != 0
				seen[ts.Key].hw = seen[ts.Key].hw || ts.HW != 0
			}
		})
	}
	for _, s := range seen {
		if s.sw {
			r.TxSW++
		}
		if s.hw {
			r.TxHW++
		}
	}
	return nil
}

func (r *ProbeReport) probeRX(ctx context.Context, env *Env, ifi *net.Interface, o ProbeOptions) error {
	p, err := tstamp.ListenPacket(ifi.Index, true)
	if err != nil {
		return err
	}
	defer p.Close()
	if _, err := p.EnableTimestamping(tstamp.Auto, tstamp.Options{Device: env.TS}); err != nil {
		return err
	}
	buf := make([]byte, 2048)
	start := time.Now()
	for time.Since(start) < o.Listen && ctx.Err() == nil {
		if _, err := p.Poll(20 * time.Millisecond); err != nil {
			return err
		}
		for {
			_, pkttype, st, err := p.RecvPacket(buf)
			if errors.Is(err, tstamp.ErrWouldBlock) {
				break
			}
			if err != nil && !errors.Is(err, tstamp.ErrTruncated) {
				return err
			}
			if pkttype == tstamp.PacketOutgoing {
				continue // our own datagrams: no RX stamp to expect
			}
			r.RxFrames++
			if st.SW != 0 {
				r.RxSW++
			}
			if st.HW != 0 {
				r.RxHW++
			}
		}
	}
	r.ListenedNS = int64(time.Since(start).Round(time.Millisecond))
	return nil
}

func (r *ProbeReport) verdict(iface string) string {
	rxProven, rxSeen := r.RxHW > 0, r.RxFrames > 0
	txProven := r.TxHW > 0
	switch {
	case txProven && rxProven:
		return fmt.Sprintf("hardware RX and TX stamps arrive on %s: rig's probes get NIC timestamps", iface)
	case txProven && !rxSeen:
		return fmt.Sprintf("hardware TX stamps arrive on %s; RX not verified (no frame arrived while listening: send traffic to %s, e.g. ping it from a peer, and probe again)", iface, iface)
	case txProven:
		return fmt.Sprintf("hardware TX stamps only on %s: received frames carry no NIC stamp (rx_filter?): rtt and turnaround stay software", iface)
	case rxProven:
		return fmt.Sprintf("hardware RX stamps only on %s: sent packets get no NIC stamp: rtt and turnaround stay software; a capture here gets hardware stamps", iface)
	case r.TxSW == 0 && !rxSeen:
		return fmt.Sprintf("no stamps at all came back on %s: check the interface is up and carries traffic", iface)
	}
	return fmt.Sprintf("software only on %s: the kernel's stamps arrive (TX %d/%d, RX %d/%d), no NIC stamp (see the timestamping line above for why)", iface, r.TxSW, r.TxSent, r.RxSW, r.RxFrames)
}

// WriteText prints the report the way `rig nicctl probe` does.
func (r *ProbeReport) WriteText(w io.Writer) {
	st := r.Prepare.State
	c := st.Caps
	phc := "none"
	if c.HasPHC() {
		phc = fmt.Sprintf("/dev/ptp%d", c.PHCIndex)
	}
	fmt.Fprintf(w, "%s: capabilities %s; tx types %s; rx filters %s; PHC %s\n", st.Ifname, c.SOF.EthtoolNames(), c.TxTypesString(), c.RxFiltersString(), phc)
	cfg := "unknown (" + st.ConfigErr + ")"
	if st.ConfigKnown {
		cfg = st.Config.String()
	}
	owner := st.Owner
	if owner == "" {
		owner = "none"
	}
	fmt.Fprintf(w, "config before: %s; owner: %s; management interface: %v\n", cfg, owner, st.Mgmt)
	fmt.Fprintf(w, "%s\n", r.Prepare)
	kernel := "kernel stamps"
	if r.TxSched {
		kernel = "kernel stamps (sched: before the qdisc, the driver gives none at the hand-off)"
	}
	fmt.Fprintf(w, "TX: %d datagrams sent to %s (TTL 1); %s %d/%d, NIC stamps %d/%d\n", r.TxSent, ProbeGroup, kernel, r.TxSW, r.TxSent, r.TxHW, r.TxSent)
	fmt.Fprintf(w, "RX: %d frames in %v; kernel stamps %d/%d, NIC stamps %d/%d\n", r.RxFrames, time.Duration(r.ListenedNS), r.RxSW, r.RxFrames, r.RxHW, r.RxFrames)
	switch {
	case r.PHC != nil:
		fb := ""
		if r.PHC.Fallback != "" {
			fb = " (" + r.PHC.Fallback + ")"
		}
		fmt.Fprintf(w, "PHC: offset to CLOCK_REALTIME %d ns via %s, window %d ns%s\n", r.PHC.Offset, r.PHC.Method, r.PHC.Window, fb)
	case r.PHCError != "":
		fmt.Fprintf(w, "PHC: %s\n", r.PHCError)
	default:
		fmt.Fprintf(w, "PHC: none\n")
	}
	fmt.Fprintf(w, "verdict: %s\n", strings.TrimSpace(r.Verdict))
}
