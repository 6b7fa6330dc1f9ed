package rundir

import (
	"fmt"
	"path"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
)

// The host facts the files of a run directory record (env/<host>.json,
// telemetry.json): values only. internal/hostinfo and internal/power read
// them from a host.

// Param is one kernel parameter. HasValue distinguishes "quiet" from "x=".
type Param struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	HasValue bool   `json:"has_value,omitempty"`
}

// CPUSpec is a CPU list from a boot parameter.
type CPUSpec struct {
	Set  bool   `json:"set"`           // the parameter is present
	Raw  string `json:"raw,omitempty"` // value as given
	All  bool   `json:"all,omitempty"` // "all", or rcu_nocbs without a list
	CPUs []int  `json:"cpus,omitempty"`
}

// Contains reports whether the spec covers cpu.
func (s CPUSpec) Contains(cpu int) bool {
	return s.All || cpulist.Contains(s.CPUs, cpu)
}

// Cmdline is /proc/cmdline with the isolation parameters decoded.
type Cmdline struct {
	Raw    string  `json:"raw"`
	Params []Param `json:"-"`
	// Isolcpus flags: "domain" (the default when none is given), "nohz",
	// "managed_irq".
	IsolcpusFlags []string `json:"isolcpus_flags,omitempty"`
	Isolcpus      CPUSpec  `json:"isolcpus"`
	NohzFull      CPUSpec  `json:"nohz_full"`
	RcuNocbs      CPUSpec  `json:"rcu_nocbs"`
	IRQAffinity   CPUSpec  `json:"irqaffinity"`
	// Problems lists values the kernel would reject or that rig could not
	// decode (e.g. "N" for the last CPU).
	Problems []string `json:"problems,omitempty"`
}

// Get returns the last value of key (the kernel uses the last occurrence
// for most parameters). Dashes and underscores match each other, as in the
// kernel's parameq.
func (c *Cmdline) Get(key string) (string, bool) {
	key = strings.ReplaceAll(key, "-", "_")
	v, ok := "", false
	for _, p := range c.Params {
		if strings.ReplaceAll(p.Key, "-", "_") == key {
			v, ok = p.Value, true
		}
	}
	return v, ok
}

// CPUTopology is one CPU's place in the machine.
type CPUTopology struct {
	CPU            int   `json:"cpu"`
	Package        int   `json:"package"`
	Core           int   `json:"core"`
	Node           int   `json:"node"` // NUMA node, -1 if unknown
	ThreadSiblings []int `json:"thread_siblings"`
}

// Siblings returns the SMT siblings of t.CPU, excluding itself.
func (t CPUTopology) Siblings() []int {
	var s []int
	for _, c := range t.ThreadSiblings {
		if c != t.CPU {
			s = append(s, c)
		}
	}
	return s
}

// IdleState is one cpuidle state of one CPU
// (/sys/devices/system/cpu/cpuN/cpuidle/stateK).
type IdleState struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	Desc        string `json:"desc,omitempty"`
	LatencyUS   uint64 `json:"exit_latency_us"`
	ResidencyUS uint64 `json:"target_residency_us"`
	Disabled    bool   `json:"disabled"`
	Usage       uint64 `json:"usage"`   // entries
	TimeUS      uint64 `json:"time_us"` // requested residency, not what the hardware did
	Above       uint64 `json:"above"`
	Below       uint64 `json:"below"`
}

// Freq is one CPU's cpufreq policy. Attributes the driver does not have
// are zero or empty: base_frequency and the energy-performance preference
// are intel_pstate's (amd-pstate has the latter too), the frequency table
// is acpi-cpufreq's, the CPPC performance levels are read for
// cppc_cpufreq (arm64 servers).
type Freq struct {
	Driver   string `json:"driver"`
	Governor string `json:"governor"`
	CurKHz   int64  `json:"cur_khz"`
	MinKHz   int64  `json:"min_khz"` // scaling_min_freq: the policy's floor
	MaxKHz   int64  `json:"max_khz"` // scaling_max_freq: the policy's ceiling
	// Governors is scaling_available_governors.
	Governors []string `json:"available_governors,omitempty"`
	// HWMinKHz and HWMaxKHz are cpuinfo_min_freq and cpuinfo_max_freq,
	// the range scaling_min/max_freq may take (while turbo is off the
	// limits stop at the base frequency: intel_pstate, amd-pstate).
	HWMinKHz int64 `json:"cpuinfo_min_khz,omitempty"`
	HWMaxKHz int64 `json:"cpuinfo_max_khz,omitempty"`
	// BaseKHz is the guaranteed, non-turbo frequency: intel_pstate's
	// base_frequency, amd-pstate's acpi_cppc/nominal_freq.
	BaseKHz int64 `json:"base_khz,omitempty"`
	// TableKHz is scaling_available_frequencies: a table driver snaps a
	// limit to one of these.
	TableKHz []int64 `json:"available_khz,omitempty"`
	// EPP is energy_performance_preference, EPPs the choices.
	EPP  string   `json:"epp,omitempty"`
	EPPs []string `json:"available_epp,omitempty"`
	// RelatedCPUs share this policy: a change to one changes them all.
	RelatedCPUs []int `json:"related_cpus,omitempty"`
	// CPPCHighest and CPPCNominal are acpi_cppc/highest_perf and
	// nominal_perf: highest > nominal means a boost range.
	CPPCHighest int64 `json:"cppc_highest_perf,omitempty"`
	CPPCNominal int64 `json:"cppc_nominal_perf,omitempty"`
}

// Fixed reports a policy whose hardware range is one frequency: no
// governor or limit can change it.
func (f Freq) Fixed() bool { return f.HWMinKHz > 0 && f.HWMinKHz == f.HWMaxKHz }

