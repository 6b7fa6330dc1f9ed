package check

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/tstamp"
)

// unreadable replaces file p below h by a directory: reading it fails
// with an error other than "does not exist" (EISDIR), as a masked or
// permission-denied file does.
func unreadable(t *testing.T, h hostfs.FS, p string) {
	t.Helper()
	if err := os.RemoveAll(h.Path(p)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.Path(p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, h hostfs.FS, p string) {
	t.Helper()
	if err := os.RemoveAll(h.Path(p)); err != nil {
		t.Fatal(err)
	}
}

// Every check whose input is missing or unreadable says "cannot tell"
// (a warning naming what it could not read, and how to give access),
// never ok: each row takes a tree where the check can pass, takes its
// input away, and looks at that check.
func TestCannotTellIsNeverOK(t *testing.T) {
	const cpuDir = "/sys/devices/system/cpu"
	swOnly := fakeTS{ti: tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware, PHCIndex: -1}}
	for _, c := range []struct {
		id, tree string
		cpu      int
		o        Options
		take     func(*testing.T, hostfs.FS)
		could    Severity
		names    string // what the result says could not be read
	}{
		{"cpu.allowed", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/self/status") }, Fail, "Cpus_allowed_list"},
		{"isolcpus", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, cpuDir+"/isolated") }, Warn, "isolated CPUs"},
		{"isolcpus", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/cmdline") }, Warn, "kernel command line"},
		{"nohz_full", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, cpuDir+"/nohz_full") }, Warn, "nohz_full"},
		{"rcu_nocbs", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) {
			remove(t, h, "/proc/cmdline")
			unreadable(t, h, cpuDir+"/nohz_full")
		}, Warn, "kernel command line"},
		{"irqs.on_cpu", "isolated", 6, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/interrupts") }, Warn, "/proc/interrupts"},
		{"irqs.on_cpu", "isolated", 6, Options{}, func(t *testing.T, h hostfs.FS) {
			for _, n := range []string{"0", "8", "9", "120", "121", "122", "130", "131", "140"} {
				unreadable(t, h, "/proc/irq/"+n+"/smp_affinity_list")
			}
		}, Warn, "affinity of IRQ"},
		{"irqbalance", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, "/proc/2/comm") }, Warn, "node's processes"},
		{"irqbalance", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/2") }, Warn, "PID namespace of its own"},
		{"cpu.busy", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/stat") }, Warn, "/proc/stat"},
		{"smt.sibling", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, cpuDir+"/cpu2/topology") }, Warn, "topology of CPU 2"},
		{"governor", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, cpuDir+"/cpu2/cpufreq/scaling_governor") }, Warn, "cpufreq"},
		{"turbo", "isolated", 2, Options{}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, cpuDir+"/intel_pstate/no_turbo") }, Warn, "turbo"},
		{"cstates", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, cpuDir+"/cpu1/cpuidle") }, Warn, "idle states of CPU 1"},
		{"clocksource", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) {
			unreadable(t, h, "/sys/devices/system/clocksource/clocksource0/current_clocksource")
		}, Warn, "clocksource"},
		{"thp", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, "/sys/kernel/mm/transparent_hugepage/enabled") }, Warn, "THP"},
		{"sched.rt", "vm", 1, Options{}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/proc/sys/kernel/sched_rt_runtime_us") }, Warn, "RT bandwidth"},
		{"nic.hwts", "vm", 1, Options{Iface: "x0"}, nil, Warn, "timestamping capability"},
		{"nic.ptp4l", "vm", 1, Options{Iface: "x0"}, func(t *testing.T, h hostfs.FS) {
			remove(t, h, "/proc")
			write(t, h, "/proc", "")
		}, Warn, "/proc"},
		{"net.igmp", "c7i", 3, Options{Iface: "ens5", Multicast: true}, func(t *testing.T, h hostfs.FS) {
			unreadable(t, h, "/proc/sys/net/ipv4/conf/ens5/force_igmp_version")
		}, Warn, "IGMP version"},
		{"net.igmp", "c7i", 3, Options{Iface: "ens5", Multicast: true}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, "/sys/class/dmi/id/sys_vendor") }, Warn, "DMI"},
		{"nic.numa", "numa2", 5, Options{Iface: "ens1"}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, "/sys/class/net/ens1/device/numa_node") }, Warn, "NUMA node of ens1"},
		{"nic.numa", "numa2", 5, Options{Iface: "ens2"}, nil, Warn, "which of the 2 NUMA nodes ens2 is on"},
		{"nic.numa", "numa2", 5, Options{Iface: "ens1"}, func(t *testing.T, h hostfs.FS) { remove(t, h, cpuDir+"/cpu5/node1") }, Warn, "NUMA node of CPU 5"},
		{"nic.ena.express", "c7i", 3, Options{Iface: "ens5"}, nil, Warn, "ena_srd_mode"},
		{"cgroup.cpu_max", "eks-al2-shared", 2, Options{Getenv: pod(burstable)}, func(t *testing.T, h hostfs.FS) {
			remove(t, h, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us")
		}, Fail, "cpu.cfs_quota_us"},
		{"cgroup.cpu_max", "k8spod-shared", 2, Options{Getenv: pod(burstable)}, func(t *testing.T, h hostfs.FS) { remove(t, h, "/sys/fs/cgroup/cpu.max") }, Fail, "cpu.max"},
		{"cgroup.cpu_max", "k8spod-shared", 2, Options{Getenv: pod(burstable)}, func(t *testing.T, h hostfs.FS) { unreadable(t, h, "/proc/self/mountinfo") }, Fail, "mountinfo"},
		{"cgroup.throttled", "eks-al2-shared", 2, Options{Getenv: pod(burstable)}, func(t *testing.T, h hostfs.FS) {
			remove(t, h, "/sys/fs/cgroup/cpu,cpuacct/cpu.stat")
		}, Warn, "cpu.stat"},
		{"cgroup.cpuset", "k8spod-shared", 2, Options{Getenv: k8s}, nil, Warn, "RIG_CPU_REQUEST"},
		{"cgroup.cpuset", "eks-al2-shared", 2, Options{Getenv: pod(burstable)}, func(t *testing.T, h hostfs.FS) {
			remove(t, h, "/sys/fs/cgroup/cpuset/cpuset.effective_cpus")
		}, Warn, "cpuset.effective_cpus"},
		{"cgroup.whole_cores", "eks-al2-pinned", 1, Options{Getenv: pod(guaranteed2)}, func(t *testing.T, h hostfs.FS) { remove(t, h, cpuDir+"/cpu5/topology") }, Warn, "topology"},
	} {
		h := copyTree(t, c.tree)
		if c.take != nil {
			c.take(t, h)
		}
		o := c.o
		o.CPU = c.cpu
		switch c.id {
		case "nic.hwts":
			o.NIC = withTS(h, fakeTS{err: errors.New("netlink: operation not permitted")})
		case "nic.ptp4l":
			o.NIC = withTS(h, swOnly)
		case "nic.ena.express":
			o.NIC = enaEnv(h, "2.15.0g", ethtoolnl.Rings{}, nil)
			o.NIC.Stats = func(string) (map[string]uint64, error) { return nil, errors.New("ethtool -S: operation not permitted") }
			o.NIC.TS = swOnly
		}
		r := run(t, h, o)
		g := r.Get(c.id)
		if g == nil || g.Severity != Warn || g.Untold != c.could || !strings.HasPrefix(g.Observed, "cannot ") || !strings.Contains(g.Observed, c.names) || g.Fix == "" {
			t.Errorf("%s on %s without its input: %+v, want a cannot-tell warning (could be %s) naming %q and how to give access", c.id, c.tree, g, c.could, c.names)
		}
		if c.could == Fail && r.Passed() {
			t.Errorf("%s on %s: require-check would pass an unread check that can FAIL", c.id, c.tree)
		}
	}
}
