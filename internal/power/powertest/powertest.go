// Package powertest builds fake host roots with the cpufreq, intel_pstate
// and cpuidle layouts of real kernels, and a fake tuned-adm, for the tests
// of the power knobs and the frequency measurement.
//
// The attribute names and values follow the kernel: drivers/cpufreq/
// cpufreq.c (the policy attributes and the global boost file, present when
// the driver can boost), intel_pstate.c (the global status, no_turbo,
// min/max_perf_pct, turbo_pct, num_pstates, hwp_dynamic_boost in active
// HWP mode; base_frequency and the energy-performance preference per
// policy), acpi-cpufreq.c (the frequency table, bios_limit,
// freqdomain_cpus, turbo as base+1 MHz) and cppc_cpufreq.c (acpi_cppc
// performance levels; the boost file exists because the driver can set
// boost, even where highest_perf = nominal_perf leaves nothing to boost)
// and amd-pstate.c (active mode's amd-pstate-epp, the amd_pstate_* policy
// attributes, a per-policy boost file since 6.11). Emulate models what
// writes to them do. Assumed, not seen on a machine: the numbers
// (frequencies, P-state and CPPC performance levels) and the AWS Graviton bare-metal layout (cppc_cpufreq with one
// performance level: AWS documents a fixed frequency; its VMs have no
// cpufreq at all, which is the VMNone layout with Arch aarch64).
package powertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// Layout is a kind of host.
type Layout string

const (
	// IntelActive: intel_pstate in active mode with HWP (Xeon Gold 6346,
	// 3.1 GHz base, 3.6 GHz turbo), powersave, turbo on, min_perf_pct 22.
	IntelActive Layout = "intel_pstate-active"
	// IntelPassive: intel_pstate in passive mode (driver intel_cpufreq,
	// the generic governors, schedutil).
	IntelPassive Layout = "intel_pstate-passive"
	// ACPIBoost: acpi-cpufreq (intel_pstate=disable on a Xeon E5-2680 v4,
	// 2.4 GHz), a frequency table, cpufreq/boost 1.
	ACPIBoost Layout = "acpi-cpufreq-boost"
	// AMDPstate: amd-pstate in active mode (amd-pstate-epp, EPYC 9124:
	// nominal 3 GHz, highest 3.7 GHz through CPPC highest_perf 148 over
	// nominal_perf 120), powersave, cpufreq/boost 1. Its model name has no
	// "@ N GHz".
	AMDPstate Layout = "amd-pstate-epp"
	// GravitonCPPC: arm64 cppc_cpufreq with highest = nominal = lowest
	// performance (2.8 GHz fixed), cpufreq/boost 0, no cpuidle.
	GravitonCPPC Layout = "graviton-cppc"
	// VMNone: a VM without cpufreq or msr (the dev machine): an empty
	// cpufreq directory, cpuidle driver none, the hypervisor flag.
	VMNone Layout = "vm-no-cpufreq"
)

// Layouts are all of them.
var Layouts = []Layout{IntelActive, IntelPassive, ACPIBoost, AMDPstate, GravitonCPPC, VMNone}

