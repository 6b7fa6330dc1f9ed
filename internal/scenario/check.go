package scenario

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/wire"
)

// checker collects the static problems of one file while converting it.
type checker struct {
	x     *posIndex
	errs  ErrorList
	warns ErrorList // what the run may want to change, not refused
}

func (c *checker) add(e *Error) { c.errs = append(c.errs, e) }

// valOnce is val for a check made per arm of a knob that may be written
// once for all of them (in defaults): one error per place and reason.
func (c *checker) valOnce(path, reason, hint string) {
	e := c.x.valErr(path, reason, hint)
	if !slices.ContainsFunc(c.errs, func(x *Error) bool { return *x == *e }) {
		c.add(e)
	}
}

// warn adds a warning once: an arm's responders on one host, or its
// candidate CPUs, would repeat it.
func (c *checker) warn(path, reason, hint string) {
	e := c.x.valErr(path, reason, hint)
	if !slices.ContainsFunc(c.warns, func(x *Error) bool { return *x == *e }) {
		c.warns = append(c.warns, e)
	}
}

// field is where arm's knob sub is written: in the arm, else in
// defaults, else the arm itself.
func (c *checker) field(arm, sub string) string {
	for _, p := range []string{arm + "." + sub, "defaults." + sub} {
		if c.x.has(p) {
			return p
		}
	}
	return arm
}

