package scenario

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/tstamp"
)

// ec2Host is an EC2 instance's facts: its /proc and /sys from a fixture
// tree (c7i or c8g), plus what a tree cannot hold: the ENIs' IPv4
// addresses (RTM_GETADDR), their timestamping as ETHTOOL_GET_TS_INFO
// reports it, and stress-ng installed.
func ec2Host(t *testing.T, fs hostfs.FS, addrs map[string][]netip.Addr, nic tstamp.NICState) *facts.Facts {
	f := treeWithStressNG(t, fs)
	f.Addrs = map[string][]netip.Addr{}
	f.TimestampingErr = nil
	for _, i := range f.Ifaces {
		f.Addrs[i] = addrs[i]
		st := nic
		st.Ifname, st.Caps.Ifname = i, i
		st.Mgmt = slices.Contains(f.MgmtIfaces, i)
		f.Timestamping[i] = st
	}
	return f
}

var (
	// amzn-drivers 2.15 on a c7i: RX hardware stamps offered (filters
	// NONE and ALL), no TX ones, PHC off, stamping off.
	enaOutOfTree = tstamp.NICState{Caps: tstamp.Caps{SOF: tstamp.FlagRxHardware | tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware,
		PHCIndex: -1, TxTypes: 1 << tstamp.TxOff, RxFilters: 1<<tstamp.FilterNone | 1<<tstamp.FilterAll}, ConfigKnown: true}
	// The in-tree driver on a c8g: software stamps only, no config to read.
	enaInTree = tstamp.NICState{Caps: tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware, PHCIndex: -1},
		ConfigErr: "SIOCGHWTSTAMP: EOPNOTSUPP"}
)

