package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"regexp"
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
	// the range scaling_min/max_freq may take (with intel_pstate the top
	// drops to the base frequency while no_turbo is 1).
	HWMinKHz int64 `json:"cpuinfo_min_khz,omitempty"`
	HWMaxKHz int64 `json:"cpuinfo_max_khz,omitempty"`
	// BaseKHz is intel_pstate's base_frequency (the guaranteed, non-turbo
	// frequency).
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

// BaseFreqKHz is the frequency MPERF counts at on x86 (the TSC's, the
// nominal one): intel_pstate's base_frequency, else the "@ 2.60GHz" of
// /proc/cpuinfo's model name (Intel brand strings carry it). from names
// the source. Neither: an error wrapping os.ErrNotExist.
func BaseFreqKHz(fs hostfs.FS, cpu int) (khz int64, from string, err error) {
	if v, err := fs.ReadInt(CPUFreqPath(cpu, "base_frequency")); err == nil && v > 0 {
		return v, fmt.Sprintf("cpu%d/cpufreq/base_frequency", cpu), nil
	}
	m, err := CPUModel(fs)
	if err != nil {
		return 0, "", err
	}
	if v, ok := ParseModelGHz(m); ok {
		return v, fmt.Sprintf("/proc/cpuinfo model name %q", m), nil
	}
	return 0, "", fmt.Errorf("no base frequency: no cpu%d/cpufreq/base_frequency and no \"@ N.NNGHz\" in the model name %q: %w", cpu, m, os.ErrNotExist)
}

var modelGHzRE = regexp.MustCompile(`@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz`)

// ParseModelGHz reads the nominal frequency from a CPU model name such as
// "Intel(R) Xeon(R) Platinum 8488C @ 2.40GHz", in kHz.
func ParseModelGHz(model string) (int64, bool) {
	m := modelGHzRE.FindStringSubmatch(model)
	if m == nil {
		return 0, false
	}
	ghz, err := strconv.ParseFloat(m[1], 64)
	if err != nil || ghz <= 0 || ghz > 100 {
		return 0, false
	}
	return int64(ghz*1e6 + 0.5), true
}
