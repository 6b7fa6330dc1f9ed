package nicctl

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

// On EC2 with a second ENI both distributions put a default route through
// it in the main table — cloud-init on Ubuntu with route-metric 200,
// amazon-ec2-net-utils on AL2023 with metric 513 — besides its policy
// table. Only the lowest-metric one (ens5) is the management interface;
// ens6 has a default route and can be changed.
func TestMgmtEC2Trees(t *testing.T) {
	for _, tree := range []string{"c7i", "c7i-ubuntu", "c8g-ubuntu", "c8g"} {
		fs := hostfs.FS{Root: "../internal/hostinfo/testdata/" + tree}
		m, err := ReadMgmt(fs)
		if err != nil || !slices.Equal(m.Ifaces(), []string{"ens5"}) {
			t.Errorf("%s: management %v %v, want [ens5]", tree, m.Ifaces(), err)
		}
		if tree == "c8g" {
			continue
		}
		if !m.HasDefault("ens6") || !strings.HasPrefix(m.Why["ens5"], "carries the default route (IPv4, metric ") {
			t.Errorf("%s: %+v", tree, m)
		}
		ctx := context.Background()
		j, err := journal.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// The guard lets ens6 through (the plan then needs CPUs, not the route)...
		if _, err := Set(ctx, &Env{FS: fs}, j, "ens6", Settings{IRQCPUs: []int{99}}); err == nil || strings.Contains(err.Error(), "management") {
			t.Errorf("%s: ens6: %v", tree, err)
		}
		// ...and refuses ens5, saying why.
		if _, err := Set(ctx, &Env{FS: fs}, j, "ens5", Settings{IRQCPUs: []int{1}}); err == nil ||
			!strings.Contains(err.Error(), "ens5 carries the default route (IPv4, metric ") || !strings.Contains(err.Error(), "--allow-mgmt") {
			t.Errorf("%s: ens5: %v", tree, err)
		}
		j.Close()
		in, err := Show(ctx, newEnv(fs, &fakeEthtool{}), "ens6")
		if err != nil || in.Mgmt != "" || !in.DefaultRoute || len(in.IRQs) != 9 {
			t.Errorf("%s: show ens6: mgmt %q default route %v, %d IRQs (%v)", tree, in.Mgmt, in.DefaultRoute, len(in.IRQs), err)
		}
	}
}

