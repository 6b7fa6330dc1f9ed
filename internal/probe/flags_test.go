package probe

import (
	"flag"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/tstamp"
)

// command is what the round-trip test needs of Respond, Send and Capture.
type command[T any] interface {
	*T
	Register(*flag.FlagSet)
	Parse(*flag.FlagSet) error
}

// parseArgs registers a fresh T on a FlagSet, parses args and completes it.
func parseArgs[T any, P command[T]](args []string) (T, *flag.FlagSet, error) {
	var v T
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	P(&v).Register(fs)
	if err := cli.Parse(fs, args); err != nil {
		return v, fs, err
	}
	return v, fs, P(&v).Parse(fs)
}

// fields lists the fields of T, the embedded Common's included.
func fields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, fields(f.Type)...)
			continue
		}
		out = append(out, f.Name)
	}
	return out
}

// fieldValue is the value of the field name of v (in v or its Common).
func fieldValue(v reflect.Value, name string) reflect.Value {
	return v.FieldByName(name)
}

// roundTrip is the contract's test for one probe: for the base command
// line and for each field changed alone, Args then Register, fs.Parse and
// Parse give back the same value; every field has a change (a field added
// without one fails here), each change changes its field, and every flag
// Register defines is written by Args for some value (a flag without a
// field fails here).
func roundTrip[T comparable, P command[T]](t *testing.T, base T, args func(T) []string, change map[string]func(*T)) {
	t.Helper()
	typ := reflect.TypeOf(base)
	for _, f := range fields(typ) {
		if _, ok := change[f]; !ok {
			t.Errorf("%s.%s has no change in this test: add one, and make sure Args writes it", typ.Name(), f)
		}
	}
	written := map[string]bool{}
	check := func(what string, want T) {
		a := args(want)
		for _, s := range a {
			if name, ok := strings.CutPrefix(s, "--"); ok {
				name, _, _ = strings.Cut(name, "=") // --name=value
				written[name] = true
			}
		}
		got, _, err := parseArgs[T, P](a)
		if err != nil {
			t.Errorf("%s: %q: %v", what, a, err)
			return
		}
		if got != want {
			t.Errorf("%s: %q parsed back as\n%+v, want\n%+v", what, a, got, want)
		}
	}
	check("base", base)
	for name, fn := range change {
		v := base
		fn(&v)
		if reflect.DeepEqual(fieldValue(reflect.ValueOf(v), name).Interface(), fieldValue(reflect.ValueOf(base), name).Interface()) {
			t.Errorf("the change of %s leaves it as it was", name)
		}
		check(name+" changed", v)
	}
	var v T
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	P(&v).Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !written[f.Name] {
			t.Errorf("flag --%s is never written by Args: the round cannot set it", f.Name)
		}
	})
}

var (
	otherGroup = netip.MustParseAddrPort("239.2.3.4:9100")
	responder  = netip.MustParseAddrPort("10.0.0.2:9000")
	replyGroup = netip.MustParseAddrPort("239.1.1.2:9001")
)

// commonChanges changes each field of Common; unicast is the unicast flag.
func commonChanges[T any](c func(*T) *Common) map[string]func(*T) {
	return map[string]func(*T){
		"Iface":       func(v *T) { c(v).Iface = "eth7" },
		"Group":       func(v *T) { c(v).Group = otherGroup },
		"Unicast":     func(v *T) { c(v).Group, c(v).Unicast = netip.AddrPort{}, responder },
		"Timestamps":  func(v *T) { c(v).Timestamps = tstamp.Software },
		"Out":         func(v *T) { c(v).Out = "/tmp/x.samples" },
		"RunID":       func(v *T) { c(v).RunID = 0xfedcba9876543210 },
		"Arm":         func(v *T) { c(v).Arm = "isolated cpu" },
		"ArmIndex":    func(v *T) { c(v).ArmIndex = 3 },
		"Round":       func(v *T) { c(v).Round = 7 },
		"LeaveNIC":    func(v *T) { c(v).LeaveNIC = true },
		"AllowMgmt":   func(v *T) { c(v).AllowMgmt = true },
		"TakeOverPTP": func(v *T) { c(v).TakeOverPTP = true },
		"MaxDuration": func(v *T) { c(v).MaxDuration = 90 * time.Second },
	}
}

func with[T any](m map[string]func(*T), more map[string]func(*T)) map[string]func(*T) {
	for k, f := range more {
		m[k] = f
	}
	return m
}

