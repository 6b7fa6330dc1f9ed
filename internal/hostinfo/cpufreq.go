package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
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

// ReadFreq reads cpuN/cpufreq. Without cpufreq (VMs, fixed-frequency
// clouds) the error wraps os.ErrNotExist. Only scaling_governor is
// required; the other attributes are read where the driver has them.
func ReadFreq(fs hostfs.FS, cpu int) (rundir.Freq, error) {
	var f rundir.Freq
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

// ReadTurbo reads intel_pstate/no_turbo or, for acpi-cpufreq, amd-pstate
// and cppc_cpufreq, cpufreq/boost. Neither present: error wraps
// os.ErrNotExist. intel_pstate's min/max_perf_pct are absent (0) when the
// kernel runs it with per-CPU limits.
func ReadTurbo(fs hostfs.FS) (rundir.Turbo, error) {
	p := IntelPstateDir + "/no_turbo"
	v, err := fs.ReadInt(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rundir.Turbo{}, err // there, but unreadable: not "no turbo control"
	}
	if err == nil {
		t := rundir.Turbo{Enabled: v == 0, Source: p}
		t.PstateMode, _ = fs.ReadString(IntelPstateDir + "/status")
		t.MinPerfPct, _ = fs.ReadInt(IntelPstateDir + "/min_perf_pct")
		t.MaxPerfPct, _ = fs.ReadInt(IntelPstateDir + "/max_perf_pct")
		return t, nil
	}
	if v, err = fs.ReadInt(BoostPath); err != nil {
		return rundir.Turbo{}, err
	}
	return rundir.Turbo{Enabled: v != 0, Source: BoostPath}, nil
}