func (c *checker) val(path, reason, hint string) { c.add(c.x.valErr(path, reason, hint)) }
func (c *checker) key(path, reason, hint string) { c.add(c.x.keyErr(path, reason, hint)) }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (c *checker) scenario(r *rawScenario) *Scenario {
	s := &Scenario{
		Timestamps: TimestampsAuto,
		Rounds:     DefaultRounds,
		Order:      Order{Kind: OrderRotate},
	}
	if r.Name == nil || strings.TrimSpace(*r.Name) == "" {
		c.add(c.x.errAt(pos{1, 1}, "the scenario has no name", "add a line `name: my-test` (used in the run directory name)"))
	} else if !nameRE.MatchString(*r.Name) {
		c.val("name", fmt.Sprintf("name %q may hold only letters, digits, '.', '_' and '-'", *r.Name), "it becomes part of the run directory name; put prose in description:")
	} else {
		s.Name = *r.Name
	}
	if r.Description != nil {
		s.Description = *r.Description
	}
	if r.Emulate != nil {
		if *r.Emulate != "netns" {
			c.val("emulate", fmt.Sprintf("emulate: %q is not a known topology", *r.Emulate), "the only emulated topology is `emulate: netns`; for real hosts delete the line and list hosts:")
		} else {
			s.Emulate = "netns"
		}
	}
	s.Hosts = c.hosts(r, s.Emulate != "")
	for _, h := range s.Hosts {
		if h.Has(RoleResponder) {
			s.Responders = append(s.Responders, h.Name)
		}
	}
	s.Traffic = c.traffic(r.Traffic)
	if r.Timestamps != nil {
		switch m := TimestampMode(*r.Timestamps); m {
		case TimestampsAuto, TimestampsHardware, TimestampsSoftware:
			s.Timestamps = m
		default:
			c.val("timestamps", fmt.Sprintf("timestamps: %q is not a timestamp mode", *r.Timestamps), "use hardware, software or auto (the best the NICs grant)")
		}
		if s.Emulate != "" && s.Timestamps == TimestampsHardware {
			c.val("timestamps", "the emulated topology (veth) has no hardware timestamps", "use timestamps: software (or auto) with emulate: netns")
		}
	}
	if r.Rounds != nil {
		if *r.Rounds < 1 || *r.Rounds > 1000 {
			c.val("rounds", fmt.Sprintf("rounds: %d is out of range", *r.Rounds), "use 1..1000; 3-5 rounds let a difference show as non-overlapping ranges")
		} else {
			s.Rounds = *r.Rounds
		}
	}
	if r.Order != nil {
		if o, err := parseOrder(*r.Order); err != nil {
			c.val("order", err.Error(), "use rotate (default), sequential or random:SEED (e.g. random:42)")
		} else {
			s.Order = o
		}
	}
	if r.RequireCheck != nil {
		s.RequireCheck = *r.RequireCheck
	}
	if r.Capture != nil && r.Capture.Pcap != nil && *r.Capture.Pcap {
		if slices.ContainsFunc(s.Hosts, func(h Host) bool { return h.Has(RoleCapture) }) {
			s.Pcap = true
		} else if s.Hosts != nil {
			c.val("capture.pcap", "capture.pcap: no host captures", "give a host the capture role (its mirror/SPAN port as iface), or delete capture:")
		}
	}
	if r.Defaults != nil {
		s.Defaults = c.knobs("defaults", r.Defaults)
		s.DefaultsPer = c.perResponder("defaults", r.Defaults.Responders, s.Responders)
	}
	if len(r.Arms) == 0 {
		if c.x.has("arms") {
			c.val("arms", "arms: is empty", "list at least one arm: `- name: baseline`")
		} else {
			c.add(c.x.errAt(pos{1, 1}, "the scenario has no arms", "add `arms:` with at least one `- name: ...` entry"))
		}
	}
	seen := map[string]string{}
	for i, ra := range r.Arms {
		p := fmt.Sprintf("arms[%d]", i)
		if ra == nil {
			c.val(p, "empty arm", "give the arm a name: `- name: baseline`")
			continue
		}
		a := Arm{}
		switch {
		case ra.Name == nil:
			c.val(p, fmt.Sprintf("arm %d has no name", i+1), "add `name: ...` to the arm")
		case !nameRE.MatchString(*ra.Name):
			c.val(p+".name", fmt.Sprintf("arm name %q may hold only letters, digits, '.', '_' and '-'", *ra.Name), "arm names become file names in the run directory")
		default:
			a.Name = *ra.Name
			if prev, dup := seen[a.Name]; dup {
				pe, _ := c.x.lookup(prev + ".name")
				c.val(p+".name", fmt.Sprintf("arm name %q is used twice (first at line %d)", a.Name, pe.val.line), "give every arm its own name")
			}
			seen[a.Name] = p
		}
		a.Knobs = c.knobs(p, &ra.Knobs)
		a.Request = c.armRequest(p, ra.Request, s.Traffic.Request)
		a.Effective = merge(s.Defaults, a.Knobs)
		a.PerResponder = c.perResponder(p, ra.Knobs.Responders, s.Responders)
		if e := a.Effective.Sender.Engine; e != nil && *e == probe.EngineNative && len(s.Responders) > 1 {
			c.valOnce(c.field(p, "sender.engine"), fmt.Sprintf("engine native for the sender, and %d responders answer each request: the native sender files one responder's replies", len(s.Responders)),
				"use engine: go for the sender of a fan-out (or one responder)")
		}
		if len(s.Responders) > 1 {
			for _, h := range s.Responders {
				c.effective(p, s.KnobsFor(a, h))
			}
			c.fanout(p, s, a)
		} else {
			c.effective(p, a.Effective)
		}
		c.reflector(p, s, a.Effective)
		s.Arms = append(s.Arms, a)
	}
	if r.Baseline != nil {
		if _, ok := seen[*r.Baseline]; !ok {
			names := make([]string, 0, len(s.Arms))
			for _, a := range s.Arms {
				names = append(names, a.Name)
			}
			hint := "arms: " + strings.Join(names, ", ")
			if d := closest(*r.Baseline, names); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.val("baseline", fmt.Sprintf("baseline %q names no arm", *r.Baseline), hint)
		} else {
			s.Baseline = *r.Baseline
		}
	} else if len(s.Arms) > 0 {
		s.Baseline = s.Arms[0].Name
	}
	c.requests(r, s)
	c.crossChecks(s)
	return s
}

func parseOrder(v string) (Order, error) {
	switch v {
	case "rotate":
		return Order{Kind: OrderRotate}, nil
	case "sequential":
		return Order{Kind: OrderSequential}, nil
	}
	if seed, ok := strings.CutPrefix(v, "random:"); ok {
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return Order{}, fmt.Errorf("order: %q: the seed must be a whole number >= 0", v)
		}
		return Order{Kind: OrderRandom, Seed: n}, nil
	}
	if v == "random" {
		return Order{}, fmt.Errorf("order: random needs a seed so that the run can be repeated")
	}
	return Order{}, fmt.Errorf("order: %q is not an order rule", v)
}

var roleNames = []Role{RoleSender, RoleResponder, RoleCapture}