func TestRespondRoundTrip(t *testing.T) {
	base := DefaultRespond()
	base.Iface, base.RunID = "veth-r", 1 // required
	roundTrip[Respond](t, base, Respond.Args, with(commonChanges(func(r *Respond) *Common { return &r.Common }), map[string]func(*Respond){
		"Reply":    func(r *Respond) { r.Reply = replyGroup },
		"ID":       func(r *Respond) { r.ID = MaxResponderID },
		"CPU":      func(r *Respond) { r.CPU = 3 },
		"Poll":     func(r *Respond) { r.Poll = Poll{Mode: Block, BusyPollUS: 50} },
		"Sched":    func(r *Respond) { r.Sched = cpusched.Sched{Policy: cpusched.FIFO, Priority: 50} },
		"Count":    func(r *Respond) { r.Count = 10 },
		"Capacity": func(r *Respond) { r.Capacity = 3000 },
		"TxWait":   func(r *Respond) { r.TxWait = time.Second },
		"Engine": func(r *Respond) {
			r.Engine, r.Poll = EngineNative, Poll{Mode: PreferBusyPoll, BusyPollUS: 50, Budget: 16}
		},
		"Stack": func(r *Respond) {
			r.Engine, r.Stack = EngineNative, Stack{Name: StackCustom, Launcher: "/opt/x/launch", Preload: "libx.so", Presence: "x_loaded", FdStat: "x_fd_stat", Env: "EF_RX_TIMESTAMPING=3,EF_POLL_USEC=100000"}
		},
	}))
}

func TestSendRoundTrip(t *testing.T) {
	base := DefaultSend()
	base.Iface = "veth-s"
	roundTrip[Send](t, base, Send.Args, with(commonChanges(func(s *Send) *Common { return &s.Common }), map[string]func(*Send){
		"Count":    func(s *Send) { s.Count = 3000 },
		"Interval": func(s *Send) { s.Interval = 250 * time.Microsecond },
		"Size":     func(s *Send) { s.Size = 1472 },
		"Spin":     func(s *Send) { s.Spin = 0 },
		"CPU":      func(s *Send) { s.CPU = 1 },
		"Sched":    func(s *Send) { s.Sched = cpusched.Sched{Policy: cpusched.FIFO, Priority: 1} },
		"Poll":     func(s *Send) { s.Poll = Busy },
		"Engine":   func(s *Send) { s.Engine = EngineNative },
		"Stack": func(s *Send) {
			s.Engine, s.Stack = EngineNative, Stack{Name: StackCustom, Launcher: "/opt/x/launch", Preload: "libx.so", Presence: "x_loaded", FdStat: "x_fd_stat", Env: "EF_POLL_USEC=100000"}
		},
		"Port":          func(s *Send) { s.Port = 0 },
		"ReplyGroup":    func(s *Send) { s.ReplyGroup = replyGroup },
		"Responders":    func(s *Send) { s.Responders = 3 },
		"Warmup":        func(s *Send) { s.Warmup = 0 },
		"ReplyTimeout":  func(s *Send) { s.ReplyTimeout = 3 * time.Second },
		"TxWait":        func(s *Send) { s.TxWait = 0 },
		"Quiet":         func(s *Send) { s.Quiet = true },
		"ProgressLines": func(s *Send) { s.ProgressLines = true },
	}))
}

func TestCaptureRoundTrip(t *testing.T) {
	base := DefaultCapture()
	base.Iface, base.RunID = "veth-c", 1
	roundTrip[Capture](t, base, Capture.Args, with(commonChanges(func(c *Capture) *Common { return &c.Common }), map[string]func(*Capture){
		"ReplyPort":  func(c *Capture) { c.ReplyPort = 9001 },
		"VXLAN":      func(c *Capture) { c.VXLAN = true },
		"VXLANPort":  func(c *Capture) { c.VXLAN, c.VXLANPort = true, 8472 },
		"VNI":        func(c *Capture) { c.VXLAN, c.VNI = true, 0 },
		"Pcap":       func(c *Capture) { c.Pcap = "/tmp/x.pcap" },
		"Capacity":   func(c *Capture) { c.Capacity = 10 },
		"Responders": func(c *Capture) { c.Responders = MaxResponders },
		"Duration":   func(c *Capture) { c.Duration = time.Minute },
		"CPU":        func(c *Capture) { c.CPU = 3 },
	}))
}

