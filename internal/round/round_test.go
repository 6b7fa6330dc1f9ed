package round

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/tstamp/tstamptest"
)

// agents returns a function that starts one rig agent per role in topo,
// closed when the test ends.
func agents(t *testing.T, topo *netlab.Topology, log io.Writer) func(netlab.Role) *agent.Client {
	rig := testbin.Rig(t)
	return func(r netlab.Role) *agent.Client {
		c, err := agent.DialRig(context.Background(), string(r), topo.Exec(r), rig, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// labSpec is a round on topo through the agents ag: its sender, every
// responder of topo, and with capture its capture.
func labSpec(t *testing.T, topo *netlab.Topology, ag func(netlab.Role) *agent.Client, capture bool) Spec {
	s := Spec{Dir: t.TempDir(), Send: probe.DefaultSend(), SendOn: ag(netlab.Sender)}
	s.Send.Iface = topo.Sender.Interface
	for _, h := range topo.ResponderHosts() {
		r := probe.DefaultRespond()
		r.Iface = h.Interface
		s.Respond, s.RespondOn = append(s.Respond, r), append(s.RespondOn, ag(h.Role))
	}
	if capture {
		c := probe.DefaultCapture()
		c.Iface = topo.Capture.Interface
		s.Capture, s.CaptureOn = &c, ag(netlab.Capture)
	}
	return s
}

// readyLog is a log that counts the "ready" lines of the processes.
type readyLog struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready atomic.Int64
}

func (l *readyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ready.Add(int64(bytes.Count(p, []byte(": ready "))))
	return l.b.Write(p)
}

func (l *readyLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLead: the sender starts Lead after the responder is ready, and a
// cancellation during the lead stops the responder and returns at once.
func TestLead(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	topo := netlabtest.New(t, netlab.Options{})
	var log readyLog
	ag := agents(t, topo, &log)
	spec := labSpec(t, topo, ag, false)
	spec.Send.Group, spec.Send.Count, spec.Send.Interval = netip.MustParseAddrPort("239.7.7.8:9101"), 50, time.Millisecond
	spec.Send.Timestamps, spec.Send.Arm, spec.Lead = tstamp.Software, "lead", 800*time.Millisecond
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("round: %v\nlog:\n%s", err, log.String())
	}
	started := func(r samples.Role) time.Time {
		f, err := samples.ReadFile(res.Files[r])
		if err != nil {
			t.Fatal(err)
		}
		if f.Footer == nil || f.Footer.Thread == nil || f.Footer.Thread.WallNS <= 0 {
			t.Errorf("%s file: no measuring-thread usage in the footer: %+v", r, f.Footer)
		}
		at, err := time.Parse(time.RFC3339Nano, f.Header.StartedAt)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if gap := started(samples.RoleSender).Sub(started(samples.RoleResponder)); gap < spec.Lead {
		t.Errorf("sender started %v after the responder, want ≥ lead %v", gap, spec.Lead)
	}

	spec.Dir, spec.Lead, spec.Send.Round = t.TempDir(), time.Minute, 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func(before int64) { // once the responder is ready: in the lead
		for log.ready.Load() == before && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}(log.ready.Load())
	begin := time.Now()
	res, err = Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during the lead: err = %v, want context.Canceled", err)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("Run returned %v after a cancel during a 1 min lead", d)
	}
	if _, ok := res.Files[samples.RoleSender]; ok {
		t.Error("a sender file after a cancel during the lead: the sender was started")
	}
	if _, ok := res.Files[samples.RoleResponder]; !ok {
		t.Error("no responder file after a cancel during the lead")
	}
}

// TestTimestampsOff runs a round through the agents with --timestamps off:
// every request is answered and carries its user stamps, no record holds a
// kernel stamp although the host's RX stamping is on, nothing is counted
// as a missing TX stamp, and the files say which clocks they hold.
func TestTimestampsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	topo := netlabtest.New(t, netlab.Options{})
	tstamptest.HoldSoftwareRX(t) // a socket that asked would get stamps
	var log bytes.Buffer
	ag := agents(t, topo, &log)
	const count = 300
	spec := labSpec(t, topo, ag, false)
	spec.Send.Group, spec.Send.Count, spec.Send.Interval = netip.MustParseAddrPort("239.7.7.9:9102"), count, time.Millisecond
	spec.Send.Timestamps, spec.Send.Arm, spec.Send.Poll, spec.Respond[0].Poll = tstamp.Off, "off", probe.Busy, probe.Poll{Mode: probe.Busy}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("round: %v\nlog:\n%s", err, log.String())
	}
	j, err := samples.JoinDir(res.Dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for role, c := range j.Counters {
		if c.TxStampsMissing != 0 {
			t.Errorf("%s counted %d missing TX stamps with timestamps off", role, c.TxStampsMissing)
		}
	}
	if snd := j.Counters[samples.RoleSender]; snd.Sent != count || snd.Received != count {
		t.Fatalf("sender counters %+v: want %d sent and answered", snd, count)
	}
	for i := range j.Records {
		r := &j.Records[i]
		for _, s := range []samples.Stamp{samples.TxSW, samples.RxSW, samples.ReqRxSW, samples.RepTxSW} {
			if r.T[s] != 0 {
				t.Fatalf("seq %d: %s = %d with timestamps off", r.Seq, s, r.T[s])
			}
		}
		if r.T[samples.TxUser] == 0 || r.T[samples.RxUser] == 0 || r.T[samples.ReqRxUser] == 0 || r.T[samples.RepTxUser] == 0 {
			t.Fatalf("seq %d: user stamps missing: %+v", r.Seq, r.T)
		}
	}
	for _, k := range []string{"tx_sw", "rx_sw", "req_rx_sw", "rep_tx_sw"} {
		if ck, ok := j.Clocks[k]; ok {
			t.Errorf("clock %s = %+v described with timestamps off", k, ck)
		}
	}
	if ck := j.Clocks["rx_user"]; ck.Source != "user" {
		t.Errorf("clock of rx_user = %+v", ck)
	}
}

// TestInstrumentOnEmulatedTopology is the whole instrument end to end: 3 000
// requests at 1 ms through the emulated two-host topology (multicast
// request, unicast reply), with a capture on the mirror port and foreign
// packets sent to the group during the run.
func TestInstrumentOnEmulatedTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	topo := netlabtest.New(t, netlab.Options{})
	tstamptest.HoldSoftwareRX(t) // every record below must carry its RX stamps
	dir := t.TempDir()
	const count = 3000
	var log bytes.Buffer
	ag := agents(t, topo, &log)
	spec := labSpec(t, topo, ag, true)
	spec.Dir, spec.Send.Group, spec.Send.Count, spec.Send.Interval = dir, netip.MustParseAddrPort("239.7.7.7:9100"), count, time.Millisecond
	spec.Send.Warmup, spec.Send.Timestamps, spec.Send.Arm, spec.Send.Spin = 2, tstamp.Software, "test", 50*time.Microsecond
	// Foreign traffic to the group while the round runs (after the first
	// progress report, so the responder is surely up): not rig packets.
	const foreign = 20
	var foreignSent atomic.Int64
	started := make(chan struct{})
	var once sync.Once
	spec.Progress = func(sent, _ int) {
		if sent > 0 {
			once.Do(func() { close(started) })
		}
	}
	injectorDone := make(chan error, 1)
	go func() {
		injectorDone <- topo.Do(netlab.Sender, func() error {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(239, 7, 7, 7), Port: 9100})
			if err != nil {
				return err
			}
			defer c.Close()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				return nil
			}
			for i := 0; i < foreign; i++ {
				if _, err := c.Write([]byte("not a rig packet, just noise on the group")); err == nil {
					foreignSent.Add(1)
				}
				time.Sleep(20 * time.Millisecond) // the noise: spread over the round
			}
			return nil
		})
	}()
	res, err := Run(context.Background(), spec)
	if ierr := <-injectorDone; ierr != nil {
		t.Errorf("injector: %v", ierr)
	}
	if err != nil {
		t.Fatalf("round: %v\nlog:\n%s", err, log.String())
	}
	j, err := samples.JoinDir(res.Dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Problems) > 0 {
		t.Fatalf("sample problems: %v", j.Problems)
	}
	snd := j.Counters[samples.RoleSender]
	rsp := j.Counters[samples.RoleResponder]
	if snd.Sent != count || snd.Lost != 0 || snd.Received != count {
		t.Errorf("sender counters: %+v (want %d sent, 0 lost)", snd, count)
	}
	if len(j.Records) != count {
		t.Fatalf("%d joined records, want %d", len(j.Records), count)
	}
	for i := range j.Records {
		r := &j.Records[i]
		for _, s := range []samples.Stamp{samples.TxSW, samples.RxSW, samples.ReqRxSW, samples.RepTxSW, samples.CapReqSW, samples.CapRepSW} {
			if r.T[s] == 0 {
				t.Fatalf("seq %d: %s missing", r.Seq, s)
			}
		}
		turn := r.T[samples.CapRepSW] - r.T[samples.CapReqSW]
		rtt := r.T[samples.RxSW] - r.T[samples.TxSW]
		if turn < 0 || turn > rtt {
			t.Fatalf("seq %d: capture turnaround %d ns outside [0, sender sw rtt %d ns]", r.Seq, turn, rtt)
		}
	}
	if fs := foreignSent.Load(); fs != foreign || rsp.Foreign != uint64(fs) {
		t.Errorf("responder counted %d foreign packets, the injector sent %d", rsp.Foreign, fs)
	}
	for _, k := range []string{"cap_req_sw", "cap_rep_sw", "tx_sw", "req_rx_sw"} {
		if ck := j.Clocks[k]; ck.Source != "sw" || ck.Clock != "CLOCK_REALTIME" {
			t.Errorf("clock of %s = %+v, want software CLOCK_REALTIME", k, ck)
		}
	}
	if _, err := os.Stat(res.Files[samples.RoleCapture]); err != nil {
		t.Error(err)
	}
}
