package power

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// Field names of the scenario keys, for Problem.Field.
const (
	FieldPower      = ""             // the power block as a whole
	FieldCPUs       = "cpus"         // power.cpus
	FieldGovernor   = "governor"     // power.governor
	FieldTurbo      = "turbo"        // power.turbo
	FieldMinPerfPct = "min-perf-pct" // power.min-perf-pct
	FieldMaxPerfPct = "max-perf-pct" // power.max-perf-pct
	FieldMinFreq    = "min-freq"     // power.min-freq
	FieldMaxFreq    = "max-freq"     // power.max-freq
	FieldTuned      = "tuned"        // the arm's tuned:
)

// Problem is a knob the host cannot take: Field names the knob (one of
// the Field constants), Reason what is wrong, Hint the fix.
type Problem struct {
	Field, Reason, Hint string
}

// Validate checks s and a tuned profile ("" = none) against a host's
// facts. It returns the knobs the host refuses and notes on knobs that
// will change less than they say (a fixed-frequency policy, a policy that
// other CPUs share).
func Validate(host string, f Facts, s Settings, tuned string) (problems []Problem, notes []string) {
	bad := func(field, hint, format string, a ...any) {
		problems = append(problems, Problem{field, fmt.Sprintf(format, a...), hint})
	}
	if tuned != "" {
		switch t := f.Tuned; {
		case t == nil:
			bad(FieldTuned, "install tuned (dnf install tuned; systemctl enable --now tuned), or set the knobs themselves with power: and cstate:",
				"tuned is not installed on host %s (no tuned-adm in PATH)", host)
		case t.Err != "":
			bad(FieldTuned, "check `tuned-adm list` on the host", "tuned-adm on host %s failed: %s", host, t.Err)
		case !t.Running:
			bad(FieldTuned, "start it: systemctl start tuned (rig does not start services)",
				"tuned does not run on host %s: tuned-adm would only preset the profile", host)
		default:
			if m := hasProfile(*t, tuned); m != "" {
				bad(FieldTuned, "profiles there: "+strings.Join(t.Profiles, ", "), "tuned profile %q does not exist on host %s", m, host)
			}
		}
	}
	if s.IsZero() {
		return problems, notes
	}
	if s.Turbo != nil {
		if p := turboProblem(host, f); p != "" {
			bad(FieldTurbo, "leave turbo out on this host; to hold the frequency fixed use a host whose CPUs let the OS control it (AWS: a .metal size)", "%s", p)
		}
	}
	if s.MinPerfPct != nil || s.MaxPerfPct != nil {
		field := FieldMinPerfPct
		if s.MinPerfPct == nil {
			field = FieldMaxPerfPct
		}
		t := f.Turbo
		switch {
		case t == nil || !t.IntelPstate():
			drv := "no cpufreq driver"
			if fr, ok := f.anyFreq(); ok {
				drv = "cpufreq driver " + fr.Driver
			}
			bad(field, "use min-freq/max-freq (scaling_min_freq/scaling_max_freq) with this driver",
				"min-perf-pct and max-perf-pct are intel_pstate's global limits, and host %s has %s (no %s/min_perf_pct)", host, drv, hostinfo.IntelPstateDir)
		case t.MaxPerfPct == 0:
			bad(field, "use min-freq/max-freq: with per-CPU limits they are the limits",
				"intel_pstate on host %s runs with per-CPU limits (intel_pstate=per_cpu_perf_limits): there is no global min_perf_pct/max_perf_pct", host)
		default:
			lo := f.minPerfFloor()
			if v := s.MinPerfPct; v != nil && *v < lo {
				bad(FieldMinPerfPct, fmt.Sprintf("use %d..100", lo),
					"min-perf-pct %d is below what intel_pstate grants on host %s: its lowest P-state is %d %% of the highest (cpuinfo_min_freq/cpuinfo_max_freq), the kernel would clamp it", *v, host, lo)
			}
			if v := s.MaxPerfPct; v != nil && *v < lo {
				bad(FieldMaxPerfPct, fmt.Sprintf("use %d..100", lo),
					"max-perf-pct %d is below intel_pstate's lowest P-state on host %s (%d %%)", *v, host, lo)
			}
		}
	}
	if !s.PerCPU() {
		return problems, notes
	}
	if len(f.Freq) == 0 {
		field := FieldGovernor
		switch {
		case s.Governor != "":
		case s.MinFreqKHz != nil:
			field = FieldMinFreq
		default:
			field = FieldMaxFreq
		}
		bad(field, "leave power out on this host (or keep only what it has); compare hosts rather than arms, or use a host whose frequency the OS controls",
			"host %s has no cpufreq policy on any CPU (no /sys/devices/system/cpu/cpuN/cpufreq): %s", host, f.noCpufreq())
		return problems, notes
	}
	seen := map[int]bool{}
	for _, cpu := range s.CPUs {
		fr, ok := f.Freq[cpu]
		if !ok {
			bad(FieldCPUs, "pick CPUs that have one: "+cpulist.Format(f.cpus()),
				"CPU %d on host %s has no cpufreq policy", cpu, host)
			continue
		}
		if seen[cpu] {
			continue
		}
		for _, c := range fr.RelatedCPUs {
			seen[c] = true
		}
		if len(fr.RelatedCPUs) > 1 {
			notes = append(notes, fmt.Sprintf("power on host %s: CPU %d's cpufreq policy is shared by CPUs %s (related_cpus): they all change", host, cpu, cpulist.Format(fr.RelatedCPUs)))
		}
		if fr.Fixed() {
			notes = append(notes, fmt.Sprintf("power on host %s: CPU %d runs at a fixed %s (cpuinfo_min_freq = cpuinfo_max_freq, driver %s): governor and limits change nothing", host, cpu, KHz(fr.HWMaxKHz), fr.Driver))
		}
		if g := s.Governor; g != "" && !slices.Contains(fr.Governors, g) {
			hint := "governors there: " + strings.Join(fr.Governors, ", ")
			if fr.Driver == "intel_pstate" {
				hint += " (intel_pstate in active mode has only these; schedutil and ondemand need intel_pstate=passive on the kernel command line)"
			}
			bad(FieldGovernor, hint, "governor %q is not available on CPU %d of host %s (scaling_available_governors: %s)", g, cpu, host, strings.Join(fr.Governors, " "))
		}
		hi := fr.HWMaxKHz
		if s.Turbo != nil && !*s.Turbo && fr.BaseKHz > 0 && (strings.HasPrefix(fr.Driver, "intel_") || strings.HasPrefix(fr.Driver, "amd-pstate")) {
			hi = fr.BaseKHz // no_turbo 1 or boost 0 clamps the limits to the base frequency
		}
		for _, x := range []struct {
			field string
			v     *int64
		}{{FieldMinFreq, s.MinFreqKHz}, {FieldMaxFreq, s.MaxFreqKHz}} {
			if x.v == nil {
				continue
			}
			if fr.HWMinKHz == 0 || fr.HWMaxKHz == 0 {
				bad(x.field, "leave the frequency limits out on this host", "CPU %d of host %s does not say its frequency range (no cpuinfo_min_freq/cpuinfo_max_freq)", cpu, host)
				continue
			}
			if *x.v < fr.HWMinKHz || *x.v > hi {
				why := "cpuinfo_min_freq..cpuinfo_max_freq"
				if hi != fr.HWMaxKHz {
					why = "cpuinfo_min_freq..the base frequency: turbo off lowers the top to it (base_frequency, amd-pstate's acpi_cppc/nominal_freq)"
				}
				bad(x.field, fmt.Sprintf("use %s..%s", KHz(fr.HWMinKHz), KHz(hi)),
					"%s %s is outside CPU %d's range on host %s: %s..%s (%s)", x.field, KHz(*x.v), cpu, host, KHz(fr.HWMinKHz), KHz(hi), why)
				continue
			}
			if len(fr.TableKHz) > 0 && !slices.Contains(fr.TableKHz, *x.v) {
				var l []string
				for _, k := range fr.TableKHz {
					l = append(l, KHz(k))
				}
				bad(x.field, "use one of: "+strings.Join(l, ", "),
					"%s %s is not one of CPU %d's frequencies on host %s (driver %s snaps limits to scaling_available_frequencies)", x.field, KHz(*x.v), cpu, host, fr.Driver)
			}
		}
	}
	return problems, notes
}