func TestNoiseRoundTrip(t *testing.T) {
	base := DefaultNoise()
	base.CPU = 1 // required
	roundTrip[Noise](t, base, Noise.Args, map[string]func(*Noise){
		"CPU":   func(n *Noise) { n.CPU = 3 },
		"For":   func(n *Noise) { n.For = 200 * time.Millisecond },
		"Sched": func(n *Noise) { n.Sched = cpusched.Sched{Policy: cpusched.FIFO, Priority: 50} },
	})
	for _, bad := range []Noise{{CPU: -1, For: time.Second}, {CPU: 1, For: time.Microsecond}, {CPU: 1, For: 25 * time.Hour}} {
		if bad.Check() == nil {
			t.Errorf("%+v passes Check", bad)
		}
	}
}

// TestDefaults: a command line with only the required flags parses to
// DefaultX with those set: the defaults the CLI shows are the ones the
// runner starts from.
func TestDefaults(t *testing.T) {
	r, _, err := parseArgs[Respond]([]string{"--iface", "x", "--run-id", "1"})
	want := DefaultRespond()
	want.Iface, want.RunID = "x", 1
	if err != nil || r != want {
		t.Errorf("respond defaults: %+v, %v; want %+v", r, err, want)
	}
	s, _, err := parseArgs[Send]([]string{"--iface", "x"})
	wantS := DefaultSend()
	wantS.Iface = "x"
	if err != nil || s != wantS {
		t.Errorf("send defaults: %+v, %v; want %+v", s, err, wantS)
	}
	c, _, err := parseArgs[Capture]([]string{"--iface", "x", "--run-id", "1"})
	wantC := DefaultCapture()
	wantC.Iface, wantC.RunID = "x", 1
	if err != nil || c != wantC {
		t.Errorf("capture defaults: %+v, %v; want %+v", c, err, wantC)
	}
	if g := DefaultRespond().Group; g != DefaultGroup || DefaultGroup.String() != "239.1.1.1:9000" {
		t.Errorf("default group %v", g)
	}
	// One reply timeout for rig send and a scenario's rounds (which read
	// DefaultSend): a reply is late by the same rule by hand and in a run.
	if d := DefaultSend().ReplyTimeout; d != 500*time.Millisecond {
		t.Errorf("default reply timeout %v, want 500ms (docs/scenarios.md's traffic.reply-timeout)", d)
	}
}