func (c *checker) hosts(r *rawScenario, emulate bool) []Host {
	if r.Responders != nil && !emulate {
		c.key("responders", "responders: is the number of emulated responders, and the scenario has no emulate: netns",
			"for real hosts give the responder role to each responder host; or add emulate: netns")
	}
	if emulate {
		if r.Hosts != nil {
			c.key("hosts", "emulate: netns builds its own hosts; hosts: cannot be given too", "delete hosts: to use the emulated topology, or delete emulate: to use real hosts")
		}
		n := 1
		if r.Responders != nil {
			if *r.Responders < 1 || *r.Responders > MaxEmulatedResponders {
				c.val("responders", fmt.Sprintf("responders: %d is out of range", *r.Responders), fmt.Sprintf("use 1..%d responder namespaces", MaxEmulatedResponders))
			} else {
				n = *r.Responders
			}
		}
		var hs []Host
		for i := range n {
			hs = append(hs, Host{Name: EmulatedResponderN(i), Via: "ip netns exec", Roles: []Role{RoleResponder}})
		}
		return append(hs,
			Host{Name: EmulatedSender, Via: "ip netns exec", Roles: []Role{RoleSender}},
			Host{Name: EmulatedCapture, Via: "ip netns exec", Roles: []Role{RoleCapture}})
	}
	if len(r.Hosts) == 0 {
		if c.x.has("hosts") {
			c.val("hosts", "hosts: is empty", "name at least one host with `via: local` and roles [sender, responder]")
		} else {
			c.add(c.x.errAt(pos{1, 1}, "the scenario has no hosts and no emulate:", "add `emulate: netns` to run on this machine, or hosts: with via and roles"))
		}
		return nil
	}
	names := make([]string, 0, len(r.Hosts))
	for n := range r.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Host
	count := map[Role][]string{}
	for _, n := range names {
		rh := r.Hosts[n]
		p := "hosts." + n
		if !nameRE.MatchString(n) {
			c.key(p, fmt.Sprintf("host name %q may hold only letters, digits, '.', '_' and '-'", n), "")
			continue
		}
		h := Host{Name: n}
		if rh == nil {
			c.key(p, fmt.Sprintf("host %s has no via: and roles:", n), "e.g. `"+n+": {via: local, roles: [sender]}`")
			continue
		}
		if rh.Via == nil {
			c.key(p, fmt.Sprintf("host %s has no via:", n), "use via: local, or the command that reaches it: \"ssh HOST\", \"ip netns exec NS\", \"kubectl exec -i POD --\"")
		} else {
			h.Via = strings.TrimSpace(*rh.Via)
			if cmd, err := parseVia(h.Via); err != nil {
				c.val(p+".via", err.Error(), "use local, \"ssh HOST\", \"ip netns exec NS\" or \"kubectl exec -i POD --\"; rig appends `rig agent --stdio`")
			} else {
				h.Command = cmd
			}
		}
		if len(rh.Roles) == 0 {
			c.key(p, fmt.Sprintf("host %s has no roles", n), "add roles: with one or more of sender, responder, capture")
		}
		for i, role := range rh.Roles {
			rp := fmt.Sprintf("%s.roles[%d]", p, i)
			if !slices.Contains(roleNames, Role(role)) {
				c.val(rp, fmt.Sprintf("unknown role %q", role), "roles are sender, responder and capture")
				continue
			}
			if h.Has(Role(role)) {
				c.val(rp, fmt.Sprintf("role %s is listed twice", role), "")
				continue
			}
			h.Roles = append(h.Roles, Role(role))
			count[Role(role)] = append(count[Role(role)], n)
		}
		if rh.Iface != nil {
			if !validIfname(*rh.Iface) {
				c.val(p+".iface", fmt.Sprintf("%q is not an interface name", *rh.Iface), "Linux interface names are 1-15 characters without '/', ':' or spaces")
			} else {
				h.Iface = *rh.Iface
			}
		}
		if rh.TakeOverPTP != nil {
			h.TakeOverPTP = *rh.TakeOverPTP
		}
		if h.Has(RoleCapture) && (h.Has(RoleSender) || h.Has(RoleResponder)) {
			c.val(p+".roles", fmt.Sprintf("host %s captures on the interface it sends or answers on: a tap there sees the host's own packets as outgoing, with software stamps at best, and its \"turnaround\" would be the sender's round trip", n),
				"give the capture its own host entry on the mirror/SPAN port (e.g. cap: {via: local, roles: [capture], iface: MIRROR_PORT}), or remove the capture role")
		}
		if rh.AllowMgmt != nil {
			h.AllowMgmt = *rh.AllowMgmt
		}
		c.hostTraffic(p, rh, &h)
		c.hostNode(p, rh, &h, names, out)
		out = append(out, h)
	}
	// Two entries may reach one machine (one per NIC port): the capture's
	// port must not be the sender's or the responder's.
	for _, cp := range out {
		if !cp.Has(RoleCapture) || cp.Iface == "" {
			continue
		}
		for _, o := range out {
			if o.Name != cp.Name && o.Via == cp.Via && o.Iface == cp.Iface && (o.Has(RoleSender) || o.Has(RoleResponder)) {
				c.val("hosts."+cp.Name+".iface", fmt.Sprintf("the capture captures on %s, which host %s (via %s) sends or answers on: the capture needs its own mirror/SPAN port", cp.Iface, o.Name, o.Via),
					"give the capture the NIC port the switch mirrors both directions to, or remove the capture role")
			}
		}
	}
	for _, role := range []Role{RoleSender, RoleResponder} {
		if len(count[role]) == 0 && len(c.errs) == 0 {
			c.key("hosts", fmt.Sprintf("no host has the %s role", role), fmt.Sprintf("add %s to the roles of one host", role))
		}
	}
	for _, role := range roleNames {
		if len(count[role]) > 1 && role != RoleResponder {
			c.val("hosts."+count[role][1], fmt.Sprintf("the %s role is on two hosts (%s)", role, strings.Join(count[role], ", ")), "one host plays each role (only the responder role may be on several: fan-out)")
		}
	}
	if n := len(count[RoleResponder]); n > MaxResponders {
		c.val("hosts."+count[RoleResponder][MaxResponders], fmt.Sprintf("%d hosts have the responder role", n), fmt.Sprintf("one request stream takes at most %d responders", MaxResponders))
	}
	return out
}

