package scenario

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

const unicastSrc = `name: t
hosts:
  snd: {via: local, roles: [sender], iface: eth0}
  rsp: {via: ssh rsp, roles: [responder], iface: eth1%s}
traffic:
  request: unicast
  port: 9000
arms:
  - name: base
  - name: cpu1
    responder: {cpu: 1}
`

func hostWithAddrs(addrs ...string) *StaticFacts {
	f := smallHost()
	f.Ifaces = append(f.Ifaces, "eth1")
	f.Addrs = map[string][]netip.Addr{"eth0": {netip.MustParseAddr("192.168.1.5")}}
	for _, a := range addrs {
		f.Addrs["eth1"] = append(f.Addrs["eth1"], netip.MustParseAddr(a))
	}
	return f
}

// The loader's rules for the request mode: a group where an arm sends
// multicast, a port where one sends unicast, neither where no arm uses
// it, and each error at its line and column.
func TestRequestModeLoad(t *testing.T) {
	s := load(t, strings.Replace(unicastSrc, "%s", "", 1))
	if s.Traffic.Request != RequestUnicast || s.Traffic.Port != 9000 || s.Traffic.Group.IsValid() || !s.Unicast() {
		t.Fatalf("traffic %+v", s.Traffic)
	}
	for _, a := range s.Arms {
		if a.Request != RequestUnicast {
			t.Errorf("arm %s: request %q", a.Name, a.Request)
		}
	}
	// Default: multicast; an arm may send unicast, to the group's port.
	s = load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: m\n  - name: u\n    request: unicast\n")
	if s.Traffic.Request != RequestMulticast || s.Arms[0].Request != RequestMulticast || s.Arms[1].Request != RequestUnicast || s.Traffic.Port != 5000 {
		t.Fatalf("mixed: traffic %+v arms %q %q", s.Traffic, s.Arms[0].Request, s.Arms[1].Request)
	}
	if got := s.RequestTo(s.Arms[1], netip.MustParseAddr("10.0.0.2")); got.String() != "10.0.0.2:5000" {
		t.Fatalf("RequestTo unicast arm: %v", got)
	}
	if got := s.RequestTo(s.Arms[0], netip.MustParseAddr("10.0.0.2")); got.String() != "239.1.1.1:5000" {
		t.Fatalf("RequestTo multicast arm: %v", got)
	}
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"bad mode", "traffic:\n  request: anycast\n  group: 239.1.1.1:5000\narms: [{name: a}]\n",
			[]string{"t.yaml:4:12: request: \"anycast\" is not a request mode", "use multicast"}},
		{"unicast without port", "traffic:\n  request: unicast\narms: [{name: a}]\n",
			[]string{"unicast requests need a port:", "add port: 9000"}},
		{"unicast with a group", "traffic:\n  request: unicast\n  port: 9000\n  group: 239.1.1.1:5000\narms: [{name: a}]\n",
			[]string{"t.yaml:6:10: group: is where multicast requests go, and every arm sends unicast requests", "delete group:"}},
		{"multicast with a port", "traffic:\n  group: 239.1.1.1:5000\n  port: 9000\narms: [{name: a}]\n",
			[]string{"t.yaml:5:9: port: is the UDP port of unicast requests, and every arm sends multicast", "request: unicast"}},
		{"no group", "traffic:\n  count: 10\narms: [{name: a}]\n",
			[]string{"traffic has no group:", "request: unicast with port:"}},
		{"port range", "traffic:\n  request: unicast\n  port: 70000\narms: [{name: a}]\n",
			[]string{"t.yaml:5:9: port 70000 is out of range"}},
		{"arm mode", "traffic:\n  group: 239.1.1.1:5000\narms:\n  - name: a\n    request: broadcast\n",
			[]string{"t.yaml:7:14: request: \"broadcast\" is not a request mode"}},
		{"not in defaults", "traffic:\n  group: 239.1.1.1:5000\ndefaults:\n  request: unicast\narms: [{name: a}]\n",
			[]string{"unknown field \"request\" in defaults"}},
	} {
		_, err := Parse("t.yaml", []byte("name: t\nemulate: netns\n"+c.src))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", c.name, err, w)
			}
		}
	}
	// Host options: address on the responder only, mirror on the capture.
	for _, c := range []struct {
		name, hosts, traffic string
		want                 string
	}{
		{"address on the sender", "  s: {via: local, roles: [sender], iface: eth0, address: 10.0.0.1}\n  r: {via: ssh r, roles: [responder], iface: eth1}\n",
			"{request: unicast, port: 9000}", "address: is where unicast requests go, and host s is not the responder"},
		{"address not IPv4", "  s: {via: local, roles: [sender], iface: eth0}\n  r: {via: ssh r, roles: [responder], iface: eth1, address: fe80::1}\n",
			"{request: unicast, port: 9000}", "address \"fe80::1\" is not an IPv4 address"},
		{"multicast address", "  s: {via: local, roles: [sender], iface: eth0}\n  r: {via: ssh r, roles: [responder], iface: eth1, address: 239.1.1.1}\n",
			"{request: unicast, port: 9000}", "is a multicast address"},
		{"address, multicast requests", "  s: {via: local, roles: [sender], iface: eth0}\n  r: {via: ssh r, roles: [responder], iface: eth1, address: 10.0.0.2}\n",
			"{group: 239.1.1.1:5000}", "address: is where unicast requests go, and every arm sends multicast requests"},
		{"mirror on the sender", "  s: {via: local, roles: [sender], iface: eth0, mirror: vxlan}\n  r: {via: ssh r, roles: [responder], iface: eth1}\n",
			"{group: 239.1.1.1:5000}", "mirror: says how the capture port receives its copies, and host s does not capture"},
		{"mirror kind", "  s: {via: local, roles: [sender], iface: eth0}\n  c: {via: ssh c, roles: [capture], iface: eth2, mirror: gre}\n  r: {via: ssh r, roles: [responder], iface: eth1}\n",
			"{group: 239.1.1.1:5000}", "mirror: \"gre\" is not a mirror encapsulation"},
	} {
		_, err := Parse("t.yaml", []byte("name: t\nhosts:\n"+c.hosts+"traffic: "+c.traffic+"\narms: [{name: a}]\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
	s = load(t, "name: t\nhosts:\n  s: {via: local, roles: [sender], iface: eth0}\n  c: {via: ssh c, roles: [capture], iface: eth2, mirror: vxlan}\n  r: {via: ssh r, roles: [responder], iface: eth1, address: 10.0.0.2}\ntraffic: {request: unicast, port: 9000}\narms: [{name: a}]\n")
	if s.HostWith(RoleCapture).Mirror != MirrorVXLAN || s.HostWith(RoleResponder).Address != netip.MustParseAddr("10.0.0.2") {
		t.Fatalf("host options: %+v", s.Hosts)
	}
}

// Validation resolves the unicast destination from the responder's facts,
// or refuses with file:line:col when its iface has no address or several
// and the file does not choose.
func TestUnicastResolved(t *testing.T) {
	s := load(t, strings.Replace(unicastSrc, "%s", "", 1))
	if err := Validate(s, factsFor(s, hostWithAddrs("10.0.1.20"))); err != nil {
		t.Fatal(err)
	}
	if s.RequestAddr != netip.MustParseAddr("10.0.1.20") {
		t.Fatalf("resolved %v", s.RequestAddr)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "traffic: requests unicast to 10.0.1.20:9000, reply unicast") {
		t.Errorf("dry run:\n%s", out.String())
	}

	var list ErrorList
	err := Validate(s, factsFor(s, hostWithAddrs()))
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "t.yaml:6:12: unicast requests go to the responder's address on eth1, and eth1 on host rsp has no IPv4 address") ||
		!strings.Contains(err.Error(), "ip addr add ADDR/LEN dev eth1") || s.RequestAddr.IsValid() {
		t.Fatalf("no address: %v", err)
	}
	err = Validate(s, factsFor(s, hostWithAddrs("10.0.1.20", "10.0.1.21")))
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "has several (10.0.1.20, 10.0.1.21): rig does not guess") ||
		!strings.Contains(err.Error(), "add address: 10.0.1.20 to hosts.rsp") {
		t.Fatalf("several: %v", err)
	}
	s = load(t, strings.Replace(unicastSrc, "%s", ", address: 10.0.1.21", 1))
	if err := Validate(s, factsFor(s, hostWithAddrs("10.0.1.20", "10.0.1.21"))); err != nil || s.RequestAddr != netip.MustParseAddr("10.0.1.21") {
		t.Fatalf("address: chosen: %v %v", err, s.RequestAddr)
	}
	err = Validate(s, factsFor(s, hostWithAddrs("10.0.1.20")))
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "t.yaml:4:65: address 10.0.1.21 is not on eth1 of host rsp (its IPv4 addresses: 10.0.1.20)") {
		t.Fatalf("address: elsewhere: %v", err)
	}
	// An arm asking for unicast is where the error points.
	s = load(t, "name: t\nhosts:\n  snd: {via: local, roles: [sender], iface: eth0}\n  rsp: {via: ssh rsp, roles: [responder], iface: eth1}\ntraffic: {group: 239.1.1.1:9000}\narms:\n  - name: m\n  - name: u\n    request: unicast\n")
	if err := Validate(s, factsFor(s, hostWithAddrs())); err == nil || !strings.Contains(err.Error(), "t.yaml:9:14: unicast requests go") {
		t.Fatalf("arm's request: %v", err)
	}
	// Facts that cannot say (a fake host root) leave it to the run, and
	// the dry run says so.
	s = load(t, strings.Replace(unicastSrc, "%s", "", 1))
	fake := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c7i"})
	fake.Ifaces = append(fake.Ifaces, "eth1") // a fake host root that also has eth1
	if err := Validate(s, map[string]*facts.Facts{"snd": hostWithAddrs().facts(), "rsp": fake}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "requests unicast to the responder's address on eth1, port 9000 (not checked here: resolved from the responder's agent when the run starts)") {
		t.Errorf("dry run with unreadable addresses:\n%s", out.String())
	}
}

