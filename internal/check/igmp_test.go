package check

import (
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostinfo"
)

// net.igmp warns on an EC2 instance (DMI) where the requests are multicast
// and the kernel speaks IGMPv3, passes once force_igmp_version is 2, and
// does not apply to unicast requests or to a host that is not EC2.
func TestIGMPOnEC2(t *testing.T) {
	v2 := copyTree(t, "c7i")
	write(t, v2, "/proc/sys/net/ipv4/conf/ens6/force_igmp_version", "2\n")
	v1 := copyTree(t, "c8g")
	write(t, v1, "/proc/sys/net/ipv4/conf/all/force_igmp_version", "1\n")
	for _, c := range []struct {
		name      string
		o         Options
		tree      string
		sev       Severity
		observed  []string
		fix       []string
		customDir bool
	}{
		{"c7i v3", Options{Iface: "ens6", Multicast: true}, "c7i", Warn,
			[]string{"Amazon EC2 c7i.2xlarge, multicast requests on ens6", "IGMPv3 in force", "Transit Gateway multicast domain"},
			[]string{"sysctl -w net.ipv4.conf.ens6.force_igmp_version=2", "/etc/sysctl.d/90-rig-igmp.conf", "IP protocol 2", "security groups", "network ACLs", "traffic.request: unicast", "docs/aws.md"}, false},
		{"c8g v3", Options{Iface: "ens5", Multicast: true}, "c8g", Warn, []string{"Amazon EC2 c8g.2xlarge", "IGMPv3"}, []string{"net.ipv4.conf.ens5.force_igmp_version=2"}, false},
		{"c7i v2", Options{Iface: "ens6", Multicast: true}, "", OK, []string{"IGMPv2 (net.ipv4.conf.ens6.force_igmp_version=2)", "asymmetric"}, nil, true},
		{"unicast", Options{Iface: "ens6"}, "c7i", Skip, []string{"not multicast", "--multicast"}, nil, false},
		{"no iface", Options{Multicast: true}, "c7i", Skip, []string{"no --iface"}, nil, false},
		{"not EC2", Options{Iface: "eth0", Multicast: true}, "vm", Skip, []string{"not an Amazon EC2 instance"}, nil, false},
	} {
		h := fx(c.tree)
		if c.customDir {
			h = v2
		}
		c.o.CPU = 1
		res := run(t, h, c.o).Get("net.igmp")
		if res == nil || res.Severity != c.sev {
			t.Errorf("%s: %+v, want %v", c.name, res, c.sev)
			continue
		}
		for _, w := range c.observed {
			if !strings.Contains(res.Observed, w) {
				t.Errorf("%s: observed lacks %q: %s", c.name, w, res.Observed)
			}
		}
		for _, w := range c.fix {
			if !strings.Contains(res.Fix, w) {
				t.Errorf("%s: fix lacks %q: %s", c.name, w, res.Fix)
			}
		}
	}
	// all=1 forces IGMPv1 whatever the interface says.
	if v, forced, err := hostinfo.IGMPVersion(v1, "ens5"); err != nil || v != 1 || forced != "net.ipv4.conf.all.force_igmp_version=1" {
		t.Errorf("all=1: %d %q %v", v, forced, err)
	}
}
