package check

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

// fx is a fixture host tree, read in place.
var fx = hostfstest.Fixture

func copyTree(t *testing.T, name string) hostfs.FS {
	t.Helper()
	return hostfs.FS{Root: hostfstest.CopyTree(t, filepath.Join("../hostinfo/testdata", name))}
}

func write(t *testing.T, h hostfs.FS, p, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path(p), []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeTS is a NIC's timestamping surface: its capabilities (or the
// error ETHTOOL_GET_TS_INFO gives), a config SIOCGHWTSTAMP cannot read.
type fakeTS struct {
	ti  tstamp.Caps
	err error
}

func (f fakeTS) TSInfo(name string) (tstamp.Caps, error) {
	c := f.ti
	c.Ifname = name
	return c, f.err
}
func (f fakeTS) GetHWTstamp(string) (tstamp.HWTstampConfig, error) {
	return tstamp.HWTstampConfig{}, unix.EOPNOTSUPP
}
func (f fakeTS) SetHWTstamp(string, *tstamp.HWTstampConfig) error { return unix.EOPNOTSUPP }

var hwAll = tstamp.Caps{SOF: tstamp.FlagTxHardware | tstamp.FlagRxHardware | tstamp.FlagRawHardware,
	TxTypes: 3, RxFilters: 1<<0 | 1<<1, PHCIndex: 0}

// withTS gives the checks a NIC whose timestamping is ts.
func withTS(h hostfs.FS, ts fakeTS) *facts.NIC { return &facts.NIC{FS: h, TS: ts} }

func k8s(k string) string {
	if k == "KUBERNETES_SERVICE_HOST" {
		return "10.96.0.1"
	}
	return ""
}

func run(t *testing.T, h hostfs.FS, o Options) *Report {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Sleep == nil {
		o.Sleep = func(time.Duration) {}
	}
	r, err := Run(context.Background(), h, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func expect(t *testing.T, r *Report, want map[string]Severity) {
	t.Helper()
	for id, sev := range want {
		got := r.Get(id)
		if got == nil {
			t.Errorf("no check %s", id)
			continue
		}
		if got.Severity != sev {
			t.Errorf("%s = %s (%s), want %s", id, got.Severity, got.Observed, sev)
		}
		if got.Severity >= Warn && got.Fix == "" && !strings.HasPrefix(got.Observed, "cannot") {
			t.Errorf("%s is %s without a fix", id, got.Severity)
		}
	}
}

func TestIsolatedHost(t *testing.T) {
	r := run(t, fx("isolated"), Options{CPU: 2})
	expect(t, r, map[string]Severity{
		"cpu.online": OK, "cpu.allowed": OK, "isolcpus": OK, "nohz_full": OK, "rcu_nocbs": OK,
		"irqs.on_cpu": Warn, "irqbalance": OK, "cpu.busy": OK, "smt.sibling": OK, "governor": OK, "turbo": OK,
		"cstates": Warn, "clocksource": OK, "thp": OK, "nic.hwts": Skip, "cgroup.cpu_max": OK, "cgroup.throttled": OK,
		"cgroup.cpuset": Skip, "cgroup.whole_cores": Skip, "sched.rt": OK,
	})
	irq := r.Get("irqs.on_cpu")
	if !strings.Contains(irq.Observed, "121 mlx5_comp0") || !strings.Contains(irq.Fix, "echo 0,4 > /proc/irq/$i/smp_affinity_list") {
		t.Fatalf("irq check must name IRQ 121 and move it to irqaffinity= CPUs: %+v", irq)
	}
	if c := r.Get("cstates"); !strings.Contains(c.Observed, "C1E") || strings.Contains(c.Observed, "C6") || !strings.Contains(c.Fix, "cpu2/cpuidle/state2/disable") {
		t.Fatalf("C6 is disabled, C1E is not: %+v", c)
	}
	if r.ExitCode() != ExitWarn || r.Siblings[0] != 6 {
		t.Fatalf("exit %d siblings %v", r.ExitCode(), r.Siblings)
	}
	// CPU 3 is neither isolated nor nohz_full and no IRQ targets it.
	r = run(t, fx("isolated"), Options{CPU: 3})
	expect(t, r, map[string]Severity{"isolcpus": Warn, "nohz_full": Warn, "rcu_nocbs": Warn, "irqs.on_cpu": OK})
	if !strings.Contains(r.Get("isolcpus").Fix, "isolcpus=domain,managed_irq,3,7 nohz_full=3,7 rcu_nocbs=3,7 irqaffinity=0,4") {
		t.Fatal(r.Get("isolcpus").Fix)
	}
	// Auto choice: first isolated CPU.
	if r := run(t, fx("isolated"), Options{CPU: -1}); r.CPU != 2 || r.CPUChoice == "" {
		t.Fatalf("auto CPU %d", r.CPU)
	}
	expect(t, run(t, fx("isolated"), Options{CPU: 9}), map[string]Severity{"cpu.online": Fail, "cpu.allowed": Fail})
}

func TestBusyCPUAndSibling(t *testing.T) {
	h := copyTree(t, "isolated")
	sleep := func(time.Duration) {
		// 50 of 100 ticks busy on CPU 2 and 90 of 100 on its sibling 6.
		b, _ := os.ReadFile(h.Path("/proc/stat"))
		s := strings.Replace(string(b), "cpu2 90000 0 45000 10000 0 0 9000", "cpu2 90050 0 45000 10050 0 0 9000", 1)
		s = strings.Replace(s, "cpu6 200 0 100 99800 0 0 20", "cpu6 290 0 100 99810 0 0 20", 1)
		write(t, h, "/proc/stat", s)
	}
	r := run(t, h, Options{CPU: 2, Sleep: sleep})
	expect(t, r, map[string]Severity{"cpu.busy": Warn, "smt.sibling": Warn})
	if !strings.Contains(r.Get("cpu.busy").Observed, "50% busy") || !strings.Contains(r.Get("cpu.busy").Observed, "rig-responder[4250]") {
		t.Fatal(r.Get("cpu.busy").Observed)
	}
	if !strings.Contains(r.Get("smt.sibling").Observed, "90% busy") {
		t.Fatal(r.Get("smt.sibling").Observed)
	}
}

// cpu.busy names what runs on the CPU but not rig itself (its own reads
// run there), takes the run time of every task from /proc/schedstat when
// the kernel has it, and says when /proc shows one PID namespace only.
func TestBusyNamesOthers(t *testing.T) {
	h := copyTree(t, "isolated")
	me := strconv.Itoa(os.Getpid())
	write(t, h, "/proc/"+me+"/task/"+me+"/stat", me+" (rig) R"+strings.Repeat(" 0", 35)+" 2 0\n")
	write(t, h, "/proc/self/status", "Name:\trig\nCpus_allowed_list:\t0-7\n")
	if err := os.RemoveAll(h.Path("/proc/2")); err != nil { // a pod's /proc: no kthreadd
		t.Fatal(err)
	}
	rq := func(ns uint64) string {
		return fmt.Sprintf("version 17\ntimestamp 1\ncpu2 0 0 5 1 5 5 %d 0 5\ndomain0 SMT 00000044 0 0 0\ncpu6 0 0 0 0 0 0 0 0 0\n", ns)
	}
	write(t, h, "/proc/schedstat", rq(0))
	// 200 ms of the 250 ms window on CPU 2 in rq_cpu_time; /proc/stat's
	// ticks, coarser, say 50 %.
	r := run(t, h, Options{CPU: 2, Sleep: func(time.Duration) {
		write(t, h, "/proc/schedstat", rq(200_000_000))
		b, _ := os.ReadFile(h.Path("/proc/stat"))
		write(t, h, "/proc/stat", strings.Replace(string(b), "cpu2 90000 0 45000 10000", "cpu2 90050 0 45000 10050", 1))
	}})
	o := r.Get("cpu.busy").Observed
	if !strings.Contains(o, "80% busy over 250ms before the run (/proc/schedstat rq_cpu_time)") {
		t.Errorf("not rq_cpu_time: %s", o)
	}
	if !strings.Contains(o, "rig-responder[4250]") || strings.Contains(o, "rig["+me+"]") {
		t.Errorf("names: %s", o)
	}
	if !strings.Contains(o, "only this PID namespace") || !strings.Contains(o, "hostPID: true") {
		t.Errorf("no word on the PID namespace: %s", o)
	}
}

func TestIRQBalanceHost(t *testing.T) {
	o := Options{CPU: 1, Iface: "enp3s0", NIC: withTS(fx("irqbalance"), fakeTS{ti: hwAll})}
	r := run(t, fx("irqbalance"), o)
	expect(t, r, map[string]Severity{
		"irqbalance": Warn, "governor": Warn, "turbo": Warn, "cstates": Warn, "clocksource": Warn, "thp": Warn, "sched.rt": Warn,
		"nohz_full": Warn, "irqs.on_cpu": Warn, "smt.sibling": OK, "nic.hwts": OK, "nic.phc": OK, "nic.ptp4l": Warn,
	})
	for id, want := range map[string]string{
		"irqbalance":  "IRQBALANCE_BANNED_CPULIST=1 in /etc/default/irqbalance",
		"governor":    "echo performance > /sys/devices/system/cpu/cpu1/cpufreq/scaling_governor (or tuned-adm profile network-latency); for one arm of a scenario: power: {governor: performance}",
		"turbo":       "echo 0 > /sys/devices/system/cpu/cpufreq/boost; for one arm of a scenario: power: {turbo: off}",
		"clocksource": "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource",
		"thp":         "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
		"sched.rt":    "sysctl -w kernel.sched_rt_runtime_us=-1 for SCHED_FIFO busy-poll arms",
		"cstates":     "echo 1 > /sys/devices/system/cpu/cpu1/cpuidle/state3/disable",
	} {
		if !strings.Contains(r.Get(id).Fix, want) {
			t.Errorf("%s fix %q lacks %q", id, r.Get(id).Fix, want)
		}
	}
	if strings.Contains(r.Get("nohz_full").Observed, "no nohz_full support") {
		t.Error("' (null)' means supported but unused")
	}
	// irqbalance told to keep off CPU 1; ptp4l on another interface.
	h := copyTree(t, "irqbalance")
	write(t, h, "/proc/812/environ", "IRQBALANCE_BANNED_CPULIST=1\x00")
	o.Iface = "eth9"
	expect(t, run(t, h, o), map[string]Severity{"irqbalance": OK, "nic.ptp4l": OK})
}

func TestNICCapabilities(t *testing.T) {
	sw := tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware, PHCIndex: -1}
	rxOnly := hwAll
	rxOnly.SOF &^= tstamp.FlagTxHardware
	rxOnly.TxTypes = 1 << tstamp.TxOff
	ptpOnly := hwAll
	ptpOnly.RxFilters = 1 << 12
	for name, c := range map[string]struct {
		ts       fakeTS
		hwts     Severity
		phc      Severity
		contains string
	}{
		"hw":         {fakeTS{ti: hwAll}, OK, OK, "RX and TX"},
		"sw":         {fakeTS{ti: sw}, Warn, Warn, "software timestamps only"},
		"rx only":    {fakeTS{ti: rxOnly}, Warn, OK, "no HW TX"},
		"ptp only":   {fakeTS{ti: ptpOnly}, Warn, OK, "FILTER_ALL"},
		"no dev":     {fakeTS{err: unix.ENODEV}, Fail, Skip, "does not exist"},
		"eopnotsupp": {fakeTS{err: unix.EOPNOTSUPP}, Warn, Skip, "EOPNOTSUPP"},
	} {
		r := run(t, fx("vm"), Options{CPU: 1, Iface: "x0", NIC: withTS(fx("vm"), c.ts)})
		if g := r.Get("nic.hwts"); g.Severity != c.hwts || !strings.Contains(g.Observed, c.contains) {
			t.Errorf("%s: %+v", name, g)
		}
		if g := r.Get("nic.phc"); (g == nil && c.phc != Skip) || (g != nil && g.Severity != c.phc) {
			t.Errorf("%s: phc %+v", name, g)
		}
	}
}

// TestNICSoftwareTX: the check says whether the driver stamps TX in
// software at the hand-off (veth, mlx5 from 6.16) or rig falls back to the
// qdisc's stamp (mlx5 before 6.16).
func TestNICSoftwareTX(t *testing.T) {
	for _, tt := range []struct {
		p    *nicfake.Profile
		sev  Severity
		word string
	}{{nicfake.MLX5(), OK, "hand-off"}, {nicfake.MLX5Pre616(), Warn, "labelled sched"}, {nicfake.Veth(), OK, "hand-off"}} {
		r := run(t, fx("vm"), Options{CPU: 1, Iface: "x0", NIC: &facts.NIC{FS: fx("vm"), TS: nicfake.New(tt.p, "x0")}})
		expect(t, r, map[string]Severity{"nic.txsw": tt.sev})
		if g := r.Get("nic.txsw"); g != nil && !strings.Contains(g.Observed, tt.word) {
			t.Errorf("%s: %q does not say %q", tt.p.Name, g.Observed, tt.word)
		}
	}
}

func TestRealVMTree(t *testing.T) {
	r := run(t, fx("vm"), Options{CPU: 1})
	expect(t, r, map[string]Severity{"governor": Skip, "turbo": Skip, "cstates": OK, "clocksource": OK, "nohz_full": Warn,
		"isolcpus": Warn, "smt.sibling": OK, "cgroup.cpu_max": OK})
	if !strings.Contains(r.Get("nohz_full").Observed, "no nohz_full support") {
		t.Fatal(r.Get("nohz_full").Observed)
	}
	// No states are believed when the driver says so; a driver with
	// states that cannot be read is "cannot tell".
	h := copyTree(t, "vm")
	if err := os.RemoveAll(h.Path("/sys/devices/system/cpu/cpu1/cpuidle")); err != nil {
		t.Fatal(err)
	}
	if c := run(t, h, Options{CPU: 1}).Get("cstates"); c.Severity != Warn || c.Untold != Warn || !strings.Contains(c.Observed, "whose cpuidle driver is haltpoll") {
		t.Fatal(c)
	}
	write(t, h, "/sys/devices/system/cpu/cpuidle/current_driver", "none\n")
	if c := run(t, h, Options{CPU: 1}).Get("cstates"); c.Severity != OK || !strings.Contains(c.Observed, "no cpuidle") {
		t.Fatal(c)
	}
}

// A thread of rig outside its pod's cpuset (another process wrote its ID
// into a cgroup v1 tasks file) is named, not hidden in the union of the
// threads' lists; threads that pinned themselves inside it are fine.
func TestThreadOutsideCpuset(t *testing.T) {
	h := copyTree(t, "k8spod") // cpuset 2-3
	write(t, h, "/proc/self/task/10/status", "Cpus_allowed_list:\t2\n")
	write(t, h, "/proc/self/task/11/status", "Cpus_allowed_list:\t2-3\n")
	if a := run(t, h, Options{CPU: 2, Getenv: pod(guaranteed2)}).Get("cpu.allowed"); a.Severity != OK {
		t.Fatalf("threads inside the cpuset: %+v", a)
	}
	write(t, h, "/proc/self/task/12/status", "Cpus_allowed_list:\t0-3\n")
	a := run(t, h, Options{CPU: 2, Getenv: pod(guaranteed2)}).Get("cpu.allowed")
	if a.Severity != Warn || !strings.Contains(a.Observed, "(allowed: 0-3), but thread 12 (allowed: 0-3) may run outside its cgroup's cpuset 2-3") || a.Fix == "" {
		t.Fatalf("a thread outside the cpuset: %+v", a)
	}
}

func TestKubernetesPod(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: pod(guaranteed2)})
	expect(t, r, map[string]Severity{"cgroup.cpu_max": Fail, "cgroup.throttled": Warn, "cgroup.cpuset": OK, "cgroup.whole_cores": Warn, "cpu.allowed": OK})
	if r.ExitCode() != ExitFail {
		t.Fatalf("exit %d", r.ExitCode())
	}
	if !strings.Contains(r.Get("cgroup.cpu_max").Fix, "DisableCPUQuotaWithExclusiveCPUs") || !strings.Contains(r.Get("cgroup.whole_cores").Fix, "full-pcpus-only") {
		t.Fatal(r.Get("cgroup.cpu_max").Fix, r.Get("cgroup.whole_cores").Fix)
	}
	if !strings.Contains(r.Get("cgroup.whole_cores").Observed, "2 (sibling 6)") {
		t.Fatal(r.Get("cgroup.whole_cores").Observed)
	}
	expect(t, run(t, fx("k8spod"), Options{CPU: 0, Getenv: pod(guaranteed2)}), map[string]Severity{"cgroup.cpuset": Fail, "cpu.allowed": Fail})
	// A fixed pod: no quota, no throttling, whole cores 2,6; and a pod in
	// the shared pool.
	h := copyTree(t, "k8spod")
	write(t, h, "/sys/fs/cgroup/cpu.max", "max 100000\n")
	write(t, h, "/sys/fs/cgroup/cpu.stat", "nr_periods 10\nnr_throttled 0\nthrottled_usec 0\n")
	write(t, h, "/sys/fs/cgroup/cpuset.cpus.effective", "2,6\n")
	write(t, h, "/proc/self/status", "Cpus_allowed_list:\t2,6\n")
	expect(t, run(t, h, Options{CPU: 2, Getenv: pod(guaranteed2)}), map[string]Severity{"cgroup.cpu_max": OK, "cgroup.throttled": OK, "cgroup.whole_cores": OK})
	write(t, h, "/sys/fs/cgroup/cpuset.cpus.effective", "0-7\n")
	expect(t, run(t, h, Options{CPU: 2, Getenv: pod(guaranteed2)}), map[string]Severity{"cgroup.cpuset": Warn})
}