// hostNode reads host option node: the via of the agent that applies a
// responder's node knobs on its node. Its agent's name (NodeName) must
// not be a host's, and one node agent serves one responder (it applies
// one arm at a time).
func (c *checker) hostNode(p string, rh *rawHost, h *Host, names []string, before []Host) {
	if rh.Node == nil {
		return
	}
	p += ".node"
	via := strings.TrimSpace(*rh.Node)
	cmd, err := parseVia(via)
	switch {
	case !h.Has(RoleResponder):
		c.key(p, fmt.Sprintf("node: reaches the agent that applies a responder's node knobs, and host %s is not a responder", h.Name), "put node: on the responder host, or delete it")
	case err != nil:
		c.val(p, err.Error(), "name the host agent on the responder's node: \"kubectl exec -i -n rig rig-host-agent-XXXXX --\" (docs/kubernetes.md#5-the-host-agent-and-its-limits)")
	case slices.Contains(names, NodeName(h.Name)):
		c.val(p, fmt.Sprintf("the node agent of host %s is named %s, which is another host's name", h.Name, NodeName(h.Name)), "rename host "+NodeName(h.Name))
	default:
		for _, o := range before {
			if o.Node != nil && o.Node.Via == via {
				c.val(p, fmt.Sprintf("hosts %s and %s name one node agent (%s): it applies one responder's node knobs at a time", o.Name, h.Name, via), "give node: to one of them; the node knobs of its arms change the node the other shares")
				return
			}
		}
		h.Node = &Host{Name: NodeName(h.Name), Via: via, Command: cmd}
	}
}

// perResponder reads the knobs of a responders: map (defaults or an arm),
// keyed by responder host name.
func (c *checker) perResponder(p string, m map[string]*rawKnobs, responders []string) map[string]Knobs {
	if len(m) == 0 {
		return nil
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]Knobs{}
	for _, n := range names {
		kp := p + ".responders." + n
		if !slices.Contains(responders, n) {
			hint := "responder hosts: " + strings.Join(responders, ", ")
			if d := closest(n, responders); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.key(kp, fmt.Sprintf("responders: %q is no responder host", n), hint)
			continue
		}
		rk := m[n]
		if rk == nil {
			c.val(kp, fmt.Sprintf("no knobs for responder %s", n), "e.g. `"+n+": {responder: {cpu: 1}}`, or delete the line")
			continue
		}
		if rk.Responders != nil {
			c.key(kp+".responders", "responders: inside responders:", "the knobs under responders."+n+" act on "+n+" alone; write them there directly")
		}
		if rk.Sender != nil {
			c.key(kp+".sender", "sender: under responders: the one sender's engine is not a responder's", "write sender: in the arm or in defaults")
		}
		out[n] = c.knobs(kp, rk)
	}
	return out
}

