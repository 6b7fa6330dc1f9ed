package netlab

import (
	"errors"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/testbin"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"rig", "a", "0", "lab-2", "abcdefghij", "t-x9z01"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want ok", ok, err)
		}
	}
	for _, bad := range []string{"", "-rig", "Rig", "rig_1", "rig.1", "rig/x", "../x", "abcdefghijk", "ri g", "rïg", "rig\x00"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
		}
	}
}

func TestNamesFitIFNAMSIZ(t *testing.T) {
	name := strings.Repeat("z", MaxNameLen)
	all := Namespaces(name)
	if len(all) != len(Roles)+MaxResponders-1 || all[0] != name+"-snd" || all[3] != name+"-sw" || all[len(all)-1] != NetnsName(name, ResponderRole(MaxResponders-1)) {
		t.Errorf("Namespaces = %v", all)
	}
	// Every lab's namespaces are among those Namespaces lists (what
	// removal by name deletes); the largest lab has them all.
	for _, n := range []int{1, 2, MaxResponders} {
		topo := plan(name, Options{Subnet: DefaultSubnet(name), Responders: n})
		names := []string{topo.Switch.Bridge}
		for _, h := range append([]*Host{&topo.Sender, &topo.Capture}, topo.ResponderHosts()...) {
			names = append(names, h.Interface, h.Port)
		}
		if len(topo.ResponderHosts()) != n {
			t.Fatalf("a lab of %d responders has %d", n, len(topo.ResponderHosts()))
		}
		seen := map[string]bool{}
		for _, x := range names {
			if len(x) > 15 {
				t.Errorf("interface name %q is %d bytes, the kernel allows 15", x, len(x))
			}
			if seen[x] {
				t.Errorf("interface name %q used twice", x)
			}
			seen[x] = true
		}
		got := topo.Namespaces()
		if len(got) != len(Roles)+n-1 {
			t.Errorf("%d responders: Topology.Namespaces %v", n, got)
		}
		for _, ns := range got {
			if !slices.Contains(all, ns) {
				t.Errorf("%d responders: namespace %s is not in Namespaces %v", n, ns, all)
			}
		}
	}
}

func TestUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		n := UniqueName("t")
		if err := ValidateName(n); err != nil {
			t.Fatalf("UniqueName gave invalid %q: %v", n, err)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	if n := UniqueName("abcd"); len(n) != MaxNameLen {
		t.Errorf("UniqueName(abcd) = %q, want %d characters", n, MaxNameLen)
	}
	for _, bad := range []string{"abcde", "", "-x", "X"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("UniqueName(%q) did not panic", bad)
				}
			}()
			UniqueName(bad)
		}()
	}
}

func TestOptionsNormalize(t *testing.T) {
	o, err := Options{}.normalize("rig")
	if err != nil {
		t.Fatal(err)
	}
	if o.RxQueues != 1 || o.TxQueues != 1 || o.MTU != DefaultMTU || o.Subnet != DefaultSubnet("rig") {
		t.Errorf("defaults: %+v", o)
	}
	o, err = Options{RxQueues: 4}.normalize("rig")
	if err != nil || o.TxQueues != 4 {
		t.Errorf("TxQueues follows RxQueues: %+v, %v", o, err)
	}
	for _, bad := range []Options{
		{RxQueues: -1}, {RxQueues: MaxQueues + 1}, {TxQueues: -2}, {MTU: 67}, {MTU: 70000},
		{Subnet: netip.MustParsePrefix("fd00::/64")},
		{Subnet: netip.MustParsePrefix("10.1.2.3/24")}, // host bits
		{Subnet: netip.MustParsePrefix("10.1.2.0/31")}, // no room for .1 and .2
		{Subnet: netip.MustParsePrefix("10.0.0.0/7")},
	} {
		if _, err := bad.normalize("rig"); err == nil {
			t.Errorf("normalize(%+v) = nil error", bad)
		}
	}
}

func TestDefaultSubnetAndAddresses(t *testing.T) {
	a, b := DefaultSubnet("rig"), DefaultSubnet("rig2")
	if a != DefaultSubnet("rig") {
		t.Error("DefaultSubnet is not stable")
	}
	if a == b {
		t.Errorf("DefaultSubnet(rig) == DefaultSubnet(rig2) == %v; the hash should tell them apart", a)
	}
	if !netip.MustParsePrefix("10.99.0.0/16").Overlaps(a) || a.Bits() != 24 {
		t.Errorf("DefaultSubnet(rig) = %v, want a /24 in 10.99.0.0/16", a)
	}
	topo := plan("rig", Options{Subnet: netip.MustParsePrefix("192.168.50.0/24")})
	if topo.Sender.Addr.String() != "192.168.50.1" || topo.Responder.Addr.String() != "192.168.50.2" || topo.Capture.Addr.IsValid() {
		t.Errorf("addresses %v %v %v", topo.Sender.Addr, topo.Responder.Addr, topo.Capture.Addr)
	}
}