// Turbo is the frequency-boost state. Source names the file it came from.
type Turbo struct {
	Enabled    bool   `json:"enabled"`
	Source     string `json:"source"`
	PstateMode string `json:"intel_pstate_status,omitempty"`
	MinPerfPct int64  `json:"intel_pstate_min_perf_pct,omitempty"`
	MaxPerfPct int64  `json:"intel_pstate_max_perf_pct,omitempty"`
}

// IntelPstate reports whether the control is intel_pstate's no_turbo
// (which also carries the global min/max_perf_pct): Source is
// <cpu dir>/intel_pstate/no_turbo.
func (t Turbo) IntelPstate() bool { return path.Base(path.Dir(t.Source)) == "intel_pstate" }

// CPUBusy is what ran on one CPU over a window between two reads.
type CPUBusy struct {
	CPU      int   `json:"cpu"`
	WindowNS int64 `json:"window_ns"`
	// RunNS is the time tasks ran there (at most the window), Share the
	// same over the window; Steal is the share a hypervisor gave to other
	// guests (/proc/stat).
	RunNS float64 `json:"run_ns"`
	Share float64 `json:"share"`
	Steal float64 `json:"steal_share"`
	// Slices are the timeslices begun there (/proc/schedstat only).
	Slices     uint64 `json:"slices,omitempty"`
	HaveSlices bool   `json:"slices_known,omitempty"`
	Source     string `json:"source"`
}

// Process is a running process found by name.
type Process struct {
	PID     int      `json:"pid"`
	Comm    string   `json:"comm"`
	Cmdline []string `json:"cmdline,omitempty"`
}

// CPUMax is cgroup v2 cpu.max (or v1 cfs_quota_us/cfs_period_us).
// QuotaUS < 0 means "max": no CFS bandwidth limit.
type CPUMax struct {
	QuotaUS  int64 `json:"quota_us"`
	PeriodUS int64 `json:"period_us"`
}

// Unlimited reports whether there is no quota.
func (m CPUMax) Unlimited() bool { return m.QuotaUS < 0 }

func (m CPUMax) String() string {
	if m.Unlimited() {
		return fmt.Sprintf("max %d", m.PeriodUS)
	}
	return fmt.Sprintf("%d %d", m.QuotaUS, m.PeriodUS)
}

// CPUStat holds the throttling counters of cpu.stat.
type CPUStat struct {
	NrPeriods   uint64 `json:"nr_periods"`
	NrThrottled uint64 `json:"nr_throttled"`
	ThrottledUS uint64 `json:"throttled_us"` // v1 throttled_time (ns) is converted
}

// Cgroup is the CPU side of a process's cgroup: what a pod can see of its
// own CPU allocation.
type Cgroup struct {
	Version int    `json:"version"` // 1 or 2
	Path    string `json:"path"`    // path inside the hierarchy
	Dir     string `json:"dir"`     // host directory the files were read from
	// Root says Dir is the hierarchy's root cgroup (v2: no cgroup.type),
	// which has no quota of its own.
	Root bool `json:"root,omitempty"`
	// Controllers are the v2 cgroup's own cgroup.controllers: without
	// "cpu" it has no cpu.max.
	Controllers []string `json:"controllers,omitempty"`
	// CPUSet is cpuset.cpus.effective (v2) or cpuset.effective_cpus (v1).
	CPUSet []int   `json:"cpuset"`
	CPUMax CPUMax  `json:"cpu_max"`
	Stat   CPUStat `json:"cpu_stat"`
	// Missing names files that were absent (e.g. cpu.max in the root
	// cgroup, which has no limit).
	Missing []string `json:"missing,omitempty"`
	// ReadOnly says the hierarchy is mounted read-only here (a container's
	// /sys/fs/cgroup): a fix written to Dir cannot work from here.
	ReadOnly bool `json:"read_only,omitempty"`
}

// MissingFile returns the path of the absent file of that name, if it
// is in Missing.
func (c *Cgroup) MissingFile(name string) (string, bool) {
	for _, m := range c.Missing {
		if path.Base(m) == name {
			return m, true
		}
	}
	return "", false
}

// DMI is what the firmware says the machine is
// (/sys/class/dmi/id/{sys_vendor,board_vendor,product_name}); a file the
// kernel does not provide (no DMI, e.g. some arm64 boards) reads "".
type DMI struct {
	SysVendor   string `json:"sys_vendor,omitempty"`
	BoardVendor string `json:"board_vendor,omitempty"`
	ProductName string `json:"product_name,omitempty"` // on EC2 the instance type, e.g. c7i.2xlarge
}

// EC2 reports an Amazon EC2 instance (Nitro: x86 and Graviton alike put
// "Amazon EC2" in sys_vendor and board_vendor).
func (d DMI) EC2() bool { return d.SysVendor == "Amazon EC2" || d.BoardVendor == "Amazon EC2" }

// TunedState is what `tuned-adm list` and `tuned-adm active` say.
type TunedState struct {
	// Active is the active profile ("" = none); several names separated by
	// a space when profiles are merged.
	Active string `json:"active"`
	// Running is false when tuned-adm reports that the daemon does not
	// run (the profile is only preset).
	Running bool `json:"running"`
	// Auto is profile_mode auto: tuned picked the profile (tuned-adm
	// auto_profile) rather than an admin.
	Auto     bool     `json:"auto,omitempty"`
	Profiles []string `json:"profiles,omitempty"`
	// Output is tuned-adm active's text, as printed, for the record.
	Output string `json:"output,omitempty"`
	Err    string `json:"error,omitempty"`
}