// fanout checks an arm of a scenario with several responders: they all
// answer one multicast request stream, and each responder's knobs name
// their CPU.
func (c *checker) fanout(p string, s *Scenario, a Arm) {
	if a.Request == RequestUnicast {
		c.val(p+".request", fmt.Sprintf("arm %s sends unicast requests, and the scenario has %d responders: unicast reaches one", a.Name, len(s.Responders)),
			"fan-out needs multicast requests (every responder hears each one): delete request: unicast")
	}
	for _, h := range s.Responders {
		// One window per responder CPU, each as long: the round waits for all.
		if n := s.KnobsFor(a, h).Noise; (n == nil) != (a.Effective.Noise == nil) || (n != nil && *n != *a.Effective.Noise) {
			np := p + ".responders." + h + ".noise"
			if !c.x.has(np) {
				np = "defaults.responders." + h + ".noise"
			}
			c.key(np, fmt.Sprintf("arm %s: noise set for responder %s alone: the noise window runs on every responder's CPU", a.Name, h),
				"set noise: {for: D} in the arm or in defaults, not under responders:")
			return
		}
	}
}

// parseVia checks the command that reaches a host. It is split on spaces
// (no shell): rig runs it directly and appends `rig agent --stdio`.
func parseVia(v string) ([]string, error) {
	if v == "local" {
		return nil, nil
	}
	if v == "" {
		return nil, fmt.Errorf("via is empty")
	}
	if strings.ContainsAny(v, "|;&$`<>()\"'\\") {
		return nil, fmt.Errorf("via %q has shell syntax; it is run as a plain command, not through a shell", v)
	}
	f := strings.Fields(v)
	switch f[0] {
	case "ssh":
		if len(f) < 2 || strings.HasPrefix(f[len(f)-1], "-") {
			return nil, fmt.Errorf("via %q names no host to ssh to", v)
		}
	case "ip":
		// "ip netns exec NS", optionally followed by the command that
		// reaches the host from inside NS (e.g. ssh from a lab namespace).
		if len(f) < 4 || f[1] != "netns" || f[2] != "exec" {
			return nil, fmt.Errorf("via %q: want \"ip netns exec NS\" [COMMAND]", v)
		}
	case "kubectl":
		if !slices.Contains(f, "-i") && !slices.Contains(f, "--stdin") {
			return nil, fmt.Errorf("via %q lacks -i: the agent talks over stdin", v)
		}
		if f[len(f)-1] != "--" {
			return nil, fmt.Errorf("via %q must end with -- so that the agent's flags go to the agent", v)
		}
	}
	return f, nil
}

func validIfname(s string) bool {
	return s != "" && len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n")
}

func (c *checker) traffic(r *rawTraffic) Traffic {
	d := probe.DefaultSend()
	t := Traffic{Interval: d.Interval, Count: d.Count, Size: d.Size, Warmup: d.Warmup, ReplyTimeout: d.ReplyTimeout}
	if r == nil {
		c.add(c.x.errAt(pos{1, 1}, "the scenario has no traffic:", "add traffic: with at least group: \"239.1.1.1:5000\""))
		return t
	}
	// A missing group: is checked with the arms' request modes (requests).
	if r.Group != nil {
		if ap, err := parseGroup(*r.Group); err != nil {
			c.val("traffic.group", "group: "+err.Error(), "write an IPv4 multicast address and port, e.g. \"239.1.1.1:5000\"")
		} else {
			t.Group = ap
		}
	}
	t.Request = c.trafficRequest(r)
	if r.Reply != nil && *r.Reply != "unicast" {
		if ap, err := parseGroup(*r.Reply); err != nil {
			c.val("traffic.reply", "reply: "+err.Error(), "use unicast (the default) or a multicast group:port such as \"239.1.1.2:5001\"")
		} else if ap == t.Group {
			c.val("traffic.reply", "reply group equals the request group", "use a different group or port for replies, or unicast")
		} else {
			t.Reply = ap
		}
	}
	if r.Interval != nil {
		if d, ok := c.duration("traffic.interval", r.Interval); ok {
			if d < time.Microsecond || d > 10*time.Second {
				c.val("traffic.interval", fmt.Sprintf("interval %v is out of range", d), "use 1µs..10s; the seeds use 1ms")
			} else {
				t.Interval = d
			}
		}
	}
	if r.ReplyTimeout != nil {
		if d, ok := c.duration("traffic.reply-timeout", r.ReplyTimeout); ok {
			if d < time.Microsecond || d > time.Minute {
				c.val("traffic.reply-timeout", fmt.Sprintf("reply-timeout %v is out of range", d), "use 1µs..1m; a reply later than this counts as lost")
			} else {
				t.ReplyTimeout = d
			}
		}
	}
	if r.Count != nil {
		if *r.Count < 1 || *r.Count > 100_000_000 {
			c.val("traffic.count", fmt.Sprintf("count %d is out of range", *r.Count), "use 1..100000000 requests per round (default 10000)")
		} else {
			t.Count = *r.Count
		}
	}
	if r.Size != nil {
		if err := wire.CheckSize(*r.Size); err != nil {
			c.val("traffic.size", err.Error(), fmt.Sprintf("the rig header takes %d bytes; 64 is the default", wire.HeaderLen))
		} else {
			t.Size = *r.Size
		}
	}
	if r.Warmup != nil {
		if *r.Warmup < 0 {
			c.val("traffic.warmup", fmt.Sprintf("warmup %d is negative", *r.Warmup), "use 0 or more (default 2)")
		} else {
			t.Warmup = *r.Warmup
		}
	}
	if t.Warmup >= t.Count {
		p := "traffic.warmup"
		if r.Warmup == nil {
			p = "traffic.count"
		}
		c.val(p, fmt.Sprintf("warmup (%d) leaves no samples of count (%d)", t.Warmup, t.Count), "count includes the warm-up; make count larger than warmup")
	}
	return t
}