func TestRolesAndExec(t *testing.T) {
	topo := plan("rig", Options{Subnet: DefaultSubnet("rig")})
	if got := topo.Exec(Responder); !slices.Equal(got, []string{"ip", "netns", "exec", "rig-rsp"}) {
		t.Errorf("Exec(Responder) = %v", got)
	}
	if got := topo.Exec(Switch); !slices.Equal(got, []string{"ip", "netns", "exec", "rig-sw"}) {
		t.Errorf("Exec(Switch) = %v", got)
	}
	if got := topo.Exec(Role("nope")); got != nil {
		t.Errorf("Exec(unknown) = %v, want nil", got)
	}
	if _, err := topo.Host(Switch); err == nil {
		t.Error("Host(Switch) = nil error")
	}
}

// sample is a complete description as Up would produce it.
func sample() *Topology {
	t := plan("rig", Options{Subnet: netip.MustParsePrefix("10.99.7.0/24")})
	t.MTU, t.RxQueues, t.TxQueues, t.StaticNeighbors = 1500, 4, 4, true
	for i, h := range []*Host{&t.Sender, &t.Responder, &t.Capture} {
		h.Ifindex, h.PortIfindex = 2, 3+i
		h.MAC = []string{"02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"}[i]
	}
	t.Switch.BridgeIfindex = 2
	t.CreatedAt = time.Date(2026, 12, 2, 16, 0, 0, 123, time.UTC)
	return t
}