// turboProblem says why turbo cannot be switched on this host, or "".
func turboProblem(host string, f Facts) string {
	fr, hasFreq := f.anyFreq()
	t := f.Turbo
	switch {
	case t == nil && !hasFreq:
		return fmt.Sprintf("host %s has no turbo control: no %s/no_turbo and no %s (%s)", host, hostinfo.IntelPstateDir, hostinfo.BoostPath, f.noCpufreq())
	case t == nil:
		return fmt.Sprintf("host %s has no turbo control: no %s/no_turbo and no %s (cpufreq driver %s has no boost)", host, hostinfo.IntelPstateDir, hostinfo.BoostPath, fr.Driver)
	case t.IntelPstate() && t.PstateMode == "off":
		return fmt.Sprintf("intel_pstate on host %s is off (status: off): its no_turbo does nothing", host)
	case !t.IntelPstate() && fr.Driver == "cppc_cpufreq" && fr.CPPCHighest > 0 && fr.CPPCHighest <= fr.CPPCNominal:
		return fmt.Sprintf("host %s has no boost range: ACPI CPPC highest_perf %d = nominal_perf %d (a fixed-frequency CPU, such as AWS Graviton); %s cannot switch anything",
			host, fr.CPPCHighest, fr.CPPCNominal, hostinfo.BoostPath)
	}
	return ""
}

// minPerfFloor is intel_pstate's lowest min_perf_pct: its lowest P-state
// as a share of the highest (the kernel's min_perf_pct_min()).
func (f Facts) minPerfFloor() int {
	fr, ok := f.anyFreq()
	if !ok || fr.HWMaxKHz == 0 {
		return 0
	}
	return int(fr.HWMinKHz * 100 / fr.HWMaxKHz)
}

func (f Facts) anyFreq() (rundir.Freq, bool) {
	for _, c := range f.cpus() {
		return f.Freq[c], true
	}
	return rundir.Freq{}, false
}

func (f Facts) cpus() []int {
	var out []int
	for c := range f.Freq {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// KHz formats a frequency in kHz as GHz or MHz.
func KHz(k int64) string {
	switch {
	case k >= 1_000_000 && k%10_000 == 0:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", float64(k)/1e6), "0"), ".") + " GHz"
	case k%1000 == 0:
		return fmt.Sprintf("%d MHz", k/1000)
	}
	return fmt.Sprintf("%d kHz", k)
}