func parseGroup(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, fmt.Errorf("%q is not address:port", s)
	}
	if !ap.Addr().Is4() || !ap.Addr().IsMulticast() {
		return ap, fmt.Errorf("%s is not an IPv4 multicast address (224.0.0.0/4)", ap.Addr())
	}
	if ap.Port() == 0 {
		return ap, fmt.Errorf("port 0 in %q", s)
	}
	return ap, nil
}

// duration parses a duration written as a string ("1ms", "250us", "1µs").
// A bare number is refused: its unit would be a guess.
func (c *checker) duration(path string, v any) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok {
		c.val(path, fmt.Sprintf("%v has no unit", v), fmt.Sprintf("write a duration with its unit, e.g. %vms or %vus", v, v))
		return 0, false
	}
	d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	if err != nil {
		c.val(path, fmt.Sprintf("%q is not a duration", s), "write a number and a unit: ns, us (or µs), ms, s, e.g. 1ms or 250us")
		return 0, false
	}
	if d <= 0 {
		c.val(path, fmt.Sprintf("duration %q must be positive", s), "write a duration above zero, e.g. 1ms")
		return 0, false
	}
	return d, true
}

// cpuList accepts "0-3,8", a single number, or a YAML list of numbers.
func (c *checker) cpuList(path string, v any) ([]int, bool) {
	hint := `write a CPU list as "0-3,8" or [0, 1, 2]`
	switch x := v.(type) {
	case string:
		l, err := cpulist.Parse(x)
		if err != nil {
			c.val(path, err.Error(), hint)
			return nil, false
		}
		if len(l) == 0 {
			c.val(path, "the CPU list is empty", hint)
			return nil, false
		}
		return l, true
	case uint64, int64, int, float64:
		return c.cpuList(path, []any{x})
	case []any:
		if len(x) == 0 {
			c.val(path, "the CPU list is empty", hint)
			return nil, false
		}
		var out []int
		for i, e := range x {
			ep := fmt.Sprintf("%s[%d]", path, i)
			var n int64
			switch y := e.(type) {
			case uint64:
				if y > math.MaxInt32 {
					n = math.MaxInt64
				} else {
					n = int64(y)
				}
			case int64:
				n = y
			case int:
				n = int64(y)
			default:
				c.val(ep, fmt.Sprintf("%v is not a CPU number", e), hint)
				return nil, false
			}
			if n < 0 || n > cpulist.MaxCPU {
				c.val(ep, fmt.Sprintf("CPU %d is out of range", n), fmt.Sprintf("CPU numbers are 0..%d", cpulist.MaxCPU))
				return nil, false
			}
			out = append(out, int(n))
		}
		slices.Sort(out)
		return slices.Compact(out), true
	}
	c.val(path, "want a CPU list", hint)
	return nil, false
}