func TestOutput(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: k8s})
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "FAIL  cgroup.cpu_max") || !strings.Contains(out, "fix: ") || !strings.HasSuffix(out, "worst: FAIL (exit 4)\n") {
		t.Fatal(out)
	}
	j, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(j), `"severity":"FAIL"`) || !strings.Contains(string(j), `"worst":"FAIL"`) {
		t.Fatal(string(j), err)
	}
	if (&Report{Worst: OK}).ExitCode() != 0 || (&Report{Worst: Skip}).ExitCode() != 0 {
		t.Fatal("ok/skip must exit 0")
	}
}

// With no CPU named, rig check picks one rig may run on: in a pod (the
// k8spod tree: cpuset 2-3 of 0-7) the last of the pod's CPUs, not the
// node's last, which cpu.allowed would FAIL; an isolated CPU of those
// first; on a host whose cpuset is every CPU, the choice as before.
func TestDefaultCPU(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: -1, Getenv: k8s})
	if r.CPU != 3 || r.CPUChoice != "last CPU rig may use (2-3); choose with --cpu" || r.Get("cpu.allowed").Severity != OK {
		t.Errorf("pod: CPU %d (%s), cpu.allowed %+v", r.CPU, r.CPUChoice, r.Get("cpu.allowed"))
	}
	if r := run(t, fx("vm"), Options{CPU: -1}); r.CPU != 1 || r.CPUChoice != "last online CPU; choose with --cpu" {
		t.Errorf("vm: CPU %d (%s)", r.CPU, r.CPUChoice)
	}
	if r := run(t, fx("isolated"), Options{CPU: -1}); r.CPU != 2 || r.CPUChoice != "first isolated CPU; choose with --cpu" {
		t.Errorf("isolated: CPU %d (%s)", r.CPU, r.CPUChoice)
	}
	h := copyTree(t, "isolated")
	write(t, h, "/proc/self/status", "Cpus_allowed_list:\t5-7\n")
	if r := run(t, h, Options{CPU: -1}); r.CPU != 6 || r.CPUChoice != "first isolated CPU rig may use (5-7); choose with --cpu" {
		t.Errorf("isolated, cpuset 5-7: CPU %d (%s)", r.CPU, r.CPUChoice)
	}
	h = copyTree(t, "vm")
	write(t, h, "/proc/self/status", "Name:\trig\n")
	if r := run(t, h, Options{CPU: -1}); r.CPU != 1 || !strings.Contains(r.CPUChoice, "the CPUs rig may use are unknown") {
		t.Errorf("vm, no Cpus_allowed_list: CPU %d (%s)", r.CPU, r.CPUChoice)
	}
}

