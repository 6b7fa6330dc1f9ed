package rundir

import (
	"fmt"
	"time"
)

// env/<host>.json: the environment a run measured on, one snapshot per
// host (internal/envsnap takes it; `rig env` prints it).

// Snapshot is the environment of one host. Fields the host does not
// provide (no cpufreq in a VM, no nohz_full support) are empty and named in
// Absent; read failures are in Errors. Neither stops the snapshot.
type Snapshot struct {
	Taken         time.Time `json:"taken"`
	Hostname      string    `json:"hostname"`
	Kernel        string    `json:"kernel"`
	KernelVersion string    `json:"kernel_version"`
	Rig           RigBuild  `json:"rig"`
	Cmdline       *Cmdline  `json:"cmdline,omitempty"`
	CPU           HostCPU   `json:"cpu"`
	Power         HostPower `json:"power"`
	Clocksource   string    `json:"clocksource"`
	Clocksources  []string  `json:"clocksources_available,omitempty"`
	THP           THP       `json:"thp"`
	// SchedRT is the RT bandwidth: how long SCHED_FIFO/RR threads may run
	// in each period; nil when it could not be read.
	SchedRT    *SchedRT   `json:"sched_rt,omitempty"`
	IRQs       []IRQ      `json:"irqs,omitempty"`
	IRQBalance IRQBalance `json:"irqbalance"`
	// PTP lists running ptp4l, phc2sys and ts2phc processes.
	PTP          []Process `json:"ptp_daemons"`
	InKubernetes bool      `json:"in_kubernetes"`
	Cgroup       *Cgroup   `json:"cgroup,omitempty"`
	// NICNode is the NUMA node of each interface of NIC
	// (/sys/class/net/IF/device/numa_node); -1: the platform gives none.
	NICNode map[string]int `json:"nic_numa_node,omitempty"`
	// NIC maps interface name to what envsnap.NICFacts returned (a
	// nicctl.Info from a host).
	NIC    map[string]any `json:"nic,omitempty"`
	Absent []string       `json:"absent,omitempty"`
	Errors []string       `json:"errors,omitempty"`

	// DMI is what the firmware calls the machine: on EC2 "Amazon EC2"
	// and the instance type (product_name).
	DMI DMI `json:"dmi"`
}

// RigBuild identifies the binary that took the snapshot.
type RigBuild struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// HostCPU is the processor layout and isolation.
type HostCPU struct {
	Model    string        `json:"model"`
	Online   []int         `json:"online"`
	Packages int           `json:"packages"`
	Cores    int           `json:"cores"`
	SMT      bool          `json:"smt"` // some core has more than one thread
	NUMA     []int         `json:"numa_nodes"`
	Topology []CPUTopology `json:"topology"`
	Isolated []int         `json:"isolated"`
	NohzFull []int         `json:"nohz_full"`
	// RcuNocbs is only visible on the command line.
	RcuNocbs CPUSpec `json:"rcu_nocbs"`
}

// HostPower is cpuidle, cpufreq (per CPU: driver, governor, limits, energy-
// performance preference), turbo with intel_pstate's min/max perf, and
// the tuned profile.
type HostPower struct {
	IdleDriver   string    `json:"idle_driver"`
	IdleGovernor string    `json:"idle_governor"`
	Idle         []CPUIdle `json:"idle,omitempty"`
	Freq         []CPUFreq `json:"freq,omitempty"`
	Turbo        *Turbo    `json:"turbo,omitempty"`
	// Tuned is `tuned-adm active`; nil when tuned is not installed.
	Tuned *TunedState `json:"tuned,omitempty"`
	// CStateMSRs are the BIOS's C-state settings, one per package (read
	// on its first online CPU); CStateMSRsNotRead says why there are
	// none (not Intel, no msr driver, no access).
	CStateMSRs        []CStateMSRs `json:"cstate_msrs,omitempty"`
	CStateMSRsNotRead string       `json:"cstate_msrs_not_read,omitempty"`
}

// CStateMSRs are MSR_PKG_CST_CONFIG_CONTROL (0xE2) and MSR_POWER_CTL
// (0x1FC) of one CPU, raw and decoded.
type CStateMSRs struct {
	CPU          int    `json:"cpu"`
	PkgCStConfig uint64 `json:"msr_pkg_cst_config_control"`
	PowerCtl     uint64 `json:"msr_power_ctl"`
	// PkgCStateLimit is bits 3:0 of 0xE2 (2:0 before Haswell): the
	// deepest package C-state, coded per model (turbostat's tables).
	PkgCStateLimit int `json:"pkg_cstate_limit"`
	// CFGLock (bit 15): the BIOS locked bits 15:0 until reset.
	CFGLock bool `json:"cfg_lock"`
	// C3AutoDemote and C1AutoDemote (bits 25, 26): the CPU turns a C6/C3
	// request into C3/C1 when it predicts a short idle; C3Undemote and
	// C1Undemote (bits 27, 28, Sandy Bridge and later) undo that.
	C3AutoDemote bool `json:"c3_auto_demotion"`
	C1AutoDemote bool `json:"c1_auto_demotion"`
	C3Undemote   bool `json:"c3_undemotion"`
	C1Undemote   bool `json:"c1_undemotion"`
	// C1E (0x1FC bit 1): C1 requests are promoted to C1E (lower voltage,
	// a longer wake-up).
	C1E bool `json:"c1e_promotion"`
}

// CPUIdle is the idle states of one CPU.
type CPUIdle struct {
	CPU    int         `json:"cpu"`
	States []IdleState `json:"states"`
}

// CPUFreq is the cpufreq policy of one CPU.
type CPUFreq struct {
	CPU int `json:"cpu"`
	Freq
}

// THP is the transparent huge page setting.
type THP struct {
	Enabled string `json:"enabled"`
	Defrag  string `json:"defrag"`
}

// SchedRT is kernel.sched_rt_runtime_us and sched_rt_period_us: RT
// threads may run RuntimeUS of every PeriodUS µs on a CPU; RuntimeUS -1
// is no limit.
type SchedRT struct {
	RuntimeUS int64 `json:"runtime_us"`
	PeriodUS  int64 `json:"period_us"`
}

// Unlimited reports whether RT threads may run without a limit.
func (r SchedRT) Unlimited() bool { return r.RuntimeUS < 0 }

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

// String is the registers in one line, raw and decoded.
func (m CStateMSRs) String() string {
	lock := "unlocked"
	if m.CFGLock {
		lock = "locked"
	}
	on := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("PKG_CST_CONFIG_CONTROL %#x (package C-state limit code %d, %s, C1 auto-demotion %s, C3 auto-demotion %s, C1 undemotion %s, C3 undemotion %s); POWER_CTL %#x (C1E %s)",
		m.PkgCStConfig, m.PkgCStateLimit, lock, on(m.C1AutoDemote), on(m.C3AutoDemote), on(m.C1Undemote), on(m.C3Undemote), m.PowerCtl, on(m.C1E))
}
