// Package envsnap records the environment a run measured on: kernel and
// command line, CPU model and topology, isolation, power management,
// clocksource, THP, IRQ placement, irqbalance/PTP daemons, the NICs (through
// NICFacts), the machine's DMI identity and, inside a container, the cgroup
// CPU limits: a rundir.Snapshot. The runner writes one snapshot per host
// into the run directory (env/<host>.json); `rig env` prints it.
package envsnap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/version"
)

// NICFacts fills Snapshot.NIC for each of Options.Ifaces: facts.Show over
// the host's kernel (ethtool, ioctls, irqbalance below fs). Tests replace it
// with one over fakes, since a fixture tree has no kernel behind it.
var NICFacts = func(ctx context.Context, fs hostfs.FS, iface string) (any, error) {
	env := &facts.NIC{FS: fs}
	defer env.Close()
	return facts.Show(ctx, env, iface)
}

// Options selects optional parts of the snapshot.
type Options struct {
	// Ifaces are the interfaces whose NIC facts to record (via NICFacts).
	Ifaces []string
	// Getenv reads the snapshotting process's environment (Kubernetes
	// detection); nil means os.Getenv. Tests inject it.
	Getenv func(string) string
	// Tuned asks tuned-adm for the active profile; nil means
	// power.HostTuned(fs).
	Tuned power.Tuned
}

type collector struct {
	ctx context.Context
	fs  hostfs.FS
	s   *rundir.Snapshot
}

func (c *collector) fail(what string, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, os.ErrNotExist) {
		c.s.Absent = append(c.s.Absent, fmt.Sprintf("%s: %v", what, err))
		return
	}
	c.s.Errors = append(c.s.Errors, fmt.Sprintf("%s: %v", what, err))
}

// Take reads the snapshot. It never fails as a whole: each part that
// cannot be read is recorded in Errors (or Absent) so a partial environment
// is still written with the run.
func Take(ctx context.Context, fs hostfs.FS, opts Options) *rundir.Snapshot {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &rundir.Snapshot{Taken: time.Now().UTC(), Rig: rundir.RigBuild{Version: version.Version, Commit: version.Commit()}}
	c := &collector{ctx: ctx, fs: fs, s: s}
	var err error
	s.Hostname, err = fs.ReadString("/proc/sys/kernel/hostname")
	c.fail("hostname", err)
	s.Kernel, err = fs.ReadString("/proc/sys/kernel/osrelease")
	c.fail("kernel release", err)
	s.KernelVersion, err = fs.ReadString("/proc/version")
	c.fail("kernel version", err)
	s.Cmdline, err = hostinfo.ReadCmdline(fs)
	c.fail("cmdline", err)
	s.DMI, err = hostinfo.ReadDMI(fs)
	c.fail("dmi", err)
	c.cpu()
	c.power()
	c.cstateMSRs()
	c.tuned(ctx, opts.Tuned)
	s.Clocksource, s.Clocksources, err = hostinfo.Clocksource(fs)
	c.fail("clocksource", err)
	s.THP.Enabled, s.THP.Defrag, err = hostinfo.THP(fs)
	c.fail("transparent hugepages", err)
	if rt, err := hostinfo.ReadSchedRT(fs); err == nil {
		s.SchedRT = &rt
	} else {
		c.fail("sched_rt", err)
	}
	c.irqs()
	c.daemons()
	s.InKubernetes = getenv("KUBERNETES_SERVICE_HOST") != ""
	s.Cgroup, err = hostinfo.ReadCgroup(fs, "self")
	c.fail("cgroup", err)
	if len(opts.Ifaces) > 0 {
		s.NIC = map[string]any{}
		s.NICNode = map[string]int{}
		for _, ifc := range opts.Ifaces {
			n, err := hostinfo.NICNode(fs, ifc)
			c.fail("numa node of "+ifc, err)
			if err == nil {
				s.NICNode[ifc] = n
			}
			f, err := NICFacts(ctx, fs, ifc)
			c.fail("nic "+ifc, err)
			if err == nil {
				s.NIC[ifc] = f
			}
		}
	}
	return s
}

func (c *collector) cpu() {
	fs, s := c.fs, c.s
	var err error
	s.CPU.Model, err = hostinfo.CPUModel(fs)
	c.fail("cpu model", err)
	if s.CPU.Online, err = hostinfo.OnlineCPUs(fs); err != nil {
		c.fail("online cpus", err)
		return
	}
	pk, cores, nodes := map[int]bool{}, map[[2]int]bool{}, map[int]bool{}
	for _, cpu := range s.CPU.Online {
		t, err := hostinfo.ReadTopology(fs, cpu)
		if err != nil {
			c.fail(fmt.Sprintf("cpu%d topology", cpu), err)
			continue
		}
		s.CPU.Topology = append(s.CPU.Topology, t)
		pk[t.Package] = true
		cores[[2]int{t.Package, t.Core}] = true
		if t.Node >= 0 {
			nodes[t.Node] = true
		}
		if len(t.ThreadSiblings) > 1 {
			s.CPU.SMT = true
		}
	}
	s.CPU.Packages, s.CPU.Cores = len(pk), len(cores)
	for n := range nodes {
		s.CPU.NUMA = append(s.CPU.NUMA, n)
	}
	s.CPU.NUMA, _ = cpulist.Parse(cpulist.Format(s.CPU.NUMA)) // sorted
	s.CPU.Isolated, err = hostinfo.IsolatedCPUs(fs)
	c.fail("isolated cpus", err)
	s.CPU.NohzFull, err = hostinfo.NohzFullCPUs(fs)
	c.fail("nohz_full cpus", err)
	if s.Cmdline != nil {
		s.CPU.RcuNocbs = s.Cmdline.RcuNocbs
	}
}

