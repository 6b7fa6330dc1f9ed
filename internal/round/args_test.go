package round

import (
	"context"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/agent"
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
// what the probes parse back into the round's settings: the request
// stream of Send on every probe, the run's NIC config left alone, every
// process bounded, the arm's responder knobs, the capture watching the
// replies' group port, the sender quiet.
func TestProbeArgs(t *testing.T) {
	send := probe.DefaultSend()
	send.Iface, send.Group, send.ReplyGroup = "veth-s", netip.MustParseAddrPort("239.7.7.7:9100"), netip.MustParseAddrPort("239.7.7.8:9101")
	send.Count, send.Interval, send.Warmup, send.Timestamps, send.RunID = 500, 250*time.Microsecond, 3, tstamp.Software, 0xabc
	send.Arm, send.ArmIndex, send.Round, send.CPU = "pinned", 1, 4, 0
	send.Poll, send.Spin, send.ReplyTimeout = probe.Busy, 20*time.Microsecond, 2*time.Second
	rsp := probe.DefaultRespond()
	rsp.Iface, rsp.CPU = "veth-r", 1
	rsp.Poll, rsp.Sched = probe.Poll{Mode: probe.Block, BusyPollUS: 50}, cpusched.Sched{Policy: cpusched.FIFO, Priority: 50}
	rsp.Engine, rsp.Stack = probe.EngineNative, probe.Stack{Name: "onload", Env: "EF_RX_TIMESTAMPING=3,EF_TX_TIMESTAMPING=3"}
	capt := probe.DefaultCapture()
	capt.Iface, capt.VXLAN = "veth-c", true
	s := Spec{Send: send, Respond: []probe.Respond{rsp}, Capture: &capt, ReadyTimeout: time.Second, Progress: func(int, int) {}}
	var r probe.Respond
	parse(t, s.respond(0).Args(), r.Register, r.Parse)
	if r.Engine != probe.EngineNative || r.Stack != rsp.Stack {
		t.Errorf("respond: engine %v, stack %+v", r.Engine, r.Stack)
	}
	if r.Iface != "veth-r" || r.Group != send.Group || r.Reply != send.ReplyGroup || r.CPU != 1 || r.Poll != rsp.Poll || r.Sched != rsp.Sched ||
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
	if snd.Iface != "veth-s" || snd.Count != 500 || snd.Interval != send.Interval || snd.Warmup != 3 || snd.CPU != 0 || snd.Poll != probe.Busy ||
		snd.Spin != send.Spin || snd.ReplyGroup != send.ReplyGroup || snd.LocalPort() != 9101 || snd.ReplyTimeout != 2*time.Second ||
		snd.Size != 64 || !snd.Quiet || !snd.ProgressLines || snd.Sched != (cpusched.Sched{}) || !snd.LeaveNIC || snd.Responders != 1 {
		t.Errorf("send: %+v", snd)
	}

	// Unicast requests: the sender and the capture get --to, the
	// responder --listen; replies by unicast, no progress reader.
	to := netip.MustParseAddrPort("10.0.0.2:9105")
	s.Send.Group, s.Send.Unicast, s.Send.ReplyGroup, s.Progress = netip.AddrPort{}, to, netip.AddrPort{}, nil
	r, c, snd = probe.Respond{}, probe.Capture{}, probe.Send{}
	parse(t, s.respond(0).Args(), r.Register, r.Parse)
	parse(t, s.capture().Args(), c.Register, c.Parse)
	parse(t, s.send().Args(), snd.Register, snd.Parse)
	if r.Unicast != to || r.Group.IsValid() || r.Reply.IsValid() {
		t.Errorf("unicast respond: %+v", r)
	}
	if c.Unicast != to || !slices.Equal(c.Ports(), []uint16{9105}) {
		t.Errorf("unicast capture: %+v", c)
	}
	if snd.Unicast != to || snd.Dest() != to || snd.ReplyGroup.IsValid() || snd.ProgressLines {
		t.Errorf("unicast send: %+v", snd)
	}
}

// TestFanoutProbeArgs: in a fan-out round every responder's command line
// has its own host, id and knobs (Respond[i] is id i), and the sender and
// the capture are told how many answer.
func TestFanoutProbeArgs(t *testing.T) {
	send := probe.DefaultSend()
	send.Iface, send.Group, send.Count, send.Timestamps, send.RunID = "veth-s", netip.MustParseAddrPort("239.7.7.7:9100"), 500, tstamp.Software, 0xabc
	capt := probe.DefaultCapture()
	capt.Iface = "veth-c"
	r0, r1, r2 := probe.DefaultRespond(), probe.DefaultRespond(), probe.DefaultRespond()
	r0.Iface, r0.CPU, r0.Poll = "veth-r", 1, probe.Poll{Mode: probe.Busy}
	r1.Iface, r1.Engine, r1.Stack = "veth-r1", probe.EngineNative, probe.Stack{Name: "exasock"}
	r2.Iface, r2.CPU, r2.Poll, r2.Sched = "veth-r2", 3, probe.Poll{Mode: probe.Block, BusyPollUS: 50}, cpusched.Sched{Policy: cpusched.FIFO, Priority: 10}
	s := Spec{Send: send, Respond: []probe.Respond{r0, r1, r2}, Capture: &capt, ReadyTimeout: time.Second}
	want := []struct {
		iface string
		cpu   int
		poll  probe.Poll
		sched cpusched.Sched
	}{{"veth-r", 1, r0.Poll, cpusched.Sched{}}, {"veth-r1", -1, probe.Poll{}, cpusched.Sched{}}, {"veth-r2", 3, r2.Poll, r2.Sched}}
	for id, w := range want {
		var r probe.Respond
		parse(t, s.respond(id).Args(), r.Register, r.Parse)
		if r.ID != id || r.Iface != w.iface || r.CPU != w.cpu || r.Poll != w.poll || r.Sched != w.sched ||
			r.Group != send.Group || r.RunID != 0xabc || r.Capacity != 500 || !r.LeaveNIC || (r.Stack.String() == "exasock") != (id == 1) {
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

// TestRunWantsAnAgentPerProbe: a spec whose probes and agents do not pair
// up is refused before anything starts.
func TestRunWantsAnAgentPerProbe(t *testing.T) {
	capt := probe.DefaultCapture()
	for _, s := range []Spec{
		{},
		{Respond: []probe.Respond{probe.DefaultRespond(), probe.DefaultRespond()}, RespondOn: make([]*agent.Client, 1)},
		{Respond: []probe.Respond{probe.DefaultRespond()}, RespondOn: make([]*agent.Client, 1), Capture: &capt},
	} {
		s.Dir = filepath.Join(t.TempDir(), "round")
		if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "want one agent per probe") {
			t.Errorf("%d responders on %d agents, capture %t: err %v", len(s.Respond), len(s.RespondOn), s.Capture != nil, err)
		}
		if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
			t.Errorf("round directory made for a refused spec: %v", err)
		}
	}
}