// TestParseErrors: bad input gets the CLI's messages (cmd/rig's tests run
// the binary on some of the same input).
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string // the whole message
	}{
		{"send", nil, "--iface is required (e.g. --iface ens5)"},
		{"send", []string{"--iface", "x", "--max-duration", "-1s"}, "--max-duration -1s: want a positive duration (or 0 for no limit)"},
		{"respond", []string{"--iface", "lo", "--group", "10.1.2.3:9000"}, `invalid value --group "10.1.2.3:9000": want an IPv4 multicast group:port such as 239.1.1.1:9000`},
		{"respond", []string{"--iface", "lo", "--group", "239.1.1.1"}, `invalid value --group "239.1.1.1": want an IPv4 multicast group:port such as 239.1.1.1:9000`},
		{"send", []string{"--iface", "lo", "--to", "10.0.0.2:9000", "--group", "239.1.1.1:9000"}, "--group and --to exclude each other: --group 239.1.1.1:9000 sends multicast requests, --to 10.0.0.2:9000 unicast ones; give one"},
		{"respond", []string{"--iface", "lo", "--listen", "127.0.0.1:9000", "--group", "239.1.1.1:9000"}, "--group and --listen exclude each other: --group 239.1.1.1:9000 sends multicast requests, --listen 127.0.0.1:9000 unicast ones; give one"},
		{"send", []string{"--iface", "lo", "--to", "239.1.1.1:9000"}, `invalid value --to "239.1.1.1:9000": want the responder's IPv4 address:port such as 10.0.0.2:9000 (239.1.1.1 is a multicast address: unicast requests go to the responder's own address (a group is given as --group))`},
		{"send", []string{"--iface", "lo", "--to", "10.0.0.2"}, `invalid value --to "10.0.0.2": want the responder's IPv4 address:port such as 10.0.0.2:9000 (not an ip:port)`},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--listen", "0.0.0.0:9000"}, `invalid value --listen "0.0.0.0:9000": want the responder's IPv4 address:port such as 10.0.0.2:9000 (0.0.0.0 is not a host's address: give the responder's address on its interface)`},
		{"send", []string{"--iface", "lo", "--timestamps", "nic"}, `invalid value --timestamps "nic": tstamp: unknown timestamp mode "nic": want hardware, software, auto or off`},
		{"send", []string{"--iface", "lo", "--nic-timestamping", "on"}, `invalid value --nic-timestamping "on": want enable or leave`},
		{"respond", []string{"--iface", "lo", "--run-id", "0"}, `invalid value --run-id "0": run id "0": want 1 to 16 hex digits, not zero`},
		{"respond", []string{"--iface", "lo"}, "--run-id is required: the sender's run id (e.g. RUN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '), then --run-id $RUN for rig respond and rig send; rig send prints the one it uses)"},
		{"capture", []string{"--iface", "lo"}, "--run-id is required: the sender's run id (e.g. RUN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '), then --run-id $RUN for rig capture and rig send; rig send prints the one it uses)"},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--reply", "10.0.0.1:9000"}, `invalid value --reply "10.0.0.1:9000": want unicast or an IPv4 multicast group:port such as 239.1.1.2:9001`},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--poll", "spin"}, `invalid value --poll "spin": poll mode "spin": want block, busy or busy-poll:µs`},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--sched", "fifo:0"}, `invalid value --sched "fifo:0": sched "fifo:0": the FIFO priority must be 1..99 (e.g. fifo:50)`},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--poll", "io-uring"}, `poll mode "io-uring" needs --engine native: the Go engine waits by block, busy or busy-poll:µs`},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--engine", "c"}, `invalid value --engine "c": engine "c": want go, native, xdp, xdp-generic or tc`},
		{"send", []string{"--iface", "lo", "--sched", "rr:1"}, `invalid value --sched "rr:1": sched "rr:1": want other or fifo:N (N 1..99)`},
		{"send", []string{"--iface", "lo", "--poll", "busy-poll:50"}, `invalid value --poll "busy-poll:50": want block or busy`},
		{"send", []string{"--iface", "lo", "--poll", "spin"}, `invalid value --poll "spin": want block or busy`},
		{"send", []string{"--iface", "lo", "--port", "65536"}, "--port 65536: want 0..65535"},
		{"send", []string{"--iface", "lo", "--reply-group", "unicast"}, `invalid value --reply-group "unicast": want an IPv4 multicast group:port such as 239.1.1.1:9000`},
		{"send", []string{"--iface", "lo", "--warmup", "10", "--count", "10"}, "--warmup 10: want 0..count-1"},
		{"send", []string{"--iface", "lo", "--warmup", "-1"}, "--warmup -1: want 0..count-1"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--reply-port", "70000"}, "--reply-port 70000: want 1..65535"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--vni", "4242"}, "--vxlan-port and --vni select VXLAN copies: add --vxlan"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--vxlan", "--vni", "16777216"}, "--vni 16777216: want 0..16777215 (a VNI has 24 bits), or -1 for any"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--vxlan", "--vxlan-port", "0"}, "--vxlan-port 0: want 1..65535"},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--id", "65536"}, "--id 65536: want 0..65535"},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--id", "-1"}, "--id -1: want 0..65535"},
		{"send", []string{"--iface", "lo", "--responders", "0"}, "--responders 0: want 1..64"},
		{"send", []string{"--iface", "lo", "--responders", "65"}, "--responders 65: want 1..64"},
		{"send", []string{"--iface", "lo", "--engine", "xdp"}, "--engine xdp: rig send runs go or native (xdp answers requests, it does not send them)"},
		{"send", []string{"--iface", "lo", "--engine", "native", "--responders", "2"}, "--responders 2 with --engine native: the native sender files one responder's replies; use --engine go for several"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--responders", "0"}, "--responders 0: want 1..64"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--responders", "65"}, "--responders 65: want 1..64"},
		// What the probes' New refused after the NIC was prepared, or took
		// silently as another value, Parse refuses before anything is done.
		{"send", []string{"--iface", "lo", "--size", "20"}, "--size 20: payload size 20 out of range: use 44..1472 bytes (default 64)"},
		{"send", []string{"--iface", "lo", "--reply-timeout", "0"}, "--reply-timeout 0s: want a positive duration such as 500ms"},
		{"send", []string{"--iface", "lo", "--interval", "0"}, "--interval 0s: want a positive duration such as 1ms"},
		{"send", []string{"--iface", "lo", "--tx-wait", "-1s"}, "--tx-wait -1s: want 0 or more"},
		{"respond", []string{"--iface", "lo", "--run-id", "1", "--capacity", "0"}, "--capacity 0: want 1 or more"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--capacity", "0"}, "--capacity 0: want 1 or more"},
		{"capture", []string{"--iface", "lo", "--run-id", "1", "--timestamps", "off"}, "--timestamps off: a capture records nothing but stamps; use hardware, software or auto"},
	} {
		var err error
		switch tc.cmd {
		case "respond":
			_, _, err = parseArgs[Respond](tc.args)
		case "send":
			_, _, err = parseArgs[Send](tc.args)
		case "capture":
			_, _, err = parseArgs[Capture](tc.args)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %q: %v\nwant %s", tc.cmd, tc.args, err, tc.want)
		}
	}
}