// Build writes a fake root with cpus CPUs (SMT pairs n and n+cpus/2 on
// x86 when cpus is even) in layout l.
func Build(t testing.TB, l Layout, cpus int) hostfs.FS {
	t.Helper()
	root := t.TempDir()
	w := func(p, v string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const cpu = "/sys/devices/system/cpu"
	arm := l == GravitonCPPC
	w(cpu+"/online", fmt.Sprintf("0-%d", cpus-1))
	w(cpu+"/possible", fmt.Sprintf("0-%d", cpus-1))
	w(cpu+"/isolated", "")
	w("/proc/sys/kernel/osrelease", "6.8.0-rig")
	if arm {
		w("/proc/sys/kernel/arch", "aarch64")
	} else {
		w("/proc/sys/kernel/arch", "x86_64")
	}
	w("/proc/cpuinfo", cpuinfo(l, cpus))
	for c := 0; c < cpus; c++ {
		sib := fmt.Sprint(c)
		if !arm && cpus%2 == 0 {
			a, b := c%(cpus/2), c%(cpus/2)+cpus/2
			sib = fmt.Sprintf("%d,%d", a, b)
		}
		d := fmt.Sprintf("%s/cpu%d", cpu, c)
		w(d+"/topology/thread_siblings_list", sib)
		w(d+"/topology/core_id", fmt.Sprint(c%max(1, cpus/2)))
		w(d+"/topology/physical_package_id", "0")
		if l == IntelActive || l == IntelPassive || l == ACPIBoost || l == AMDPstate {
			idle(w, d)
		}
	}
	switch l {
	case IntelActive, IntelPassive:
		w(cpu+"/cpuidle/current_driver", "intel_idle")
		w(cpu+"/cpuidle/current_governor_ro", "menu")
	case ACPIBoost, AMDPstate:
		w(cpu+"/cpuidle/current_driver", "acpi_idle")
		w(cpu+"/cpuidle/current_governor_ro", "menu")
	case VMNone:
		w(cpu+"/cpuidle/current_driver", "none")
		if err := os.MkdirAll(filepath.Join(root, cpu, "cpufreq"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for c := 0; c < cpus; c++ {
		pol := policy(l, c)
		if pol == nil {
			continue
		}
		pd := fmt.Sprintf("%s/cpufreq/policy%d", cpu, c)
		for f, v := range pol {
			w(pd+"/"+f, v)
		}
		if err := os.Symlink(fmt.Sprintf("../cpufreq/policy%d", c), filepath.Join(root, fmt.Sprintf("%s/cpu%d/cpufreq", cpu, c))); err != nil {
			t.Fatal(err)
		}
		cp := fmt.Sprintf("%s/cpu%d/acpi_cppc/", cpu, c)
		switch l {
		case GravitonCPPC:
			for f, v := range map[string]string{"highest_perf": "280", "nominal_perf": "280", "lowest_nonlinear_perf": "280",
				"lowest_perf": "280", "nominal_freq": "2800", "lowest_freq": "2800", "reference_perf": "100",
				"feedback_ctrs": "ref:2862871373925 del:8015379394575", "wraparound_time": "18446744073709551615"} {
				w(cp+f, v)
			}
		case AMDPstate:
			for f, v := range map[string]string{"highest_perf": "148", "nominal_perf": "120", "lowest_nonlinear_perf": "72",
				"lowest_perf": "60", "nominal_freq": "3000", "lowest_freq": "1500"} {
				w(cp+f, v)
			}
		}
	}
	switch l {
	case IntelActive, IntelPassive:
		ip := cpu + "/intel_pstate/"
		w(ip+"no_turbo", "0")
		w(ip+"max_perf_pct", "100")
		w(ip+"min_perf_pct", "22")
		w(ip+"num_pstates", "29")
		w(ip+"turbo_pct", "14")
		w(ip+"status", map[Layout]string{IntelActive: "active", IntelPassive: "passive"}[l])
		if l == IntelActive {
			w(ip+"hwp_dynamic_boost", "0")
		}
	case ACPIBoost:
		w(cpu+"/cpufreq/boost", "1")
	case AMDPstate:
		w(cpu+"/cpufreq/boost", "1")
		w(cpu+"/amd_pstate/status", "active")
		w(cpu+"/amd_pstate/prefcore", "enabled")
	case GravitonCPPC:
		w(cpu+"/cpufreq/boost", "0")
	}
	return hostfs.FS{Root: root}
}

func idle(w func(string, string), d string) {
	for i, s := range []struct{ name, desc, lat, res string }{
		{"POLL", "CPUIDLE CORE POLL IDLE", "0", "0"},
		{"C1", "MWAIT 0x00", "2", "2"},
		{"C1E", "MWAIT 0x01", "10", "20"},
		{"C6", "MWAIT 0x20", "170", "600"},
	} {
		sd := fmt.Sprintf("%s/cpuidle/state%d/", d, i)
		w(sd+"name", s.name)
		w(sd+"desc", s.desc)
		w(sd+"latency", s.lat)
		w(sd+"residency", s.res)
		w(sd+"disable", "0")
		w(sd+"usage", fmt.Sprint(100*(i+1)))
		w(sd+"time", fmt.Sprint(1000*(i+1)))
		w(sd+"above", "0")
		w(sd+"below", "0")
	}
}

const genericGovernors = "conservative ondemand userspace powersave performance schedutil"

func policy(l Layout, c int) map[string]string {
	one := fmt.Sprint(c)
	switch l {
	case IntelActive, IntelPassive:
		p := map[string]string{
			"affected_cpus": one, "related_cpus": one,
			"base_frequency":   "3100000",
			"cpuinfo_max_freq": "3600000", "cpuinfo_min_freq": "800000",
			"energy_performance_available_preferences": "default performance balance_performance balance_power power",
			"energy_performance_preference":            "balance_performance",
			"scaling_cur_freq":                         "1200000",
			"scaling_max_freq":                         "3600000", "scaling_min_freq": "800000",
		}
		if l == IntelActive {
			p["cpuinfo_transition_latency"] = "0"
			p["scaling_available_governors"] = "performance powersave"
			p["scaling_driver"] = "intel_pstate"
			p["scaling_governor"] = "powersave"
			p["scaling_setspeed"] = "<unsupported>"
		} else {
			p["cpuinfo_transition_latency"] = "20000"
			p["scaling_available_governors"] = genericGovernors
			p["scaling_driver"] = "intel_cpufreq"
			p["scaling_governor"] = "schedutil"
			p["scaling_setspeed"] = "<unsupported>"
		}
		return p
	case ACPIBoost:
		var table []string
		table = append(table, "2401000")
		for f := 2400; f >= 1200; f -= 100 {
			table = append(table, fmt.Sprint(f*1000))
		}
		return map[string]string{
			"affected_cpus": one, "related_cpus": one, "freqdomain_cpus": one,
			"bios_limit": "2401000", "cpuinfo_cur_freq": "1200000",
			"cpuinfo_max_freq": "2401000", "cpuinfo_min_freq": "1200000", "cpuinfo_transition_latency": "10000",
			"scaling_available_frequencies": strings.Join(table, " "),
			"scaling_available_governors":   genericGovernors,
			"scaling_cur_freq":              "1200000", "scaling_driver": "acpi-cpufreq", "scaling_governor": "schedutil",
			"scaling_max_freq": "2401000", "scaling_min_freq": "1200000", "scaling_setspeed": "<unsupported>",
		}
	case AMDPstate:
		return map[string]string{
			"affected_cpus": one, "related_cpus": one, "boost": "1",
			"amd_pstate_highest_perf": "148", "amd_pstate_hw_prefcore": "enabled", "amd_pstate_prefcore_ranking": "148",
			"amd_pstate_lowest_nonlinear_freq": "1800000", "amd_pstate_max_freq": "3700000",
			"cpuinfo_max_freq": "3700000", "cpuinfo_min_freq": "1500000", "cpuinfo_transition_latency": "0",
			"energy_performance_available_preferences": "default performance balance_performance balance_power power",
			"energy_performance_preference":            "balance_performance",
			"scaling_available_governors":              "performance powersave",
			"scaling_cur_freq":                         "1500000", "scaling_driver": "amd-pstate-epp", "scaling_governor": "powersave",
			"scaling_max_freq": "3700000", "scaling_min_freq": "1500000", "scaling_setspeed": "<unsupported>",
		}
	case GravitonCPPC:
		return map[string]string{
			"affected_cpus": one, "related_cpus": one, "freqdomain_cpus": one,
			"cpuinfo_max_freq": "2800000", "cpuinfo_min_freq": "2800000", "cpuinfo_transition_latency": "0",
			"scaling_available_governors": genericGovernors,
			"scaling_cur_freq":            "2800000", "scaling_driver": "cppc_cpufreq", "scaling_governor": "performance",
			"scaling_max_freq": "2800000", "scaling_min_freq": "2800000", "scaling_setspeed": "<unsupported>",
		}
	}
	return nil
}

func cpuinfo(l Layout, cpus int) string {
	var b strings.Builder
	for c := 0; c < cpus; c++ {
		switch l {
		case GravitonCPPC:
			fmt.Fprintf(&b, "processor\t: %d\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh rng bti\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 1\n\n", c)
		default:
			model, flags := "Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr constant_tsc nonstop_tsc aperfmperf hwp hwp_epp"
			switch l {
			case ACPIBoost:
				model, flags = "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr constant_tsc nonstop_tsc aperfmperf ida"
			case AMDPstate:
				fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC 9124 16-Core Processor\ncpu MHz\t\t: 1500.000\nflags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr constant_tsc nonstop_tsc aperfmperf cpb hw_pstate cppc\n\n", c)
				continue
			case VMNone:
				model, flags = "Intel(R) Xeon(R) Processor @ 2.60GHz", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr constant_tsc nonstop_tsc hypervisor tsc_known_freq"
			}
			fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: %s\ncpu MHz\t\t: 2600.000\nflags\t\t: %s\n\n", c, model, flags)
		}
	}
	return b.String()
}

// MSRFixture writes /dev/cpu/N/msr below fs's root as a regular file with
// the given bytes at the given offsets: a read of 8 bytes at a register's
// number returns it little-endian, as the msr driver does. Registers
// closer than 8 apart overlap in a file (MPERF 0xE7 and APERF 0xE8 do:
// APERF's low 7 bytes are MPERF's high 7), so a fixture holds only such
// consistent pairs.
func MSRFixture(t testing.TB, fs hostfs.FS, cpu int, bytes map[int64][]byte) {
	t.Helper()
	p := fs.Path(fmt.Sprintf("/dev/cpu/%d/msr", cpu))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off, b := range bytes {
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

// TunedProfiles are the profiles of the fake tuned-adm (a RHEL 9 list).
var TunedProfiles = []string{"accelerator-performance", "balanced", "desktop", "hpc-compute", "latency-performance",
	"network-latency", "network-throughput", "powersave", "throughput-performance", "virtual-guest", "virtual-host"}

// FakeTuned writes an executable tuned-adm into a new directory (put it
// first in PATH, or use its path) that keeps its active profile and
// profile_mode in files next to it and prints what the real one prints
// (tuned/admin/admin.py) for active, list, profile_mode,
// profile NAME... (mode manual), auto_profile (the recommended profile,
// the one active at the start or balanced; mode auto) and off. TunedAuto
// makes the start auto. running false makes it report a stopped
// daemon. When root is not "", switching to network-latency sets what that
// profile sets below root (intel_pstate/min_perf_pct 100, CPU 0's
// governor performance) and switching away puts the saved values back, as
// tuned does. Calls are appended to the log file Calls(dir) names.
func FakeTuned(t testing.TB, active string, running bool, root string) (dir string) {
	t.Helper()
	dir = t.TempDir()
	rec := active
	if rec == "" {
		rec = "balanced"
	}
	for f, v := range map[string]string{"active_profile": active, "profile_mode": "manual", "recommended": rec} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := "1"
	if !running {
		run = "0"
	}
	var list strings.Builder
	for _, p := range TunedProfiles {
		fmt.Fprintf(&list, "echo '- %-28s- %s profile'\n", p, p)
	}
	script := `#!/bin/sh
# fake tuned-adm for rig's tests
D=$(dirname "$0")
ROOT='` + root + `'
echo "$*" >> "$D/calls"
act=$(cat "$D/active_profile")
active() {
  if [ ` + run + ` = 0 ] && [ -n "$act" ]; then
    echo "It seems that tuned daemon is not running, preset profile is not activated."
    echo "Preset profile: $act"; return 0
  fi
  if [ -z "$act" ]; then echo "No current active profile."; return 1; fi
  echo "Current active profile: $act"
}
unapply() {
  [ -n "$ROOT" ] && [ -f "$D/saved" ] || return 0
  while read -r p v; do printf '%s\n' "$v" > "$ROOT$p"; done < "$D/saved"
  rm -f "$D/saved"
}
apply() {
  [ -n "$ROOT" ] && [ "$1" = network-latency ] || return 0
  : > "$D/saved"
  for p in /sys/devices/system/cpu/intel_pstate/min_perf_pct /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; do
    [ -f "$ROOT$p" ] && echo "$p $(cat "$ROOT$p")" >> "$D/saved"
  done
  [ -f "$ROOT/sys/devices/system/cpu/intel_pstate/min_perf_pct" ] && echo 100 > "$ROOT/sys/devices/system/cpu/intel_pstate/min_perf_pct"
  [ -f "$ROOT/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor" ] && echo performance > "$ROOT/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
  return 0
}
case "$1" in
active) active; exit $? ;;
profile_mode) echo "Profile selection mode: $(cat "$D/profile_mode")"; exit 0 ;;
auto_profile) rec=$(cat "$D/recommended"); unapply; apply "$rec"; echo "$rec" > "$D/active_profile"; echo auto > "$D/profile_mode"; exit 0 ;;
list)
  echo "Available profiles:"
` + list.String() + `  active; exit 0 ;;
off) unapply; echo "" > "$D/active_profile"; echo manual > "$D/profile_mode"; exit 0 ;;
profile)
  shift
  for p in "$@"; do
    case " ` + strings.Join(TunedProfiles, " ") + ` " in *" $p "*) ;; *) echo "Requested profile '$p' doesn't exist." >&2; exit 1 ;; esac
  done
  unapply; apply "$@"
  echo "$*" > "$D/active_profile"; echo manual > "$D/profile_mode"; exit 0 ;;
esac
echo "fake tuned-adm: unknown command $1" >&2
exit 2
`
	if err := os.WriteFile(filepath.Join(dir, "tuned-adm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TunedAuto puts the fake tuned-adm of dir in profile_mode auto: its
// active profile is the one it recommends.
func TunedAuto(t testing.TB, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "profile_mode"), []byte("auto\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TunedActive reads the fake tuned-adm's active profile.
func TunedActive(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "active_profile"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Snapshot maps every regular file below root to its content, for
// comparing a tree before and after.
func Snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Diff lists the files that differ between two snapshots.
func Diff(a, b map[string]string) []string {
	var out []string
	for p, v := range a {
		if w, ok := b[p]; !ok || w != v {
			out = append(out, fmt.Sprintf("%s: %q → %q", p, v, b[p]))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p+": new")
		}
	}
	return out
}
