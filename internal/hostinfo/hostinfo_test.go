package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/rundir"
)

// fx is a fixture host tree, read in place.
var fx = hostfstest.Fixture

var trees = []string{"vm", "isolated", "irqbalance", "k8spod", "eks-al2-pinned", "c7i", "c8g", "c7i-ubuntu", "c8g-ubuntu"}

func TestInterruptsRealVM(t *testing.T) {
	tab, err := ReadInterrupts(fx("vm"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tab.CPUs, []int{0, 1}) {
		t.Fatalf("CPUs = %v", tab.CPUs)
	}
	r := tab.Row("41")
	if r == nil || r.Name != "virtio3-rx" || r.IRQ < 0 {
		t.Fatalf("row 41 = %+v", r)
	}
	if r.Desc != "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx" {
		t.Fatalf("desc %q", r.Desc)
	}
	loc := tab.Row("LOC")
	if loc == nil || loc.Name != "Local timer interrupts" || loc.IRQ >= 0 || loc.Counts[0] == 0 {
		t.Fatalf("LOC = %+v", loc)
	}
	// ERR has a single column; the second must be zero-padded, not shifted.
	if e := tab.Row("ERR"); e == nil || len(e.Counts) != 2 || e.Desc != "" {
		t.Fatalf("ERR = %+v", e)
	}
	if r := tab.Row("24"); r.Name != "ACPI:Ged" {
		t.Fatalf("24 name %q", r.Name)
	}
}

func TestInterruptsNames(t *testing.T) {
	tab, err := ReadInterrupts(fx("isolated"))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"121": "mlx5_comp0@pci:0000:3b:00.0", "140": "i801_smbus, ehci_hcd:usb1", "9": "acpi"} {
		if got := tab.Row(id).Name; got != want {
			t.Errorf("IRQ %s name %q, want %q", id, got, want)
		}
	}
	if v, ok := tab.Count("121", 2); !ok || v != 5123 {
		t.Fatalf("121 on CPU2 = %d %v", v, ok)
	}
	if _, ok := tab.Count("121", 9); ok {
		t.Fatal("CPU 9 has no column")
	}
	gic := "           CPU0       CPU1\n 11:    1234   5678   GICv3  27 Level     arch_timer\n"
	g, err := ParseCounterTable([]byte(gic))
	if err != nil || g.Rows[0].Name != "arch_timer" {
		t.Fatalf("GIC row: %+v %v", g, err)
	}
}

