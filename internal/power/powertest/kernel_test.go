package powertest

import (
	"errors"
	"syscall"
	"testing"
)

// TestEmulate checks the model against what the kernel sources say each
// write does.
func TestEmulate(t *testing.T) {
	const cpu = "/sys/devices/system/cpu/"
	for _, k := range Kernels {
		fs := Emulate(t, Build(t, IntelActive, 2), k)
		write := func(p, v string) {
			t.Helper()
			if err := fs.WriteFile(cpu+p, v+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		expect := func(step string, want map[string]string) {
			t.Helper()
			for p, v := range want {
				if got, _ := fs.ReadString(cpu + p); got != v {
					t.Errorf("%s, %s: %s = %s, want %s", k, step, p, got, v)
				}
			}
		}
		write("intel_pstate/min_perf_pct", "100")
		write("cpu1/cpufreq/scaling_max_freq", "3400000")
		cpuinfo := map[Kernel]string{Linux5: "3600000", Linux610: "3100000"}[k]
		write("intel_pstate/no_turbo", "1")
		expect("no_turbo 1", map[string]string{"intel_pstate/min_perf_pct": "86", "cpu0/cpufreq/scaling_max_freq": "3100000",
			"cpu1/cpufreq/scaling_max_freq": "3100000", "cpu0/cpufreq/cpuinfo_max_freq": cpuinfo})
		write("intel_pstate/min_perf_pct", "100") // store_min_perf_pct clamps to max_perf_pct only
		write("intel_pstate/no_turbo", "1")       // no change: no squash
		expect("min_perf_pct 100 under no_turbo", map[string]string{"intel_pstate/min_perf_pct": "100"})
		write("intel_pstate/min_perf_pct", "5")
		write("intel_pstate/no_turbo", "0")
		expect("no_turbo 0", map[string]string{"intel_pstate/min_perf_pct": "22", "cpu0/cpufreq/scaling_max_freq": "3600000",
			"cpu1/cpufreq/scaling_max_freq": "3400000", "cpu0/cpufreq/cpuinfo_max_freq": "3600000"})
		for p, want := range map[string]error{"cpu0/cpufreq/cpuinfo_max_freq": syscall.EACCES, "cpu0/cpufreq/scaling_governor": syscall.EINVAL,
			"intel_pstate/status": syscall.EINVAL, "intel_pstate/no_turbo": syscall.EINVAL} {
			if err := fs.WriteFile(cpu+p, "schedutil"); !errors.Is(err, want) {
				t.Errorf("%s: write schedutil to %s: %v, want %v", k, p, err, want)
			}
		}
	}
	amd := Emulate(t, Build(t, AMDPstate, 2), Linux610)
	acpi := Emulate(t, Build(t, ACPIBoost, 2), Linux610)
	for _, b := range []string{"0", "1"} { // acpi-cpufreq's set_boost leaves the limits alone
		if err := amd.WriteFile(cpu+"cpufreq/boost", b); err != nil {
			t.Fatal(err)
		}
		if err := acpi.WriteFile(cpu+"cpufreq/boost", b); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"0": "3000000", "1": "3700000"}[b]
		for _, p := range []string{"cpu1/cpufreq/scaling_max_freq", "cpu1/cpufreq/cpuinfo_max_freq"} {
			if got, _ := amd.ReadString(cpu + p); got != want {
				t.Errorf("amd boost %s: %s = %s, want %s", b, p, got, want)
			}
			if got, _ := acpi.ReadString(cpu + p); got != "2401000" {
				t.Errorf("acpi boost %s: %s = %s, want 2401000", b, p, got)
			}
		}
		if got, _ := amd.ReadString(cpu + "cpu1/cpufreq/boost"); got != b {
			t.Errorf("amd boost %s: policy boost %s", b, got)
		}
	}
}
