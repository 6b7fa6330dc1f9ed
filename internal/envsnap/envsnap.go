// Package envsnap records the environment a run measured on: kernel and
// command line, CPU model and topology, isolation, power management,
// clocksource, THP, IRQ placement, irqbalance/PTP daemons, the NICs (through
// NICFacts), the machine's DMI identity and, inside a container, the cgroup
// CPU limits. The runner writes one snapshot per host
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

// Snapshot is the environment of one host. Fields the host does not
// provide (no cpufreq in a VM, no nohz_full support) are empty and named in
// Absent; read failures are in Errors. Neither stops the snapshot.
type Snapshot struct {
	Taken         time.Time         `json:"taken"`
	Hostname      string            `json:"hostname"`
	Kernel        string            `json:"kernel"`
	KernelVersion string            `json:"kernel_version"`
	Rig           RigBuild          `json:"rig"`
	Cmdline       *hostinfo.Cmdline `json:"cmdline,omitempty"`
	CPU           CPU               `json:"cpu"`
	Power         Power             `json:"power"`
	Clocksource   string            `json:"clocksource"`
	Clocksources  []string          `json:"clocksources_available,omitempty"`
	THP           THP               `json:"thp"`
	IRQs          []IRQ             `json:"irqs,omitempty"`
	IRQBalance    IRQBalance        `json:"irqbalance"`
	// PTP lists running ptp4l, phc2sys and ts2phc processes.
	PTP          []hostinfo.Process `json:"ptp_daemons"`
	InKubernetes bool               `json:"in_kubernetes"`
	Cgroup       *hostinfo.Cgroup   `json:"cgroup,omitempty"`
	// NIC maps interface name to what NICFacts returned.
	NIC    map[string]any `json:"nic,omitempty"`
	Absent []string       `json:"absent,omitempty"`
	Errors []string       `json:"errors,omitempty"`

	// DMI is what the firmware calls the machine: on EC2 "Amazon EC2"
	// and the instance type (product_name).
	DMI hostinfo.DMI `json:"dmi"`
}

// RigBuild identifies the binary that took the snapshot.
type RigBuild struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// CPU is the processor layout and isolation.
type CPU struct {
	Model    string                 `json:"model"`
	Online   []int                  `json:"online"`
	Packages int                    `json:"packages"`
	Cores    int                    `json:"cores"`
	SMT      bool                   `json:"smt"` // some core has more than one thread
	NUMA     []int                  `json:"numa_nodes"`
	Topology []hostinfo.CPUTopology `json:"topology"`
	Isolated []int                  `json:"isolated"`
	NohzFull []int                  `json:"nohz_full"`
	// RcuNocbs is only visible on the command line.
	RcuNocbs hostinfo.CPUSpec `json:"rcu_nocbs"`
}

// Power is cpuidle, cpufreq (per CPU: driver, governor, limits, energy-
// performance preference), turbo with intel_pstate's min/max perf, and
// the tuned profile.
type Power struct {
	IdleDriver   string          `json:"idle_driver"`
	IdleGovernor string          `json:"idle_governor"`
	Idle         []CPUIdle       `json:"idle,omitempty"`
	Freq         []CPUFreq       `json:"freq,omitempty"`
	Turbo        *hostinfo.Turbo `json:"turbo,omitempty"`
	// Tuned is `tuned-adm active`; nil when tuned is not installed.
	Tuned *power.TunedState `json:"tuned,omitempty"`
}

// CPUIdle is the idle states of one CPU.
type CPUIdle struct {
	CPU    int                  `json:"cpu"`
	States []hostinfo.IdleState `json:"states"`
}

// CPUFreq is the cpufreq policy of one CPU.
type CPUFreq struct {
	CPU int `json:"cpu"`
	hostinfo.Freq
}

// THP is the transparent huge page setting.
type THP struct {
	Enabled string `json:"enabled"`
	Defrag  string `json:"defrag"`
}

// IRQ is a device IRQ with its name and placement.
type IRQ struct {
	IRQ       int    `json:"irq"`
	Name      string `json:"name"`
	Affinity  []int  `json:"affinity"`
	Effective []int  `json:"effective,omitempty"`
}

// IRQBalance says whether irqbalance runs and which CPUs it leaves alone.
type IRQBalance struct {
	Running bool  `json:"running"`
	PIDs    []int `json:"pids,omitempty"`
	// BannedCPUs is what irqbalance will not touch: its
	// IRQBALANCE_BANNED_CPULIST if set, else isolated ∪ nohz_full (its
	// default). BannedFrom says which.
	BannedCPUs []int  `json:"banned_cpus"`
	BannedFrom string `json:"banned_from,omitempty"`
	// CannotTell says why Running cannot be believed: rig does not see
	// the node's processes (a pod without hostPID).
	CannotTell string `json:"cannot_tell,omitempty"`
}

type collector struct {
	ctx context.Context
	fs  hostfs.FS
	s   *Snapshot
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
func Take(ctx context.Context, fs hostfs.FS, opts Options) *Snapshot {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := &Snapshot{Taken: time.Now().UTC(), Rig: RigBuild{version.Version, version.Commit()}}
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
	c.tuned(ctx, opts.Tuned)
	s.Clocksource, s.Clocksources, err = hostinfo.Clocksource(fs)
	c.fail("clocksource", err)
	s.THP.Enabled, s.THP.Defrag, err = hostinfo.THP(fs)
	c.fail("transparent hugepages", err)
	c.irqs()
	c.daemons()
	s.InKubernetes = getenv("KUBERNETES_SERVICE_HOST") != ""
	s.Cgroup, err = hostinfo.ReadCgroup(fs, "self")
	c.fail("cgroup", err)
	if len(opts.Ifaces) > 0 {
		s.NIC = map[string]any{}
		for _, ifc := range opts.Ifaces {
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
			s.Power.Idle = append(s.Power.Idle, CPUIdle{cpu, st})
		}
		f, err := hostinfo.ReadFreq(fs, cpu)
		if errors.Is(err, os.ErrNotExist) {
			freqAbsent++
		} else if err != nil {
			c.fail(fmt.Sprintf("cpu%d cpufreq", cpu), err)
		} else {
			s.Power.Freq = append(s.Power.Freq, CPUFreq{cpu, f})
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
		c.s.IRQs = append(c.s.IRQs, IRQ{IRQ: n, Name: r.Name, Affinity: a.Affinity, Effective: a.Effective})
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