// A multicast arm beside a unicast one: the dry run names each arm's
// requests.
func TestDryRunMixedRequests(t *testing.T) {
	s := load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: m\n  - name: u\n    request: unicast\n")
	if err := Validate(s, factsFor(s, smallHost())); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"traffic: requests per arm: multicast 239.1.1.1:5000 or unicast to the responder's address on its iface, port 5000 (the emulated responder's veth address, known when the lab is built)",
		"  m (baseline)\n    requests: multicast 239.1.1.1:5000\n",
		"  u\n    requests: unicast to the responder's address on its iface, port 5000\n",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("dry run lacks %q:\n%s", w, out.String())
		}
	}
}

// UnicastAddr is what the runner asks the responder's agent.
func TestUnicastAddr(t *testing.T) {
	f := hostWithAddrs("10.0.1.20").facts()
	if a, err := UnicastAddr(f, "rsp", "eth1", netip.Addr{}); err != nil || a.String() != "10.0.1.20" {
		t.Fatalf("%v %v", a, err)
	}
	var ue *UnicastError
	if _, err := UnicastAddr(f, "rsp", "eth1", netip.MustParseAddr("10.0.1.9")); !errors.As(err, &ue) || ue.Fix() != "write one of 10.0.1.20 in address:, or delete it" {
		t.Fatalf("%v", err)
	}
	if _, err := UnicastAddr(f, "rsp", "eth9", netip.Addr{}); err == nil || errors.As(err, &ue) {
		t.Fatalf("unknown interface: %v", err)
	}
}
