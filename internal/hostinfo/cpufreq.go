package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
)

// Paths of the global frequency controls. intel_pstate's are global (every
// CPU); cpufreq/boost is the core's switch for drivers with boost
// (acpi-cpufreq, amd-pstate, cppc_cpufreq).
const (
	IntelPstateDir = cpuDir + "/intel_pstate"
	BoostPath      = cpuDir + "/cpufreq/boost"
)

// CPUFreqPath is the host path of one cpufreq attribute of cpu's policy
// (cpuN/cpufreq is a link to cpufreq/policyM).
func CPUFreqPath(cpu int, file string) string {
	return fmt.Sprintf("%s/cpu%d/cpufreq/%s", cpuDir, cpu, file)
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

// ReadFreq reads cpuN/cpufreq. Without cpufreq (VMs, fixed-frequency
// clouds) the error wraps os.ErrNotExist. Only scaling_governor is
// required; the other attributes are read where the driver has them.
func ReadFreq(fs hostfs.FS, cpu int) (Freq, error) {
	var f Freq
	var err error
	if f.Governor, err = fs.ReadString(CPUFreqPath(cpu, "scaling_governor")); err != nil {
		return f, err
	}
	p := func(file string) string { return CPUFreqPath(cpu, file) }
	f.Driver, _ = fs.ReadString(p("scaling_driver"))
	f.CurKHz, _ = fs.ReadInt(p("scaling_cur_freq"))
	f.MinKHz, _ = fs.ReadInt(p("scaling_min_freq"))
	f.MaxKHz, _ = fs.ReadInt(p("scaling_max_freq"))
	f.HWMinKHz, _ = fs.ReadInt(p("cpuinfo_min_freq"))
	f.HWMaxKHz, _ = fs.ReadInt(p("cpuinfo_max_freq"))
	f.BaseKHz, _ = fs.ReadInt(p("base_frequency"))
	if s, err := fs.ReadString(p("scaling_available_governors")); err == nil {
		f.Governors = strings.Fields(s)
	}
	if s, err := fs.ReadString(p("scaling_available_frequencies")); err == nil {
		for _, w := range strings.Fields(s) {
			if v, err := strconv.ParseInt(w, 10, 64); err == nil && v > 0 {
				f.TableKHz = append(f.TableKHz, v)
			}
		}
	}
	f.EPP, _ = fs.ReadString(p("energy_performance_preference"))
	if s, err := fs.ReadString(p("energy_performance_available_preferences")); err == nil {
		f.EPPs = strings.Fields(s)
	}
	if s, err := fs.ReadString(p("related_cpus")); err == nil {
		f.RelatedCPUs, _ = cpulist.Parse(strings.Join(strings.Fields(s), ","))
	}
	if strings.HasPrefix(f.Driver, "amd-pstate") {
		if mhz, err := fs.ReadInt(fmt.Sprintf("%s/cpu%d/acpi_cppc/nominal_freq", cpuDir, cpu)); err == nil {
			f.BaseKHz = 1000 * mhz
		}
	}
	if f.Driver == "cppc_cpufreq" {
		d := fmt.Sprintf("%s/cpu%d/acpi_cppc/", cpuDir, cpu)
		f.CPPCHighest, _ = fs.ReadInt(d + "highest_perf")
		f.CPPCNominal, _ = fs.ReadInt(d + "nominal_perf")
	}
	return f, nil
}

// Turbo is the frequency-boost state. Source names the file it came from.
type Turbo struct {
	Enabled    bool   `json:"enabled"`
	Source     string `json:"source"`
	PstateMode string `json:"intel_pstate_status,omitempty"`
	MinPerfPct int64  `json:"intel_pstate_min_perf_pct,omitempty"`
	MaxPerfPct int64  `json:"intel_pstate_max_perf_pct,omitempty"`
}

// IntelPstate reports whether the control is intel_pstate's no_turbo
// (which also carries the global min/max_perf_pct).
func (t Turbo) IntelPstate() bool { return strings.HasPrefix(t.Source, IntelPstateDir+"/") }

// ReadTurbo reads intel_pstate/no_turbo or, for acpi-cpufreq, amd-pstate
// and cppc_cpufreq, cpufreq/boost. Neither present: error wraps
// os.ErrNotExist. intel_pstate's min/max_perf_pct are absent (0) when the
// kernel runs it with per-CPU limits.
func ReadTurbo(fs hostfs.FS) (Turbo, error) {
	p := IntelPstateDir + "/no_turbo"
	v, err := fs.ReadInt(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Turbo{}, err // there, but unreadable: not "no turbo control"
	}
	if err == nil {
		t := Turbo{Enabled: v == 0, Source: p}
		t.PstateMode, _ = fs.ReadString(IntelPstateDir + "/status")
		t.MinPerfPct, _ = fs.ReadInt(IntelPstateDir + "/min_perf_pct")
		t.MaxPerfPct, _ = fs.ReadInt(IntelPstateDir + "/max_perf_pct")
		return t, nil
	}
	if v, err = fs.ReadInt(BoostPath); err != nil {
		return Turbo{}, err
	}
	return Turbo{Enabled: v != 0, Source: BoostPath}, nil
}