// TestInterruptsLayouts reads every /proc/interrupts layout rig meets: x86
// (IO-APIC, global PCI-MSI, per-device PCI-MSIX, interrupt remapping) and
// arm64 with the Edge/Level column (GICv3, ITS-MSI, ITS-PCI-MSIX), with
// their arch rows.
func TestInterruptsLayouts(t *testing.T) {
	type want struct {
		id                            string
		chip, hwirq, trigger, handler string
		actions                       []string
	}
	cases := map[string][]want{
		"interrupts/firecracker": {{"38", "PCI-MSIX-0000:00:03.0", "1", "", "edge", []string{"virtio2-input.0"}},
			{"24", "IO-APIC", "5", "", "edge", []string{"ACPI:Ged"}}},
		"interrupts/mixed": {{"16", "IO-APIC", "16", "", "fasteoi", []string{"i801_smbus", "ehci_hcd:usb1"}},
			{"61", "IR-PCI-MSIX-0000:3b:00.0", "1", "", "edge", []string{"mlx5_comp0@pci:0000:3b:00.0"}}},
		"c7i/proc/interrupts": {{"27", "PCI-MSI", "81920", "", "edge", []string{"ena-mgmnt@pci:0000:00:05.0"}},
			{"28", "PCI-MSI", "81921", "", "edge", []string{"ens5-Tx-Rx-0"}},
			{"9", "IO-APIC", "9", "", "fasteoi", []string{"acpi"}}},
		"c8g/proc/interrupts": {{"11", "GICv3", "27", "Level", "", []string{"arch_timer"}},
			{"19", "ITS-PCI-MSIX-0000:00:05.0", "1", "Edge", "", []string{"ens5-Tx-Rx-0"}},
			{"18", "ITS-PCI-MSIX-0000:00:05.0", "0", "Edge", "", []string{"ena-mgmnt@pci:0000:00:05.0"}}},
		"interrupts/c8g-al2023-6.1": {{"18", "ITS-MSI", "81921", "Edge", "", []string{"ens5-Tx-Rx-0"}}},
	}
	for file, ws := range cases {
		b, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := ParseCounterTable(b)
		if err != nil {
			t.Fatal(file, err)
		}
		for _, w := range ws {
			r := tab.Row(w.id)
			if r == nil || r.IRQ < 0 || r.Chip != w.chip || r.HWIRQ != w.hwirq || r.Trigger != w.trigger || r.Handler != w.handler ||
				!reflect.DeepEqual(r.Actions, w.actions) || r.Name != strings.Join(w.actions, ", ") || len(r.Counts) != len(tab.CPUs) {
				t.Errorf("%s IRQ %s = %+v, want %+v", file, w.id, r, w)
			}
		}
	}
	// Arch rows keep their description; one-count rows are zero-padded.
	b, _ := os.ReadFile("testdata/c8g/proc/interrupts")
	tab, _ := ParseCounterTable(b)
	if r := tab.Row("IPI0"); r == nil || r.IRQ >= 0 || r.Name != "Rescheduling interrupts" || r.Counts[7] != 4000 {
		t.Fatalf("IPI0 = %+v", r)
	}
	if r := tab.Row("Err"); r == nil || len(r.Counts) != 8 || r.Desc != "" {
		t.Fatalf("Err = %+v", r)
	}
	b, _ = os.ReadFile("testdata/c7i/proc/interrupts")
	tab, _ = ParseCounterTable(b)
	for _, id := range []string{"NMI", "LOC", "MCP", "HYP", "PIW", "ERR", "MIS"} {
		if r := tab.Row(id); r == nil || r.IRQ >= 0 || len(r.Counts) != 8 {
			t.Errorf("%s = %+v", id, r)
		}
	}
	// Handler names glued to no hwirq (a chip without a domain) and the
	// level column followed by a named handler.
	odd := "            CPU0\n  5:          1  XT-PIC     -edge      cascade\n  7:   2   GICv3  30 Level   -fasteoi  a, b c\n"
	if tab, err := ParseCounterTable([]byte(odd)); err != nil || tab.Rows[0].Handler != "edge" || tab.Rows[0].Name != "cascade" ||
		tab.Rows[1].Trigger != "Level" || tab.Rows[1].Handler != "fasteoi" || !reflect.DeepEqual(tab.Rows[1].Actions, []string{"a", "b c"}) {
		t.Fatalf("odd rows: %+v %v", tab, err)
	}
}