// Per address family, the lowest metric wins; /proc/net/ipv6_route lists
// every table, so the copies amazon-ec2-net-utils puts in table 10001
// (metric 1024) are there too. Devices above and below a management
// interface are guarded with it; a sibling bridge port and unrelated
// stacks are not.
func TestMgmtFamiliesAndStacks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"br0\t00000000\t0100200A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"+
		"ens7\t00000000\t0110200A\t0003\t0\t0\t200\t00000000\t0\t0\t0\n", 0o444)
	zero := strings.Repeat("0", 32)
	gw := "fe80000000000000000000fffe000001"
	write(t, root, "/proc/net/ipv6_route",
		zero+" 00 "+zero+" 00 "+gw+" 00000200 00000001 00000000 00450003     ens8\n"+
			zero+" 00 "+zero+" 00 "+gw+" 00000400 00000001 00000000 00450003     ens7\n"+
			zero+" 00 "+zero+" 00 "+zero+" ffffffff 00000001 00000000 00200200       lo\n"+
			"fe800000000000000000000000000000 40 "+zero+" 00 "+zero+" 00000100 00000001 00000000 00000001     ens9\n", 0o444)
	for _, l := range []struct{ upper, lower string }{{"br0", "ens5"}, {"br0", "veth1"}, {"mv0", "br0"}, {"ens7.100", "ens7"}, {"ens5.42", "ens5"}} {
		write(t, root, "/sys/class/net/"+l.upper+"/lower_"+l.lower+"/ifindex", "1\n", 0o444)
	}
	for _, i := range []string{"ens5", "ens7", "ens8", "ens9", "veth1"} {
		write(t, root, "/sys/class/net/"+i+"/operstate", "up\n", 0o444)
	}
	m, err := ReadMgmt(hostfs.FS{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Ifaces(); !slices.Equal(got, []string{"br0", "ens5", "ens5.42", "ens8", "mv0", "veth1"}) {
		t.Fatalf("management %v (%v)", got, m.Why)
	}
	for i, w := range map[string]string{
		"br0":     "carries the default route (IPv4, metric 100)",
		"ens8":    "carries the default route (IPv6, metric 512)",
		"ens5":    "is below br0, which carries the default route (IPv4, metric 100)",
		"mv0":     "is stacked on br0, which carries",
		"ens5.42": "is stacked on ens5, which is below br0",
	} {
		if !strings.HasPrefix(m.Why[i], w) {
			t.Errorf("%s: %q, want %q", i, m.Why[i], w)
		}
	}
	if !m.HasDefault("ens7") || m.HasDefault("ens9") || m.HasDefault("lo") {
		t.Errorf("default routes %+v", m.Default)
	}
}

// sudo starts `rig agent` without $SSH_CONNECTION: it is found in the
// environment of the nearest ancestor that has it.
func TestSSHConnFromAncestors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/proc/self/status", "Name:\trig\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t300\nNgid:\t0\nPid:\t300\nPPid:\t200\n", 0o444)
	write(t, root, "/proc/200/status", "Name:\tsudo\nPid:\t200\nPPid:\t100\n", 0o444)
	write(t, root, "/proc/200/environ", "PATH=/usr/sbin\x00SUDO_USER=ec2-user\x00", 0o444)
	write(t, root, "/proc/100/status", "Name:\tbash\nPid:\t100\nPPid:\t1\n", 0o444)
	write(t, root, "/proc/100/environ", "USER=ec2-user\x00SSH_CONNECTION=10.32.0.5 51234 10.32.0.10 22\x00SSH_CLIENT=10.32.0.5 51234 22\x00", 0o444)
	write(t, root, "/proc/1/status", "Name:\tsystemd\nPid:\t1\nPPid:\t0\n", 0o444)
	fs := hostfs.FS{Root: root}
	none := func(string) string { return "" }
	peer, local, ok := sshConn(fs, none)
	if !ok || peer != netip.MustParseAddr("10.32.0.5") || local != netip.MustParseAddr("10.32.0.10") {
		t.Fatalf("%v %v %v", peer, local, ok)
	}
	if peer, _, ok := sshConn(fs, func(string) string { return "2001:db8::5 40000 2001:db8::10 22" }); !ok || peer != netip.MustParseAddr("2001:db8::5") {
		t.Fatalf("own environment: %v %v", peer, ok)
	}
	write(t, root, "/proc/100/environ", "USER=root\x00", 0o444)
	if _, _, ok := sshConn(fs, none); ok {
		t.Fatal("found a connection where no ancestor has one")
	}
}

// On the live host the interface of the ssh connection is a management
// interface: here a connection over loopback (lo holds the address and
// routes to the peer). A connection whose local address is not in this
// network namespace names nothing.
func TestMgmtSSHConnection(t *testing.T) {
	if got := connIfaces(netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1")); !slices.Equal(got, []string{"lo"}) {
		t.Fatalf("loopback connection: %v", got)
	}
	if got := connIfaces(netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.7")); got != nil {
		t.Fatalf("a foreign local address: %v", got)
	}
	t.Setenv("SSH_CONNECTION", "127.0.0.1 5555 127.0.0.1 22")
	m, err := ReadMgmt(hostfs.Default())
	if err != nil {
		t.Skipf("no route table here: %v", err)
	}
	if w := m.Why["lo"]; w != "carries the ssh connection rig runs under (from 127.0.0.1)" {
		t.Fatalf("lo: %q (%v)", w, m.Why)
	}
}
