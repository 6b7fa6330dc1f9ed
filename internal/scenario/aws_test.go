package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

const singleENI = `name: single-eni
hosts:
  h: {via: local, roles: [sender, responder], iface: eth0%s}
traffic:
  group: 239.1.1.1:5000
arms:
  - name: base
  - name: irq-local
    responder: {cpu: 1}
    irq: {cpus: [1]}
  - name: no-moderation
    nic: {coalesce: {rx-usecs: 0}}
`

// An arm that changes the interface carrying the default route is refused
// up front (dry-run) unless the host says allow-mgmt: true.
func TestMgmtInterfaceRefused(t *testing.T) {
	f := smallHost()
	f.Mgmt = []string{"eth0"}
	s := load(t, strings.Replace(singleENI, "%s", "", 1))
	var list ErrorList
	if err := Validate(s, factsFor(s, f)); !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("want two errors (irq and nic arms), got %v", err)
	}
	for i, where := range []string{"t.yaml:10:10", "t.yaml:12:10"} {
		msg := list[i].Error()
		for _, want := range []string{where, "eth0 on host h carries the default route", "allow-mgmt: true to hosts.h", "second interface"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %d lacks %q:\n%s", i, want, msg)
			}
		}
	}
	s = load(t, strings.Replace(singleENI, "%s", ", allow-mgmt: true", 1))
	if !s.Hosts[0].AllowMgmt {
		t.Fatal("allow-mgmt not loaded")
	}
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatalf("allow-mgmt: true: %v", err)
	}
	// Another interface, or no irq/nic knob: nothing to refuse.
	f.Mgmt = []string{"eth1"}
	s = load(t, strings.Replace(singleENI, "%s", "", 1))
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatalf("eth0 is not the management interface: %v", err)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(singleENI, "%s", ", allow-mgmt: yes please", 1))); err == nil || !strings.Contains(err.Error(), "allow-mgmt") {
		t.Fatalf("a non-bool allow-mgmt: %v", err)
	}
}

// LocalFacts reads the default route of a fake c8g (single ENI: ens5).
func TestLocalFactsMgmt(t *testing.T) {
	mg, err := LocalFacts{FS: hostfs.FS{Root: "../hostinfo/testdata/c8g"}}.MgmtInterfaces()
	if err != nil || len(mg) != 1 || mg[0] != "ens5" {
		t.Fatalf("mgmt %v %v", mg, err)
	}
}