func TestDescriptionRoundTrip(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	want := sample()
	if err := want.save(); err != nil {
		t.Fatal(err)
	}
	got, err := Load("rig")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, *want) {
		t.Errorf("Load = %+v\nwant   %+v", got, want)
	}
	b, _ := os.ReadFile(Path("rig"))
	for _, field := range []string{`"netns": "rig-rsp"`, `"addr": "10.99.7.2"`, `"rx_queues": 4`, `"switch_port": "rig-pcap"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("stored description lacks %s:\n%s", field, b)
		}
	}
	if strings.Contains(string(b), `"addr": ""`) {
		t.Errorf("capture host should omit its empty address:\n%s", b)
	}
	if entries, _ := os.ReadDir(Dir()); len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want just rig.json (no temp files)", len(entries))
	}
	if _, err := Load("other"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(other) = %v, want os.ErrNotExist", err)
	}
	if _, err := Load("Bad"); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(Bad) = %v, want a name error", err)
	}
	// A description stored under the wrong name is refused.
	if err := os.Rename(Path("rig"), filepath.Join(Dir(), "rig2.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("rig2"); err == nil {
		t.Error("Load(rig2) of a file describing rig = nil error")
	}
}

func TestParseTopologyRejects(t *testing.T) {
	good, err := sample().MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseTopology(good); err != nil {
		t.Fatalf("good description: %v", err)
	}
	for name, edit := range map[string]func(string) string{
		"unknown field":  func(s string) string { return strings.Replace(s, `"mtu"`, `"mtu2": 1, "mtu"`, 1) },
		"format":         func(s string) string { return strings.Replace(s, `"format": 1`, `"format": 2`, 1) },
		"netns name":     func(s string) string { return strings.Replace(s, `"netns": "rig-rsp"`, `"netns": "eth0"`, 1) },
		"host address":   func(s string) string { return strings.Replace(s, `"10.99.7.2"`, `"10.99.7.9"`, 1) },
		"no ifindex":     func(s string) string { return strings.Replace(s, `"ifindex": 2`, `"ifindex": 0`, 1) },
		"bad mac":        func(s string) string { return strings.Replace(s, `02:00:00:00:00:02`, `zz`, 1) },
		"queues":         func(s string) string { return strings.Replace(s, `"rx_queues": 4`, `"rx_queues": 0`, 1) },
		"trailing":       func(s string) string { return s + "{}" },
		"not json":       func(s string) string { return s[:len(s)/2] },
		"bridge renamed": func(s string) string { return strings.Replace(s, `"bridge": "rig-br"`, `"bridge": "br0"`, 1) },
		"capture address": func(s string) string {
			return strings.Replace(s, `"role": "capture",`, `"role": "capture", "addr": "10.99.7.3",`, 1)
		},
	} {
		in := edit(string(good))
		if in == string(good) {
			t.Fatalf("%s: edit did not apply", name)
		}
		if _, err := ParseTopology([]byte(in)); err == nil {
			t.Errorf("%s: ParseTopology accepted\n%s", name, in)
		}
	}
}

func FuzzParseTopology(f *testing.F) {
	good, _ := sample().MarshalIndent()
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":1,"name":"rig"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		topo, err := ParseTopology(b)
		if err != nil {
			return
		}
		// Whatever parses must survive a round trip unchanged and name
		// only namespaces derived from a valid lab name.
		out, err := topo.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseTopology(out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		if !again.CreatedAt.Equal(topo.CreatedAt) {
			t.Fatalf("created_at changed: %v -> %v", topo.CreatedAt, again.CreatedAt)
		}
		again.CreatedAt = topo.CreatedAt
		if !reflect.DeepEqual(*again, *topo) {
			t.Fatalf("round trip changed the description:\n%+v\n%+v", topo, again)
		}
		for _, ns := range topo.Namespaces() {
			if !strings.HasPrefix(ns, topo.Name+"-") || ValidateName(topo.Name) != nil {
				t.Fatalf("namespace %q from lab %q", ns, topo.Name)
			}
		}
	})
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"rig", "-x", "abcdefghijk", "a/b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateName(s) != nil {
			return
		}
		if len(s) > MaxNameLen || strings.ContainsAny(s, "/. \x00") || s[0] == '-' {
			t.Fatalf("ValidateName accepted %q", s)
		}
		for _, n := range []string{s + "-psnd", s + "-br"} {
			if len(n) > 15 {
				t.Fatalf("name %q gives interface %q over 15 bytes", s, n)
			}
		}
	})
}

// TestListAndStale: List finds every description; a lab whose owner no
// longer runs is stale, one whose owner runs is not, one built by hand
// (no owner) never is; RemoveStale removes only the stale one.
func TestListAndStale(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	self := owner.Self()
	dead := self
	dead.Start++ // the same pid started at another time: a recycled pid
	for name, o := range map[string]*owner.Process{"byhand": nil, "live": &self, "dead": &dead} {
		l := sample()
		l.Owner = o
		for _, h := range []*Host{&l.Sender, &l.Responder, &l.Capture} {
			h.Netns = NetnsName(name, h.Role)
		}
		l.Name, l.Switch.Netns = name, NetnsName(name, Switch)
		l.Sender.Interface, l.Responder.Interface, l.Capture.Interface = name+"-snd", name+"-rsp", name+"-cap"
		l.Sender.Port, l.Responder.Port, l.Capture.Port, l.Switch.Bridge = name+"-psnd", name+"-prsp", name+"-pcap", name+"-br"
		if err := l.save(); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(Dir(), "broken.json"), []byte("{"), 0o644)
	// Owners killed while building: the record of the build is all there is.
	writeBuilding("half", dead)
	writeBuilding("busy", self)
	// What a write killed before its rename leaves: hidden, not a lab, and
	// removed with its lab.
	os.WriteFile(filepath.Join(Dir(), ".half.json.tmp123"), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(Dir(), ".live.json.tmp456"), []byte("{"), 0o644)
	labs, err := List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range labs {
		if l.Topology == nil && l.Building == nil {
			if l.Name != "broken" || l.Err == nil {
				t.Errorf("%s: unreadable: %v", l.Name, l.Err)
			}
			continue
		}
		got[l.Name] = l.Stale()
	}
	if want := map[string]bool{"byhand": false, "live": false, "dead": true, "half": true, "busy": false}; !maps.Equal(got, want) {
		t.Errorf("stale: %v, want %v", got, want)
	}
	testbin.Integration(t)
	removed, err := RemoveStale()
	if err != nil || len(removed) != 2 || removed[0].Name != "dead" || removed[1].Name != "half" {
		t.Fatalf("RemoveStale: %+v, %v", removed, err)
	}
	for _, gone := range []string{Path("dead"), buildingPath("half"), filepath.Join(Dir(), ".half.json.tmp123")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("stale %s left: %v", gone, err)
		}
	}
	for _, keep := range []string{Path("byhand"), Path("live"), buildingPath("busy"), filepath.Join(Dir(), ".live.json.tmp456")} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
}