func (c *checker) u32(path string, v *int, max int, what string) *uint32 {
	if v == nil {
		return nil
	}
	if *v < 0 || *v > max {
		c.val(path, fmt.Sprintf("%s %d is out of range", what, *v), fmt.Sprintf("use 0..%d", max))
		return nil
	}
	u := uint32(*v)
	return &u
}

// ns is a NIC timeout in nanoseconds (gro_flush_timeout,
// irq_suspend_timeout): the kernel takes any non-negative value.
func (c *checker) ns(path string, v *int) *uint64 {
	if v == nil {
		return nil
	}
	if *v < 0 {
		c.val(path, fmt.Sprintf("%s %d is negative", path[strings.LastIndex(path, ".")+1:], *v), "use nanoseconds ≥ 0 (e.g. 200000; 0 turns it off)")
		return nil
	}
	u := uint64(*v)
	return &u
}

// reflector checks an arm whose responder is the XDP or tc reflector: its
// turnaround is the capture's (the program takes no stamps), which the
// emulated topology always has; there the lab readies the responder's
// switch port for driver mode (docs/probes.md#reflector-floor).
func (c *checker) reflector(p string, s *Scenario, e Knobs) {
	if e.Responder.Engine == nil || !e.Responder.Engine.Reflector() {
		return
	}
	eng := e.Responder.Engine.String()
	switch {
	case s.Emulate == "" && s.HostWith(RoleCapture) == nil:
		c.key(p+".responder.engine", fmt.Sprintf("engine %s answers in the driver and takes no stamps: the arm's turnaround comes from a capture, and no host captures", eng), "add a capture host on a mirror/SPAN port (roles: [capture])")
	case e.Responder.HasCPU() || e.Responder.Poll != nil || e.Responder.Sched != nil:
		c.key(p+".responder.engine", fmt.Sprintf("engine %s has no thread: responder cpu, poll and sched mean nothing to it", eng), "drop cpu, poll and sched from this arm's responder (or from defaults)")
	}
}