// TestOwnerUnknownInPod: in a pod without the host's PID namespace (the
// k8spod tree: PID 1 is the probe, no kthreadd) the owner of the NIC's
// config cannot be looked for; the check says so and how to fix it.
func TestOwnerUnknownInPod(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: 2, Iface: "eth0", NIC: withTS(fx("k8spod"), fakeTS{ti: hwAll})})
	expect(t, r, map[string]Severity{"nic.ptp4l": Warn})
	if g := r.Get("nic.ptp4l"); !strings.HasPrefix(g.Observed, "cannot tell") || !strings.Contains(g.Observed, "PID 1 is responder") || !strings.Contains(g.Fix, "hostPID: true") {
		t.Errorf("%+v", g)
	}
	if owner, err := facts.TimestampOwner(fx("k8spod"), "eth0"); err != nil || !strings.HasPrefix(owner, tstamp.OwnerUnknown+" (no host PID namespace") {
		t.Errorf("owner %q, %v", owner, err)
	}
}

// TestExaNICBypassOnly: an ExaNIC port in bypass-only mode fails the
// check (the kernel gets no traffic there), one in kernel mode passes, and
// a driver without that flag has no such line.
func TestExaNICBypassOnly(t *testing.T) {
	n := nicfake.New(nicfake.ExaNIC(), "exa0")
	check := func(ts tstamp.Device) *Result {
		return run(t, fx("vm"), Options{CPU: 1, Iface: "exa0", NIC: &facts.NIC{FS: fx("vm"), TS: ts}}).Get("nic.bypass")
	}
	if g := check(n); g == nil || g.Severity != OK {
		t.Fatalf("kernel mode: %+v", g)
	}
	n.SetPrivFlag(facts.PrivBypassOnly, true)
	if g := check(n); g == nil || g.Severity != Fail || !strings.Contains(g.Fix, "ethtool --set-priv-flags exa0 bypass_only off") {
		t.Fatalf("bypass-only: %+v", g)
	}
	if g := check(nicfake.New(nicfake.MLX5(), "exa0")); g != nil {
		t.Fatalf("mlx5 has no bypass_only: %+v", g)
	}
}