// prepared copies a fixture tree and sets it up as docs/aws.md does: a
// second ENI (ens6, in its own subnet) where the tree has none, routed as
// amazon-ec2-net-utils routes it (its DHCP routes in the main table with
// metric 513, a default route among them), and, when cpus is not empty,
// the kernel command line that isolates them.
func prepared(t *testing.T, tree, cpus string) hostfs.FS {
	t.Helper()
	dst := hostfstest.CopyTree(t, filepath.Join("../hostinfo/testdata", tree))
	h := hostfs.FS{Root: dst}
	files := map[string]string{}
	if !h.Exists("/sys/class/net/ens6") {
		// aws ec2 attach-network-interface --device-index 1: PCI 00:06.0.
		dev := "/sys/devices/pci0000:00/0000:00:06.0/net/ens6"
		files[dev+"/operstate"], files[dev+"/mtu"] = "up", "9001"
		route, _ := h.ReadString("/proc/net/route")
		files["/proc/net/route"] = route + "\nens6\t00000000\t0110200A\t0003\t0\t0\t513\t00000000\t0\t0\t0" +
			"\nens6\t0010200A\t00000000\t0001\t0\t0\t513\t00F0FFFF\t0\t0\t0"
		if err := os.MkdirAll(filepath.Join(dst, dev), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../devices/pci0000:00/0000:00:06.0/net/ens6", filepath.Join(dst, "/sys/class/net/ens6")); err != nil {
			t.Fatal(err)
		}
	}
	if cpus != "" {
		cmdline, _ := h.ReadString("/proc/cmdline")
		files["/proc/cmdline"] = cmdline + " isolcpus=domain,managed_irq," + cpus + " nohz_full=" + cpus + " rcu_nocbs=" + cpus
		files["/sys/devices/system/cpu/isolated"] = cpus
		files["/sys/devices/system/cpu/nohz_full"] = cpus
	}
	for p, v := range files {
		if err := os.WriteFile(filepath.Join(dst, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// Both AWS scenarios against fake c7i and c8g pairs built from the
// fixture trees, on AL2023 and on Ubuntu (both give the second ENI a
// default route of higher metric: it is not the management interface):
// as the instances come (the arms that need an isolated CPU skipped, each
// with its reason) and booted as docs/aws.md says (every arm runs). The dry run resolves the unicast destination to the responder's
// second ENI, plans software stamps for ENA's probes (no TX hardware
// stamps: nothing is switched on), and prints each arm's changes.
func TestAWSScenariosDryRun(t *testing.T) {
	const inTreeStamps = "snd ens6 (RX ALL + TX ON): software: ens6 cannot give rig's probes RX ALL + TX ON in hardware (RX: no hardware RX stamps; TX: no hardware TX stamps"
	addrs := func(ens6 string) map[string][]netip.Addr {
		return map[string][]netip.Addr{"ens5": {netip.MustParseAddr("10.32.0.10")}, "ens6": {netip.MustParseAddr(ens6)}}
	}
	for _, c := range []struct {
		file, tree, isolate string
		nic                 tstamp.NICState
		arms                int
		stamps              string
		want                []string // in the booted dry run
	}{
		{"aws-c7i.yaml", "c7i", "3,7", enaOutOfTree, 9,
			"snd ens6 (RX ALL + TX ON): software: ens6 cannot give rig's probes RX ALL + TX ON in hardware (TX: no hardware TX stamps",
			[]string{"IRQs of ens6 queues → CPUs 3 (", "coalescing: ethtool -C ens6 adaptive-rx off rx-usecs 0", "smt-sibling load: stress-ng --cpu 1 --cpu-method fft on CPU 7 (sibling of 3)",
				"C-states on CPU 3: disable C1E, C6", "cpu3/cpuidle/state2 (C1E): disable 0 → 1", "load: stress-ng --cpu 6 --cpu-method fft (--taskset 0-2,4-6)"}},
		{"aws-c8g.yaml", "c8g", "3", enaInTree, 7, inTreeStamps,
			[]string{"IRQs of ens6 queues → CPUs 3 (", "coalescing: ethtool -C ens6 adaptive-rx off rx-usecs 0", "load: stress-ng --cpu 7 --cpu-method fft (--taskset 0-2,4-7)"}},
		{"aws-c7i.yaml", "c7i-ubuntu", "3,7", enaInTree, 9, inTreeStamps,
			[]string{"IRQs of ens6 queues → CPUs 3 (", "C-states on CPU 3: disable C1E, C6", "load: stress-ng --cpu 6 --cpu-method fft (--taskset 0-2,4-6)"}},
		{"aws-c8g.yaml", "c8g-ubuntu", "3", enaInTree, 7, inTreeStamps,
			[]string{"IRQs of ens6 queues → CPUs 3 (", "coalescing: ethtool -C ens6 adaptive-rx off rx-usecs 0", "load: stress-ng --cpu 7 --cpu-method fft (--taskset 0-2,4-7)"}},
	} {
		t.Run(c.file+"/"+c.tree, func(t *testing.T) {
			s, err := Load("../../scenarios/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Arms) != c.arms || !s.Unicast() || s.Timestamps != TimestampsAuto || s.HostWith(RoleCapture) != nil {
				t.Fatalf("%d arms, unicast %v, timestamps %s", len(s.Arms), s.Unicast(), s.Timestamps)
			}
			for _, a := range s.Arms {
				if strings.HasPrefix(c.tree, "c8g") && (a.Effective.SMTSibling != nil || a.Effective.CState != nil) {
					t.Errorf("arm %s: c8g has no SMT and no C-state control", a.Name)
				}
			}
			launched, boot := prepared(t, c.tree, ""), prepared(t, c.tree, c.isolate)
			dry := func(root hostfs.FS) string {
				facts := map[string]*facts.Facts{
					"snd": ec2Host(t, launched, addrs("10.32.16.10"), c.nic),
					"rsp": ec2Host(t, root, addrs("10.32.16.20"), c.nic),
				}
				if err := Validate(s, facts); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{Local: &root, Timestamping: s.TimestampPlans(facts)}); err != nil {
					t.Fatal(err)
				}
				return out.String()
			}
			for _, w := range []string{"traffic: requests unicast to 10.32.16.20:9000, reply unicast", c.stamps, "rsp ens6 (RX ALL + TX ON): software:"} {
				for _, root := range []hostfs.FS{launched, boot} {
					if out := dry(root); !strings.Contains(out, w) {
						t.Errorf("dry run (%s) lacks %q:\n%s", root.Root, w, out)
					}
				}
			}
			// Launched with the second ENI, not yet rebooted: no isolated
			// CPU, the arms that need one skipped with the reason; the
			// others run.
			out := dry(launched)
			p := s.Plan()
			if len(p.Arms) != 2 || p.Arms[0].Name != "shared" || p.Arms[1].Name != "shared-stress" {
				t.Errorf("as booted, runs %d arms: %v", len(p.Arms), p.Arms)
			}
			for _, a := range p.Skipped {
				if !strings.Contains(out, "  "+a.Name+": CPU 3 is not isolated (isolated: none)") {
					t.Errorf("as booted: arm %s skipped without the reason:\n%s", a.Name, out)
				}
			}
			if strings.Contains(out, "write:") || strings.Contains(out, "journaled once for the run") {
				t.Errorf("the dry run plans a change of ENA's timestamping:\n%s", out)
			}
			// Booted as the runbook says: every arm runs.
			out = dry(boot)
			if p := s.Plan(); len(p.Skipped) != 0 || len(p.Arms) != c.arms {
				t.Errorf("booted: runs %d, skips %v", len(p.Arms), p.Skipped)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("booted dry run lacks %q:\n%s", w, out)
				}
			}
			t.Log("\n" + out)
		})
	}
	// On a single-ENI instance (the c8g tree as launched) the scenario
	// names the missing second ENI before anything runs.
	s, err := Load("../../scenarios/aws-c8g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	one := ec2Host(t, hostfs.FS{Root: "../hostinfo/testdata/c8g"}, addrs("10.32.16.20"), enaInTree)
	line := 0 // of the responder's iface: ens6, the last one in the file
	for i, l := range strings.Split(string(s.Source), "\n") {
		if l == "    iface: ens6" {
			line = i + 1
		}
	}
	want := fmt.Sprintf("aws-c8g.yaml:%d:12: interface ens6 does not exist on host rsp", line)
	if err := Validate(s, map[string]*facts.Facts{"snd": one, "rsp": one}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `did you mean "ens5"?`) {
		t.Fatalf("single ENI: %v", err)
	}
}