// effective checks what only makes sense once defaults are merged. The
// error points at the arm (the knob may come from defaults).
func (c *checker) effective(p string, e Knobs) {
	// With quietest the CPU is chosen on the host before each round; what
	// is about that CPU is checked on every candidate, so the candidates
	// must be listed.
	anyCPU := e.Responder.Quietest != nil && e.Responder.Quietest.CPUs == nil
	if e.SMTSibling != nil && !e.Responder.HasCPU() {
		c.key(p+".smt-sibling", "smt-sibling load needs responder.cpu: the sibling is the responder CPU's", "set responder.cpu in the arm or in defaults")
	} else if e.SMTSibling != nil && anyCPU {
		c.key(p+".smt-sibling", "smt-sibling load with responder.cpu: quietest of every CPU rig may use: the sibling cannot be checked before the run", `list the candidates, e.g. responder: {cpu: {quietest: "2-5"}}, or give responder.cpu a number`)
	}
	if e.SMT != nil && e.SMTSibling != nil {
		c.key(p+".smt", "smt fence keeps the SMT siblings idle, and smt-sibling load runs stress-ng on one: they contradict each other", "keep one: fence for a quiet core, smt-sibling for a noisy one (two arms compare them)")
	} else if e.SMT != nil && !e.Responder.HasCPU() {
		c.key(p+".smt", "smt fence needs responder.cpu: the siblings fenced are the responder CPU's", "set responder.cpu in the arm or in defaults")
	} else if e.SMT != nil && anyCPU {
		c.key(p+".smt", "smt fence with responder.cpu: quietest of every CPU rig may use: the siblings cannot be checked before the run", `list the candidates, e.g. responder: {cpu: {quietest: "2-5"}}, or give responder.cpu a number`)
	}
	if e.IRQ != nil && e.IRQ.Away && !e.Responder.HasCPU() {
		c.key(p+".irq", "irq away moves IRQs off the responder CPU, and responder.cpu is not set", "set responder.cpu in the arm or in defaults")
	}
	if st := e.Responder.Stack; st != nil && !st.Kernel() && (e.Responder.Engine == nil || *e.Responder.Engine != probe.EngineNative) {
		c.key(p+".responder.stack", fmt.Sprintf("stack %s needs engine: native: the Go engine makes its socket calls as raw system calls, which no preloaded stack sees", st), "add engine: native to responder, in the arm or in defaults")
	}
	if st := e.Sender.Stack; st != nil && !st.Kernel() && (e.Sender.Engine == nil || *e.Sender.Engine != probe.EngineNative) {
		c.valOnce(c.field(p, "sender.stack"), fmt.Sprintf("stack %s needs engine: native: the Go engine makes its socket calls as raw system calls, which no preloaded stack sees", st), "add engine: native to sender, in the arm or in defaults")
	}
	if po := e.Responder.Poll; po != nil && po.Mode > probe.Busy && (e.Responder.Engine == nil || *e.Responder.Engine != probe.EngineNative) {
		c.key(p+".responder.poll", fmt.Sprintf("poll %s needs engine: native: the Go engine waits by block, busy or busy-poll:µs", po), "add engine: native to responder, in the arm or in defaults, or use one of those")
	}
	if e.Noise != nil && !e.Responder.HasCPU() {
		c.key(p+".noise", "noise measures the responder CPU, and responder.cpu is not set", "set responder.cpu (a number or quietest) in the arm or in defaults")
	}
	if e.CState != nil && (e.CState.Disable != nil || e.CState.Poll) && !e.Responder.HasCPU() {
		c.key(p+".cstate", "cstate disable/poll acts on the responder CPU, and responder.cpu is not set", "set responder.cpu in the arm or in defaults, or use max-latency-us (all CPUs)")
	}
	if pw := e.Power; pw != nil {
		if pw.CPUs == nil && e.Responder.CPU == nil && pw.PerCPU() {
			if e.Responder.Quietest != nil {
				c.key(p+".power", "power governor/min-freq/max-freq act on the responder CPU's cpufreq policy, and responder.cpu: quietest picks that CPU only when the round starts", "set power.cpus (e.g. the quietest candidates), or give responder.cpu a number")
			} else {
				c.key(p+".power", "power governor/min-freq/max-freq act on the responder CPU's cpufreq policy, and responder.cpu is not set", "set responder.cpu, or power.cpus, in the arm or in defaults")
			}
		}
		for _, x := range []struct {
			lo, hi     *int64
			what, unit string
		}{{ptr64(pw.MinPerfPct), ptr64(pw.MaxPerfPct), "perf-pct", "%"}, {pw.MinFreqKHz, pw.MaxFreqKHz, "freq", " kHz"}} {
			if x.lo != nil && x.hi != nil && *x.lo > *x.hi {
				c.key(p+".power", fmt.Sprintf("power min-%s (%d%s) is above max-%s (%d%s)", x.what, *x.lo, x.unit, x.what, *x.hi, x.unit), fmt.Sprintf("make min-%s at most max-%s (equal holds the CPU at one value)", x.what, x.what))
			}
		}
	}
	for _, q := range e.Requires {
		if q != RequireIsolated && q != RequireNohzFull && q != RequireSMT {
			continue
		}
		if !e.Responder.HasCPU() {
			c.key(p, fmt.Sprintf("requires %s is about the responder CPU, and responder.cpu is not set", q), "set responder.cpu in the arm or in defaults")
			break
		}
		if anyCPU {
			c.key(p, fmt.Sprintf("requires %s is about the responder CPU, and responder.cpu: quietest picks it from every CPU rig may use, unknown before the run", q), `list the candidates (every one is checked), e.g. responder: {cpu: {quietest: "2-5"}}`)
			break
		}
	}
}

// crossChecks are the whole-file rules.
func (c *checker) crossChecks(s *Scenario) {
	if s.Emulate != "" {
		for i, a := range s.Arms {
			e := a.Effective
			p := fmt.Sprintf("arms[%d]", i)
			if e.ChangesNIC() {
				c.key(p, fmt.Sprintf("arm %s sets irq.cpus or nic knobs, which veth in the emulated topology does not have", a.Name), "use responder, cstate, load and irq.away knobs with emulate: netns")
			}
			if slices.Contains(e.Requires, RequireHWTimestamps) {
				c.key(p, fmt.Sprintf("arm %s requires hw-timestamps, which veth never has", a.Name), "drop the requirement or use real hosts")
			}
		}
		return
	}
	rsp := s.HostWith(RoleResponder)
	if rsp == nil || rsp.Iface != "" {
		return
	}
	for i, a := range s.Arms {
		if a.Effective.ChangesNIC() {
			c.key("hosts."+rsp.Name, fmt.Sprintf("arm %s (line %d) sets irq.cpus or nic knobs, and the responder host %s has no iface:", a.Name, c.x.m[fmt.Sprintf("arms[%d]", i)].val.line, rsp.Name), "add iface: NAME (the NIC that receives the requests) to the responder host")
			return
		}
	}
}