// TestDerived: the values the CLI derives from a command line.
func TestDerived(t *testing.T) {
	s, _, err := parseArgs[Send]([]string{"--iface", "x", "--to", "10.0.0.2:9300"})
	if err != nil || s.Group.IsValid() || s.Dest() != netip.MustParseAddrPort("10.0.0.2:9300") || s.LocalPort() != 9300 || s.Requests() != "unicast to 10.0.0.2:9300" {
		t.Errorf("unicast send: %+v %v: dest %v port %d %q", s, err, s.Dest(), s.LocalPort(), s.Requests())
	}
	s, _, _ = parseArgs[Send]([]string{"--iface", "x", "--reply-group", "239.1.1.2:9001", "--port", "5"})
	if s.LocalPort() != 9001 || s.Requests() != "multicast 239.1.1.1:9000" {
		t.Errorf("reply group: port %d, %q", s.LocalPort(), s.Requests())
	}
	s, _, _ = parseArgs[Send]([]string{"--iface", "x", "--port", "0"})
	if s.LocalPort() != 0 {
		t.Errorf("--port 0: port %d", s.LocalPort())
	}
	c, _, _ := parseArgs[Capture]([]string{"--iface", "x", "--run-id", "1", "--reply-port", "9001"})
	if !slices.Equal(c.Ports(), []uint16{9000, 9001}) {
		t.Errorf("capture ports %v", c.Ports())
	}
}

// FuzzFlags: whatever command line Respond, Send and Capture accept, their
// Args write back as a command line that parses to the same value.
func FuzzFlags(f *testing.F) {
	f.Add("239.1.1.1:9000", "", "fifo:50", "busy-poll:50", "unicast", "1", "auto", "5s", "0", "1")
	f.Add("", "10.0.0.2:9000", "other", "busy", "239.1.1.2:9001", "fedcba9876543210", "software", "0s", "65535", "64")
	f.Add("239.1.1.1:0", "0.0.0.0:1", "fifo:0", "busy-poll:0", "x", "0", "nic", "-1s", "-1", "0")
	f.Fuzz(func(t *testing.T, group, unicast, sched, poll, reply, runID, ts, maxDur, id, responders string) {
		common := []string{"--iface", "x", "--run-id", runID, "--timestamps", ts, "--max-duration", maxDur}
		if group != "" {
			common = append(common, "--group", group)
		}
		r, _, err := parseArgs[Respond](append(slices.Clone(common), "--listen", unicast, "--sched", sched, "--poll", poll, "--reply", reply, "--id", id))
		if err == nil {
			if back, _, err := parseArgs[Respond](r.Args()); err != nil || back != r {
				t.Fatalf("respond %+v: Args %q parse as %+v, %v", r, r.Args(), back, err)
			}
		}
		s, _, err := parseArgs[Send](append(slices.Clone(common), "--to", unicast, "--sched", sched, "--poll", poll, "--reply-group", reply, "--responders", responders))
		if err == nil {
			if back, _, err := parseArgs[Send](s.Args()); err != nil || back != s {
				t.Fatalf("send %+v: Args %q parse as %+v, %v", s, s.Args(), back, err)
			}
		}
		c, _, err := parseArgs[Capture](append(slices.Clone(common), "--to", unicast, "--responders", responders))
		if err == nil {
			if back, _, err := parseArgs[Capture](c.Args()); err != nil || back != c {
				t.Fatalf("capture %+v: Args %q parse as %+v, %v", c, c.Args(), back, err)
			}
		}
	})
}