func (c *collector) power() {
	fs, s := c.fs, c.s
	var err error
	s.Power.IdleDriver, s.Power.IdleGovernor, err = hostinfo.IdleDriver(fs)
	c.fail("cpuidle driver", err)
	idleAbsent, freqAbsent := 0, 0
	for _, cpu := range s.CPU.Online {
		st, err := hostinfo.ReadIdleStates(fs, cpu)
		if errors.Is(err, os.ErrNotExist) {
			idleAbsent++
		} else if err != nil {
			c.fail(fmt.Sprintf("cpu%d cpuidle", cpu), err)
		} else {
			s.Power.Idle = append(s.Power.Idle, rundir.CPUIdle{CPU: cpu, States: st})
		}
		f, err := hostinfo.ReadFreq(fs, cpu)
		if errors.Is(err, os.ErrNotExist) {
			freqAbsent++
		} else if err != nil {
			c.fail(fmt.Sprintf("cpu%d cpufreq", cpu), err)
		} else {
			s.Power.Freq = append(s.Power.Freq, rundir.CPUFreq{CPU: cpu, Freq: f})
		}
	}
	if idleAbsent > 0 {
		s.Absent = append(s.Absent, fmt.Sprintf("cpuidle states on %d CPUs", idleAbsent))
	}
	if freqAbsent > 0 {
		s.Absent = append(s.Absent, fmt.Sprintf("cpufreq on %d CPUs (frequency not OS-controlled)", freqAbsent))
	}
	t, err := hostinfo.ReadTurbo(fs)
	if err == nil {
		s.Power.Turbo = &t
	} else {
		c.fail("turbo", err)
	}
}

// cstateMSRs reads the BIOS's C-state registers on each package's first
// online CPU, through the msr driver (Intel only; AMD has neither).
func (c *collector) cstateMSRs() {
	s := c.s
	vendor, err := hostinfo.CPUVendor(c.fs)
	switch {
	case err != nil:
		s.Power.CStateMSRsNotRead = "cannot tell the CPU vendor: " + err.Error()
		return
	case vendor != "GenuineIntel":
		s.Power.CStateMSRsNotRead = fmt.Sprintf("not an Intel CPU (vendor %q): MSR 0xE2 and 0x1FC are Intel's", vendor)
		return
	}
	seen := map[int]bool{}
	for _, t := range s.CPU.Topology {
		if seen[t.Package] {
			continue
		}
		seen[t.Package] = true
		m, err := hostinfo.ReadCStateMSRs(c.fs, t.CPU)
		if err != nil {
			s.Power.CStateMSRs = nil
			s.Power.CStateMSRsNotRead = err.Error()
			if errors.Is(err, os.ErrNotExist) {
				s.Power.CStateMSRsNotRead = fmt.Sprintf("no %s (the msr driver is not loaded: modprobe msr)", hostinfo.MSRPath(t.CPU))
			}
			return
		}
		s.Power.CStateMSRs = append(s.Power.CStateMSRs, m)
	}
}

func (c *collector) tuned(ctx context.Context, t power.Tuned) {
	if t == nil {
		t = power.HostTuned(c.fs)
	}
	st, err := t.Active(ctx)
	if errors.Is(err, power.ErrNoTuned) {
		c.s.Absent = append(c.s.Absent, "tuned (no tuned-adm)")
		return
	}
	if err != nil {
		c.fail("tuned", err)
		return
	}
	c.s.Power.Tuned = &st
}

func (c *collector) irqs() {
	tab, err := hostinfo.ReadInterrupts(c.fs)
	c.fail("interrupts", err)
	if err != nil {
		return
	}
	for _, r := range tab.Rows {
		n, err := strconv.Atoi(r.ID)
		if err != nil {
			continue
		}
		a, err := hostinfo.ReadIRQAffinity(c.fs, n)
		if err != nil {
			c.fail(fmt.Sprintf("irq %d affinity", n), err)
			continue
		}
		c.s.IRQs = append(c.s.IRQs, rundir.IRQ{IRQ: n, Name: r.Name, Affinity: a.Affinity, Effective: a.Effective})
	}
}

func (c *collector) daemons() {
	s := c.s
	ib, err := facts.ReadIRQBalance(c.fs)
	c.fail("irqbalance", err)
	s.IRQBalance.BannedCPUs, s.IRQBalance.BannedFrom = ib.Banned(s.CPU.Isolated, s.CPU.NohzFull)
	if host, why, err := hostinfo.HostPIDs(c.fs); err != nil {
		s.IRQBalance.CannotTell = "cannot tell whether rig sees the node's processes: " + err.Error()
	} else if !host {
		s.IRQBalance.CannotTell = "rig is in a PID namespace of its own (" + why + "; a pod without hostPID): the node's processes are not visible"
	}
	if ib.Running {
		s.IRQBalance.Running, s.IRQBalance.PIDs = true, []int{ib.PID}
	}
	s.PTP, err = hostinfo.FindProcesses(c.fs, "ptp4l", "phc2sys", "ts2phc")
	c.fail("ptp daemons", err)
}