// nic.numa: ok when the responder CPU is on its NIC's node, a warning
// naming the node's CPUs when not; a single-node host whose NIC has no
// node is fine.
func TestNICNUMA(t *testing.T) {
	for _, c := range []struct {
		tree, iface string
		cpu         int
		sev         Severity
		says        string
	}{
		{"numa2", "ens1", 5, OK, "CPU 5 and ens1 are on NUMA node 1"},
		{"numa2", "ens1", 1, Warn, "CPU 1 is on NUMA node 0, ens1 on node 1"},
		{"c7i", "ens5", 3, OK, "no NUMA information for ens5"},
		{"numa2", "nosuch0", 1, Skip, "does not exist"},
	} {
		r := run(t, fx(c.tree), Options{CPU: c.cpu, Iface: c.iface, NIC: withTS(fx(c.tree), fakeTS{ti: hwAll})})
		g := r.Get("nic.numa")
		if g == nil || g.Severity != c.sev || !strings.Contains(g.Observed, c.says) {
			t.Errorf("%s %s CPU %d: %+v, want %s saying %q", c.tree, c.iface, c.cpu, g, c.sev, c.says)
		}
		if c.sev == Warn && !strings.Contains(g.Fix, "node 1 (CPUs 4-7)") {
			t.Errorf("fix %q does not name node 1's CPUs", g.Fix)
		}
	}
	if g := run(t, fx("numa2"), Options{CPU: 1}).Get("nic.numa"); g == nil || g.Severity != Skip {
		t.Errorf("no --iface: %+v", g)
	}
}