func TestCounterTableErrors(t *testing.T) {
	for _, in := range []string{"", "CPUx\n", "CPU0\nno colon here\n", "CPU0 CPU1\n a b: 1 2\n",
		"  CPU0 CPU1\n 5: 1 x chip 1-edge foo\n", "CPU0\n -3: 1 chip\n"} {
		if _, err := ParseCounterTable([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// procfs is the reference for /proc/softirqs; the hot path cannot use it
// (it allocates and drops unknown softirq types).
func TestSoftirqsMatchProcfs(t *testing.T) {
	for _, tree := range trees {
		tab, err := readTable(fx(tree), "/proc/softirqs")
		if err != nil {
			t.Fatal(tree, err)
		}
		pfs, err := procfs.NewFS(fx(tree).Path("/proc"))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := pfs.Softirqs()
		if err != nil {
			t.Fatal(tree, err)
		}
		for id, want := range map[string][]uint64{"NET_RX": ref.NetRx, "SCHED": ref.Sched, "TIMER": ref.Timer, "RCU": ref.RCU} {
			if got := tab.Row(id).Counts; !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s = %v, procfs %v", tree, id, got, want)
			}
		}
	}
}

func TestCounterReaderMatchesSlow(t *testing.T) {
	for _, tree := range trees {
		for _, f := range []string{"/proc/interrupts", "/proc/softirqs"} {
			b, err := fx(tree).ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, tab, err := NewCounterReader(b, []int{1, 0})
			if err != nil {
				t.Fatal(tree, f, err)
			}
			dst := make([]uint64, r.Len())
			if _, err := r.Read(b, dst, nil); err != nil {
				t.Fatal(err)
			}
			for k, row := range tab.Rows {
				if dst[2*k] != row.Counts[1] || dst[2*k+1] != row.Counts[0] {
					t.Fatalf("%s %s row %s: fast %v slow %v", tree, f, row.ID, dst[2*k:2*k+2], row.Counts)
				}
			}
			if n := testing.AllocsPerRun(20, func() { _, _ = r.Read(b, dst, nil) }); n != 0 {
				t.Fatalf("Read allocates %v", n)
			}
		}
	}
}

func TestCounterReaderLayout(t *testing.T) {
	a := []byte("   CPU0 CPU1\n 1: 5 6 x\n 2: 7 8 y\n")
	r, _, err := NewCounterReader(a, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewCounterReader(a, []int{3}); err == nil {
		t.Fatal("offline CPU accepted")
	}
	dst, prev := make([]uint64, 2), []uint64{60, 80}
	// Row 1 freed, row 3 new: row 1 keeps prev, row 3 is counted unknown.
	n, err := r.Read([]byte("   CPU0 CPU1\n 2: 7 9 y\n 3: 1 1 z\n"), dst, prev)
	if err != nil || n != 1 || dst[0] != 60 || dst[1] != 9 {
		t.Fatalf("Read = %d %v %v", n, dst, err)
	}
	if _, err := r.Read([]byte("   CPU0\n 1: 5\n"), dst, nil); !errors.Is(err, ErrLayoutChanged) {
		t.Fatalf("hotplug: %v", err)
	}
}

func TestSoftnet(t *testing.T) {
	dst := make([]Softnet, 8)
	b, _ := fx("isolated").ReadFile("/proc/net/softnet_stat")
	n, err := ParseSoftnetInto(b, dst)
	if err != nil || n != 8 || dst[2].Dropped != 2 || dst[2].CPU != 2 || dst[7].Processed != 8000 {
		t.Fatalf("%+v %v", dst[:n], err)
	}
	vm, _ := fx("vm").ReadFile("/proc/net/softnet_stat")
	if n, err = ParseSoftnetInto(vm, dst); err != nil || n != 2 || dst[1].CPU != 1 {
		t.Fatalf("vm %+v %v", dst[:n], err)
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = ParseSoftnetInto(b, dst) }); n != 0 {
		t.Fatalf("allocs %v", n)
	}
	if _, err := ParseSoftnetInto([]byte("zz 0 0\n"), dst); err == nil {
		t.Fatal("bad hex accepted")
	}
}

func TestIdleStates(t *testing.T) {
	s, err := ReadIdleStates(fx("isolated"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 4 || s[3].Name != "C6" || s[3].LatencyUS != 133 || !s[3].Disabled || s[2].Disabled || s[1].Usage != 3000 {
		t.Fatalf("%+v", s)
	}
	v, err := ReadIdleStates(fx("vm"), 1)
	if err != nil || len(v) != 2 || v[1].Name != "haltpoll idle" {
		t.Fatalf("vm %+v %v", v, err)
	}
	if _, err := ReadIdleStates(fx("vm"), 7); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing cpu: %v", err)
	}
	d, g, err := IdleDriver(fx("isolated"))
	if d != "intel_idle" || g != "menu" || err != nil {
		t.Fatal(d, g, err)
	}
}

func TestCPUFacts(t *testing.T) {
	f := fx("isolated")
	top, err := ReadTopology(f, 2)
	if err != nil || !reflect.DeepEqual(top.Siblings(), []int{6}) || top.Core != 2 || top.Node != 0 {
		t.Fatalf("%+v %v", top, err)
	}
	if iso, _ := IsolatedCPUs(f); !reflect.DeepEqual(iso, []int{2, 6}) {
		t.Fatal(iso)
	}
	if nz, _ := NohzFullCPUs(f); !reflect.DeepEqual(nz, []int{2, 6}) {
		t.Fatal(nz)
	}
	if nz, err := NohzFullCPUs(fx("irqbalance")); nz != nil || err != nil {
		t.Fatal("(null) nohz_full:", nz, err)
	}
	if _, err := NohzFullCPUs(fx("vm")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	fr, err := ReadFreq(f, 2)
	if err != nil || fr.Governor != "performance" || fr.Driver != "intel_pstate" {
		t.Fatal(fr, err)
	}
	if _, err := ReadFreq(fx("vm"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if tb, err := ReadTurbo(f); err != nil || tb.Enabled || tb.MinPerfPct != 100 {
		t.Fatal(tb, err)
	}
	if tb, err := ReadTurbo(fx("irqbalance")); err != nil || !tb.Enabled {
		t.Fatal(tb, err)
	}
	if cs, av, err := Clocksource(fx("vm")); cs != "tsc" || len(av) != 2 || err != nil {
		t.Fatal(cs, av, err)
	}
	if e, d, err := THP(fx("irqbalance")); e != "always" || d != "madvise" || err != nil {
		t.Fatal(e, d, err)
	}
	if m, _ := CPUModel(f); m != "Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz" {
		t.Fatal(m)
	}
	ct, err := ReadCPUTimes(f)
	if err != nil || len(ct) != 8 || ct[2].User != 900 || ct[7].CPU != 7 {
		t.Fatal(ct, err)
	}
}

func TestCmdline(t *testing.T) {
	c, err := ReadCmdline(fx("isolated"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.IsolcpusFlags, []string{"domain", "managed_irq"}) || !reflect.DeepEqual(c.Isolcpus.CPUs, []int{2, 6}) {
		t.Fatalf("isolcpus %+v %+v", c.IsolcpusFlags, c.Isolcpus)
	}
	if !c.NohzFull.Contains(6) || !c.RcuNocbs.Contains(2) || c.RcuNocbs.Contains(3) || !reflect.DeepEqual(c.IRQAffinity.CPUs, []int{0, 4}) {
		t.Fatalf("%+v", c)
	}
	if v, ok := c.Get("acpi-osi"); !ok || v != "Linux" {
		t.Fatalf("quoted param %q %v", v, ok)
	}
	if _, ok := c.Get("init-arg"); ok {
		t.Fatal("args after -- belong to init")
	}
	p := ParseCmdline(`isolcpus=1-3 rcu_nocbs nohz_full=all isolcpus=bogus,4 irqaffinity=N`)
	if !p.RcuNocbs.All || !p.NohzFull.All || len(p.Problems) != 2 || !reflect.DeepEqual(p.Isolcpus.CPUs, []int{4}) {
		t.Fatalf("%+v", p)
	}
	vm, _ := ReadCmdline(fx("vm"))
	if vm.Isolcpus.Set || vm.NohzFull.Set || len(vm.Problems) != 0 {
		t.Fatalf("vm: %+v", vm)
	}
}

func TestCgroup(t *testing.T) {
	c, err := ReadCgroup(fx("k8spod"), "self")
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 2 || !reflect.DeepEqual(c.CPUSet, []int{2, 3}) || c.CPUMax.QuotaUS != 200000 || c.CPUMax.Unlimited() || c.Stat.NrThrottled != 17 || c.Stat.ThrottledUS != 84000 {
		t.Fatalf("%+v", c)
	}
	i, err := ReadCgroup(fx("isolated"), "self")
	if err != nil || !i.CPUMax.Unlimited() || len(i.CPUSet) != 8 {
		t.Fatalf("%+v %v", i, err)
	}
	// The VM is a cgroup v1 hybrid host with nothing but the memory path set.
	// The unified tree has no cpu controller there, so v1 must be used.
	v, err := ReadCgroup(fx("vm"), "self")
	if err != nil || v.Version != 1 || !reflect.DeepEqual(v.CPUSet, []int{0, 1}) || !v.CPUMax.Unlimited() {
		t.Fatalf("%+v %v", v, err)
	}
	// Without mountinfo the v1 hierarchies are at their usual places.
	if v.Dir != "/sys/fs/cgroup/cpu" || v.ReadOnly {
		t.Fatalf("vm: %+v", v)
	}
	if c.Root || !c.ReadOnly || c.Dir != "/sys/fs/cgroup" || !reflect.DeepEqual(c.Controllers, []string{"cpuset", "cpu", "io", "memory", "pids"}) {
		t.Fatalf("k8spod: %+v", c)
	}
	for _, bad := range []string{"", "0 100", "max x", "a b c", "-5 100"} {
		if _, err := ParseCPUMax(bad); err == nil {
			t.Errorf("cpu.max %q accepted", bad)
		}
	}
	if s, err := ParseCPUStat([]byte("nr_throttled 3\nthrottled_time 5000\n")); err != nil || s.ThrottledUS != 5 {
		t.Fatal(s, err)
	}
}

// In a cgroup v1 container runc bind-mounts the container's own cgroup
// directory at /sys/fs/cgroup/<controllers>: /proc/self/cgroup names
// /kubepods/..., and the files are at the mount point (the EKS AL2
// trees), not at the mount point joined with that path.
func TestCgroupV1Container(t *testing.T) {
	c, err := ReadCgroup(fx("eks-al2-pinned"), "self")
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || c.Dir != "/sys/fs/cgroup/cpu,cpuacct" || !strings.HasPrefix(c.Path, "/kubepods/pod3c2f5e0a") || !c.ReadOnly ||
		!reflect.DeepEqual(c.CPUSet, []int{1, 5}) || c.CPUMax != (rundir.CPUMax{QuotaUS: 200000, PeriodUS: 100000}) ||
		c.Stat != (rundir.CPUStat{NrPeriods: 5120, NrThrottled: 37, ThrottledUS: 912000}) || len(c.Missing) != 0 {
		t.Fatalf("pinned: %+v", c)
	}
	s, err := ReadCgroup(fx("eks-al2-shared"), "self")
	if err != nil || !reflect.DeepEqual(s.CPUSet, []int{0, 2, 3, 4, 6, 7}) || !s.CPUMax.Unlimited() || len(s.Missing) != 0 {
		t.Fatalf("shared: %+v %v", s, err)
	}
}

// The directory of a cgroup comes from the mount that shows it: the
// mount's root (field 4) is the cgroup mounted, the mount point (field
// 5) where; the last mount wins; cpu and cpuacct mounted apart (this
// development VM) or together; a cgroup outside every mount is not
// visible, and says so.
func TestCgroupMountDir(t *testing.T) {
	h := copyTree(t, "vm")
	host := "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n" +
		"33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	for _, c := range []struct {
		mountinfo, cgroup, dir, err string
	}{
		{host, "1:cpu:/a/b\n", "/sys/fs/cgroup/cpu/a/b", ""},
		{host + "90 30 0:28 /a /sys/fs/cgroup/cpu ro,relatime - cgroup cgroup rw,cpu\n", "1:cpu:/a/b\n", "/sys/fs/cgroup/cpu/b", ""},
		{"90 30 0:28 /pod/c1 /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n", "2:cpu,cpuacct:/pod/c1\n", "/sys/fs/cgroup/cpu,cpuacct", ""},
		{"90 30 0:28 /pod/c1 /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n", "2:cpu,cpuacct:/pod/c10\n", "",
			"cgroup /pod/c10 is outside every mount of the cgroup v1 cpu hierarchy here (/pod/c1 at /sys/fs/cgroup/cpu,cpuacct)"},
		{"32 30 0:29 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n", "1:cpu:/\n", "", "the cgroup v1 cpu hierarchy is not mounted here"},
		// ip netns exec's fresh /sys has no hierarchy: the process that
		// ran it (the nearest ancestor with any) has them.
		{"2 1 0:22 / /sys rw - sysfs sysfs rw\n", "1:cpu:/a\n", "/proc/50/root/sys/fs/cgroup/cpu/a", ""},
	} {
		write(t, h, "/proc/self/status", "Name:\trig\nPPid:\t60\n")
		write(t, h, "/proc/60/status", "Name:\tip\nPPid:\t50\n")
		write(t, h, "/proc/60/mountinfo", "2 1 0:22 / /sys rw - sysfs sysfs rw\n")
		write(t, h, "/proc/50/status", "Name:\trig\nPPid:\t1\n")
		write(t, h, "/proc/50/mountinfo", host)
		write(t, h, "/proc/50/root/.keep", "")
		write(t, h, "/proc/self/mountinfo", c.mountinfo)
		write(t, h, "/proc/self/cgroup", c.cgroup)
		g, err := ReadCgroup(h, "self")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%q: %v, want %q", c.cgroup, err, c.err)
			}
			continue
		}
		if err != nil || g.Dir != c.dir {
			t.Errorf("%q: %+v %v, want dir %s", c.cgroup, g, err, c.dir)
		}
	}
}

func TestTasks(t *testing.T) {
	b, err := fx("isolated").ReadFile("/proc/4242/task/4250/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := ParseTaskStat(b)
	if !ok || st.PID != 4250 || string(st.Comm) != "rig-responder" || st.CPU != 2 || st.State != 'R' || st.Flags != 0 {
		t.Fatal(st, ok)
	}
	// The comm may hold ") (": fields count from the last ')'. Field 9
	// (flags) is PF_IO_WORKER|PF_FORKNOEXEC|… as on an iou-sqp thread.
	tricky := []byte("77 (a) b (c) S 1 1 1 0 -1 4210768" + strings.Repeat(" 0", 29) + " 3 0 0 0 0\n")
	if st, ok := ParseTaskStat(tricky); !ok || string(st.Comm) != "a) b (c" || st.CPU != 3 || st.Flags != 0x404050 || st.Flags&PFIOWorker == 0 {
		t.Fatal(st, ok)
	}
	own, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ParseTaskStat(own); !ok {
		t.Fatalf("live stat %q", own)
	}
	status, _ := fx("isolated").ReadFile("/proc/4242/task/4250/status")
	if v, i, ok := ParseCtxSwitches(status); !ok || v != 4350 || i != 4250%7 {
		t.Fatal(v, i, ok)
	}
	if n := testing.AllocsPerRun(20, func() { ParseCtxSwitches(status); ParseTaskStat(b) }); n != 0 {
		t.Fatalf("allocs %v", n)
	}
	p, err := FindProcesses(fx("irqbalance"), "irqbalance", "ptp4l")
	if err != nil || len(p) != 2 || p[1].Cmdline[2] != "enp3s0" {
		t.Fatalf("%+v %v", p, err)
	}
	a, err := ReadIRQAffinity(fx("isolated"), 131)
	if err != nil || !reflect.DeepEqual(a.Affinity, []int{4, 5}) || !reflect.DeepEqual(a.Targets(), []int{4}) {
		t.Fatalf("%+v %v", a, err)
	}
	irqs, err := ListIRQs(fx("vm"))
	if err != nil || len(irqs) == 0 {
		t.Fatal(irqs, err)
	}
}

func TestFileReadAll(t *testing.T) {
	f, err := Open(hostfs.FS{Root: "/"}, "/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 16)
	b, err := f.ReadGrow(&buf)
	if err != nil || len(b) < 100 {
		t.Fatal(len(b), err)
	}
	if _, err := ParseCounterTable(b); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = f.ReadAll(buf) }); n != 0 {
		t.Fatalf("ReadAll allocates %v", n)
	}
	if _, err := Open(hostfs.FS{Root: t.TempDir()}, "/proc/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

func TestParseTaskSchedstat(t *testing.T) {
	for in, want := range map[string]TaskSchedstat{
		"1234 56 7\n": {1234, 56, 7},
		"0 0 0":       {},
		"9 8 7 \n":    {9, 8, 7},
	} {
		if got, ok := ParseTaskSchedstat([]byte(in)); !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "1 2", "1 2 3 4", "a b c", "1 2 -3", "1 2 3x", "99999999999999999999 1 2"} {
		if got, ok := ParseTaskSchedstat([]byte(bad)); ok {
			t.Errorf("%q accepted as %+v", bad, got)
		}
	}
	if own, err := os.ReadFile("/proc/self/schedstat"); err == nil {
		if _, ok := ParseTaskSchedstat(own); !ok {
			t.Errorf("live schedstat %q: not parsed", own)
		}
	}
	b := []byte("1234 56 7\n")
	if n := testing.AllocsPerRun(100, func() { ParseTaskSchedstat(b) }); n != 0 {
		t.Errorf("ParseTaskSchedstat allocates %.0f times", n)
	}
}

// The process may run where any of its threads may: one thread pinned
// itself to CPU 1, another keeps the process's 0-3.
func TestProcessCPUsAllowed(t *testing.T) {
	h := hostfs.FS{Root: t.TempDir()}
	for p, v := range map[string]string{
		"/proc/self/status":         "Cpus_allowed_list:\t1\n", // the main thread, pinned
		"/proc/self/task/10/status": "Cpus_allowed_list:\t1\n",
		"/proc/self/task/11/status": "Cpus_allowed_list:\t0-3\n",
		"/proc/9/status":            "Cpus_allowed_list:\t2\n",
	} {
		if err := os.MkdirAll(filepath.Dir(h.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.Path(p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := ProcessCPUsAllowed(h, "self"); err != nil || fmt.Sprint(l) != "[0 1 2 3]" {
		t.Fatalf("self: %v %v", l, err)
	}
	if l, err := ProcessCPUsAllowed(h, "9"); err != nil || fmt.Sprint(l) != "[2]" {
		t.Fatalf("no task directory: %v %v", l, err)
	}
}

// copyTree copies fixture tree name for a test that changes it.
func copyTree(t *testing.T, name string) hostfs.FS {
	t.Helper()
	return hostfs.FS{Root: hostfstest.CopyTree(t, filepath.Join("testdata", name))}
}

// write writes a file below h, making its directory.
func write(t *testing.T, h hostfs.FS, p, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path(p), []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostPIDs: a host's /proc shows kthreadd as PID 2; a pod's (its own
// PID namespace, PID 1 the probe) does not, and says what PID 1 is.
func TestHostPIDs(t *testing.T) {
	for _, tt := range []struct {
		tree string
		host bool
		why  string
	}{{"c7i", true, "kthreadd is PID 2"}, {"vm", true, "kthreadd is PID 2"}, {"k8spod", false, "no PID 2 (kthreadd) in /proc; PID 1 is responder"}} {
		host, why, err := HostPIDs(fx(tt.tree))
		if err != nil || host != tt.host || why != tt.why {
			t.Errorf("%s: %v %q %v, want %v %q", tt.tree, host, why, err, tt.host, tt.why)
		}
	}
}

// A two-node host: each CPU's node from its nodeN link, the NIC's from
// its device; a device whose platform gives none, and a veth without a
// device, are -1; an interface that does not exist is an error.
func TestNUMANodes(t *testing.T) {
	fs := hostfs.FS{Root: "testdata/numa2"}
	for cpu, want := range map[int]int{0: 0, 3: 0, 4: 1, 7: 1} {
		if n := CPUNode(fs, cpu); n != want {
			t.Errorf("cpu%d: node %d, want %d", cpu, n, want)
		}
	}
	if n := CPUNode(hostfs.FS{Root: t.TempDir()}, 0); n != -1 {
		t.Errorf("no node link: %d", n)
	}
	for ifc, want := range map[string]int{"ens1": 1, "ens2": -1, "vr0": -1} {
		if n, err := NICNode(fs, ifc); n != want || err != nil {
			t.Errorf("%s: node %d %v, want %d", ifc, n, err, want)
		}
	}
	if _, err := NICNode(fs, "nosuch0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown interface: %v", err)
	}
}
