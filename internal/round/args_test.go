package round

import (
	"flag"
	"io"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
)

// parse parses args as the probe command registered by reg would.
func parse(t *testing.T, args []string, reg func(*flag.FlagSet), check func(*flag.FlagSet) error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reg(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if err := check(fs); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
}

// TestProbeArgs: the command lines a round starts its probes with are
// what the probes parse back into the round's settings: the run's NIC
// config left alone, every process bounded, the arm's responder knobs,
// the capture watching the replies' group port, the sender quiet.
func TestProbeArgs(t *testing.T) {
	s := Spec{
		Responder: Host{Iface: "veth-r"}, Sender: Host{Iface: "veth-s"}, Capture: &Host{Iface: "veth-c", VXLAN: true},
		Group: netip.MustParseAddrPort("239.7.7.7:9100"), Reply: netip.MustParseAddrPort("239.7.7.8:9101"),
		Count: 500, Interval: 250 * time.Microsecond, Warmup: 3, Timestamps: tstamp.Software, RunID: 0xabc,
		Arm: "pinned", ArmIndex: 1, Round: 4, ResponderCPU: 1, SenderCPU: 0,
		Poll: probe.Poll{Mode: probe.Block, BusyPollUS: 50}, Sched: cpusched.Sched{Policy: cpusched.FIFO, Priority: 50},
		SenderPoll: probe.Busy, Spin: 20 * time.Microsecond, ReplyTimeout: 2 * time.Second,
		ReadyTimeout: time.Second, Progress: func(int, int) {},
		Engine: probe.EngineNative, Stack: probe.Stack{Name: "onload", Env: "EF_RX_TIMESTAMPING=3,EF_TX_TIMESTAMPING=3"},
	}
	var r probe.Respond
	parse(t, s.respond(0).Args(), r.Register, r.Parse)
	if r.Engine != probe.EngineNative || r.Stack != s.Stack {
		t.Errorf("respond: engine %v, stack %+v", r.Engine, r.Stack)
	}
	if r.Iface != "veth-r" || r.Group != s.Group || r.Reply != s.Reply || r.CPU != 1 || r.Poll != s.Poll || r.Sched != s.Sched ||
		r.Capacity != 500 || r.Count != 0 || r.RunID != 0xabc || r.Arm != "pinned" || r.ArmIndex != 1 || r.Round != 4 ||
		!r.LeaveNIC || r.Timestamps != tstamp.Software || r.MaxDuration != s.maxDuration() || r.Out != "" || r.ID != 0 {
		t.Errorf("respond: %+v", r)
	}
	var c probe.Capture
	parse(t, s.capture().Args(), c.Register, c.Parse)
	if c.Iface != "veth-c" || !c.VXLAN || c.Capacity != 500 || c.RunID != 0xabc || !slices.Equal(c.Ports(), []uint16{9100, 9101}) || !c.LeaveNIC ||
		c.Responders != 1 {
		t.Errorf("capture: %+v", c)
	}
	var snd probe.Send
	parse(t, s.send().Args(), snd.Register, snd.Parse)
	if snd.Iface != "veth-s" || snd.Count != 500 || snd.Interval != s.Interval || snd.Warmup != 3 || snd.CPU != 0 || snd.Poll != probe.Busy ||
		snd.Spin != s.Spin || snd.ReplyGroup != s.Reply || snd.LocalPort() != 9101 || snd.ReplyTimeout != 2*time.Second ||
		snd.Size != 64 || !snd.Quiet || !snd.ProgressLines || snd.Sched != (cpusched.Sched{}) || !snd.LeaveNIC || snd.Responders != 1 {
		t.Errorf("send: %+v", snd)
	}

	// Unicast requests: the sender and the capture get --to, the
	// responder --listen; replies by unicast, no progress reader.
	s.To, s.Reply, s.Progress, s.ReplyTimeout = netip.MustParseAddrPort("10.0.0.2:9105"), netip.AddrPort{}, nil, 0
	r, c, snd = probe.Respond{}, probe.Capture{}, probe.Send{}
	parse(t, s.respond(0).Args(), r.Register, r.Parse)
	parse(t, s.capture().Args(), c.Register, c.Parse)
	parse(t, s.send().Args(), snd.Register, snd.Parse)
	if r.Unicast != s.To || r.Group.IsValid() || r.Reply.IsValid() {
		t.Errorf("unicast respond: %+v", r)
	}
	if c.Unicast != s.To || !slices.Equal(c.Ports(), []uint16{9105}) {
		t.Errorf("unicast capture: %+v", c)
	}
	if snd.Unicast != s.To || snd.Dest() != s.To || snd.ReplyGroup.IsValid() || snd.ProgressLines || snd.ReplyTimeout != probe.DefaultSend().ReplyTimeout {
		t.Errorf("unicast send: %+v", snd)
	}
}

// TestFanoutProbeArgs: in a fan-out round every responder's command line
// has its own host, id and knobs (Responder with ResponderCPU, Poll and
// Sched is id 0, Others[i] is id i+1), and the sender and the capture are
// told how many answer.
func TestFanoutProbeArgs(t *testing.T) {
	s := Spec{
		Responder: Host{Iface: "veth-r"}, Sender: Host{Iface: "veth-s"}, Capture: &Host{Iface: "veth-c"},
		Group: netip.MustParseAddrPort("239.7.7.7:9100"), Count: 500, Interval: time.Millisecond, Timestamps: tstamp.Software,
		RunID: 0xabc, ResponderCPU: 1, SenderCPU: -1, Poll: probe.Poll{Mode: probe.Busy}, ReadyTimeout: time.Second,
		Others: []Other{
			{Host: Host{Iface: "veth-r1"}, CPU: -1, Engine: probe.EngineNative, Stack: probe.Stack{Name: "exasock"}},
			{Host: Host{Iface: "veth-r2"}, CPU: 3, Poll: probe.Poll{Mode: probe.Block, BusyPollUS: 50}, Sched: cpusched.Sched{Policy: cpusched.FIFO, Priority: 10}},
		},
	}
	want := []struct {
		iface string
		cpu   int
		poll  probe.Poll
		sched cpusched.Sched
	}{{"veth-r", 1, s.Poll, cpusched.Sched{}}, {"veth-r1", -1, probe.Poll{}, cpusched.Sched{}}, {"veth-r2", 3, s.Others[1].Poll, s.Others[1].Sched}}
	for id, w := range want {
		var r probe.Respond
		parse(t, s.respond(id).Args(), r.Register, r.Parse)
		if r.ID != id || r.Iface != w.iface || r.CPU != w.cpu || r.Poll != w.poll || r.Sched != w.sched ||
			r.Group != s.Group || r.RunID != 0xabc || r.Capacity != 500 || !r.LeaveNIC || (r.Stack.String() == "exasock") != (id == 1) {
			t.Errorf("responder %d: %+v", id, r)
		}
	}
	var c probe.Capture
	parse(t, s.capture().Args(), c.Register, c.Parse)
	if c.Responders != 3 {
		t.Errorf("capture: --responders %d, want 3", c.Responders)
	}
	var snd probe.Send
	parse(t, s.send().Args(), snd.Register, snd.Parse)
	if snd.Responders != 3 {
		t.Errorf("send: --responders %d, want 3", snd.Responders)
	}
}
