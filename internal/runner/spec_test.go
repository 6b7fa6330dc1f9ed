package runner

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// TestRoundSpec: the round an arm runs carries the scenario's request
// stream on the sender's command line, each responder host's own knobs on
// its command line, the capture host's mirror, the hosts' take-over-ptp,
// and, for a unicast arm, the responder's address instead of the group;
// a reply timeout left at zero is the sender's default.
func TestRoundSpec(t *testing.T) {
	s, err := scenario.Parse("spec.yaml", []byte(`name: spec
hosts:
  cap: {via: ssh cap, roles: [capture], iface: eth4, mirror: vxlan, cpu: 0}
  r0: {via: ssh r0, roles: [responder], iface: eth2}
  r1: {via: ssh r1, roles: [responder], iface: eth3, take-over-ptp: true}
  snd: {via: local, roles: [sender], iface: eth1, take-over-ptp: true, cpu: 1}
traffic: {group: 239.1.1.1:5000, reply: 239.1.1.2:5001, count: 100, interval: 2ms, size: 200, warmup: 5, reply-timeout: 300ms}
timestamps: software
defaults: {responder: {cpu: 2}}
arms:
  - name: base
  - name: tuned
    responders: {r1: {responder: {cpu: 3, poll: busy, sched: "fifo:10"}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := &run{s: s, dir: "/res", o: Options{RunID: "abc"}, hs: &hosts{
		sender:     host{Iface: "eth1", TakeOverPTP: true, CPU: s.HostWith(scenario.RoleSender).CPU},
		responders: []host{{Iface: "eth2"}, {Iface: "eth3", TakeOverPTP: true}},
		capture:    &host{Iface: "eth4", VXLAN: true, CPU: s.HostWith(scenario.RoleCapture).CPU},
	}}
	arm := s.Arms[1]
	spec, err := r.spec(arm, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Send
	if c.Iface != "eth1" || !c.TakeOverPTP || c.Group != s.Traffic.Group || c.Unicast.IsValid() || c.ReplyGroup != s.Traffic.Reply ||
		c.Count != 100 || c.Interval != 2*time.Millisecond || c.Size != 200 || c.Warmup != 5 || c.ReplyTimeout != 300*time.Millisecond ||
		c.Timestamps != tstamp.Software || c.RunID != 0xabc || c.Arm != "tuned" || c.ArmIndex != 1 || c.Round != 3 || !spec.Telemetry ||
		spec.Dir != rundir.RoundDir("/res", "tuned", 3) || c.CPU != 1 {
		t.Errorf("send: %+v (dir %s)", c, spec.Dir)
	}
	if spec.Capture == nil || spec.Capture.Iface != "eth4" || !spec.Capture.VXLAN || spec.Capture.CPU != 0 {
		t.Errorf("capture: %+v", spec.Capture)
	}
	for i, want := range []probe.Respond{
		{CPU: 2},
		{CPU: 3, Poll: probe.Poll{Mode: probe.Busy}, Sched: cpusched.Sched{Policy: cpusched.FIFO, Priority: 10}},
	} {
		h := r.hs.responders[i]
		got := respond(h, r.knobs(arm, i))
		if got.Iface != h.Iface || got.TakeOverPTP != h.TakeOverPTP || got.CPU != want.CPU || got.Poll != want.Poll || got.Sched != want.Sched {
			t.Errorf("responder %d: %+v", i, got)
		}
	}

	// A unicast arm: the requests go to the responder's address and
	// traffic.port; a zero reply timeout is the sender's default.
	s, err = scenario.Parse("unicast.yaml", []byte(`name: unicast
hosts:
  r0: {via: ssh r0, roles: [responder], iface: eth2}
  snd: {via: local, roles: [sender], iface: eth1}
traffic: {request: unicast, port: 9100}
arms:
  - name: u
`))
	if err != nil {
		t.Fatal(err)
	}
	s.Traffic.ReplyTimeout = 0
	r = &run{s: s, to: netip.MustParseAddr("10.0.0.2"), hs: &hosts{sender: host{Iface: "eth1"}, responders: []host{{Iface: "eth2"}}}}
	spec, err = r.spec(s.Arms[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := spec.Send; c.Unicast != netip.MustParseAddrPort("10.0.0.2:9100") || c.Group.IsValid() ||
		c.ReplyTimeout != probe.DefaultSend().ReplyTimeout || c.Size != wire.DefaultSize || spec.Capture != nil {
		t.Errorf("unicast send: %+v, capture %+v", c, spec.Capture)
	}
}
