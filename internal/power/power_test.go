package power_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/power/powertest"
)

func ptr[T any](v T) *T { return &v }

func facts(t *testing.T, fs hostfs.FS, tu power.Tuned) power.Facts {
	t.Helper()
	f, err := power.ReadFacts(context.Background(), fs, tu)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadFacts(t *testing.T) {
	for _, l := range powertest.Layouts {
		fs := powertest.Build(t, l, 4)
		f := facts(t, fs, nil)
		switch l {
		case powertest.IntelActive:
			fr := f.Freq[2]
			if fr.Driver != "intel_pstate" || fr.Governor != "powersave" || !slices.Equal(fr.Governors, []string{"performance", "powersave"}) ||
				fr.BaseKHz != 3100000 || fr.HWMaxKHz != 3600000 || fr.EPP != "balance_performance" || len(fr.EPPs) != 5 || !slices.Equal(fr.RelatedCPUs, []int{2}) {
				t.Errorf("%s: %+v", l, fr)
			}
			if f.Turbo == nil || !f.Turbo.Enabled || !f.Turbo.IntelPstate() || f.Turbo.MinPerfPct != 22 || f.Turbo.PstateMode != "active" || f.Arch != "x86_64" || f.Virtual {
				t.Errorf("%s: turbo %+v arch %s virtual %v", l, f.Turbo, f.Arch, f.Virtual)
			}
		case powertest.IntelPassive:
			if fr := f.Freq[0]; fr.Driver != "intel_cpufreq" || !slices.Contains(fr.Governors, "schedutil") || f.Turbo.PstateMode != "passive" {
				t.Errorf("%s: %+v %+v", l, fr, f.Turbo)
			}
		case powertest.ACPIBoost:
			fr := f.Freq[1]
			if fr.Driver != "acpi-cpufreq" || len(fr.TableKHz) != 14 || fr.TableKHz[0] != 2401000 || fr.BaseKHz != 0 {
				t.Errorf("%s: %+v", l, fr)
			}
			if f.Turbo == nil || f.Turbo.IntelPstate() || !f.Turbo.Enabled {
				t.Errorf("%s: turbo %+v", l, f.Turbo)
			}
		case powertest.AMDPstate:
			if fr := f.Freq[1]; fr.Driver != "amd-pstate-epp" || fr.BaseKHz != 3000000 || fr.HWMaxKHz != 3700000 || f.Turbo == nil || f.Turbo.IntelPstate() || !f.Turbo.Enabled {
				t.Errorf("%s: %+v %+v", l, fr, f.Turbo)
			}
		case powertest.GravitonCPPC:
			fr := f.Freq[3]
			if fr.Driver != "cppc_cpufreq" || !fr.Fixed() || fr.CPPCHighest != 280 || fr.CPPCNominal != 280 || f.Arch != "aarch64" {
				t.Errorf("%s: %+v arch %s", l, fr, f.Arch)
			}
		case powertest.VMNone:
			if len(f.Freq) != 0 || f.Turbo != nil || !f.Virtual {
				t.Errorf("%s: %+v", l, f)
			}
		}
	}
}

// TestValidate checks every knob against every layout: what each host
// refuses, and that the reason and the fix are in the words.
func TestValidate(t *testing.T) {
	cpu := []int{2}
	for _, c := range []struct {
		l      powertest.Layout
		s      power.Settings
		tuned  string
		field  string   // "" = accepted
		reason []string // parts of the reason
		notes  string
	}{
		{l: powertest.IntelActive, s: power.Settings{CPUs: cpu, Governor: "performance", Turbo: ptr(false), MinPerfPct: ptr(100), MaxFreqKHz: ptr[int64](3100000)}},
		{l: powertest.IntelActive, s: power.Settings{CPUs: cpu, Governor: "schedutil"}, field: "governor", reason: []string{`governor "schedutil" is not available on CPU 2`, "performance powersave"}},
		{l: powertest.IntelActive, s: power.Settings{CPUs: cpu, MinPerfPct: ptr(10)}, field: "min-perf-pct", reason: []string{"min-perf-pct 10 is below", "22 %"}},
		{l: powertest.IntelActive, s: power.Settings{CPUs: cpu, Turbo: ptr(false), MaxFreqKHz: ptr[int64](3600000)}, field: "max-freq", reason: []string{"outside CPU 2's range", "800 MHz..3.1 GHz", "turbo off lowers the top"}},
		{l: powertest.IntelActive, s: power.Settings{CPUs: cpu, MinFreqKHz: ptr[int64](5000000)}, field: "min-freq", reason: []string{"min-freq 5 GHz is outside", "800 MHz..3.6 GHz"}},
		{l: powertest.IntelActive, s: power.Settings{CPUs: []int{7}, Governor: "performance"}, field: "cpus", reason: []string{"CPU 7 on host h has no cpufreq policy"}},
		{l: powertest.IntelPassive, s: power.Settings{CPUs: cpu, Governor: "schedutil", Turbo: ptr(true), MaxPerfPct: ptr(80)}},
		{l: powertest.ACPIBoost, s: power.Settings{CPUs: cpu, Governor: "performance", Turbo: ptr(false), MinFreqKHz: ptr[int64](2400000)}},
		{l: powertest.ACPIBoost, s: power.Settings{MinPerfPct: ptr(100)}, field: "min-perf-pct", reason: []string{"intel_pstate's global limits", "cpufreq driver acpi-cpufreq"}},
		{l: powertest.ACPIBoost, s: power.Settings{CPUs: cpu, MinFreqKHz: ptr[int64](1250000)}, field: "min-freq", reason: []string{"not one of CPU 2's frequencies", "scaling_available_frequencies"}},
		{l: powertest.AMDPstate, s: power.Settings{CPUs: cpu, Turbo: ptr(false), MaxFreqKHz: ptr[int64](3000000)}},
		{l: powertest.AMDPstate, s: power.Settings{CPUs: cpu, Turbo: ptr(false), MaxFreqKHz: ptr[int64](3500000)}, field: "max-freq", reason: []string{"1.5 GHz..3 GHz", "turbo off lowers the top"}},
		{l: powertest.GravitonCPPC, s: power.Settings{Turbo: ptr(false)}, field: "turbo", reason: []string{"no boost range", "highest_perf 280 = nominal_perf 280", "AWS Graviton"}},
		{l: powertest.GravitonCPPC, s: power.Settings{CPUs: cpu, Governor: "performance"}, notes: "fixed 2.8 GHz"},
		{l: powertest.VMNone, s: power.Settings{Turbo: ptr(false)}, field: "turbo", reason: []string{"no turbo control", "a VM: the hypervisor owns P-states"}},
		{l: powertest.VMNone, s: power.Settings{CPUs: cpu, Governor: "performance"}, field: "governor", reason: []string{"no cpufreq policy on any CPU", "a VM"}},
		{l: powertest.VMNone, tuned: "network-latency", field: "tuned", reason: []string{"tuned is not installed on host h"}},
	} {
		fs := powertest.Build(t, c.l, 4)
		probs, notes := power.Validate("h", facts(t, fs, nil), c.s, c.tuned)
		switch {
		case c.field == "" && len(probs) > 0:
			t.Errorf("%s %+v: refused: %+v", c.l, c.s, probs)
		case c.field != "" && len(probs) == 0:
			t.Errorf("%s %+v: accepted", c.l, c.s)
		case c.field != "":
			p := probs[0]
			if p.Field != c.field || p.Hint == "" {
				t.Errorf("%s: field %q hint %q, want field %q", c.l, p.Field, p.Hint, c.field)
			}
			for _, part := range c.reason {
				if !strings.Contains(p.Reason, part) {
					t.Errorf("%s: reason lacks %q: %s", c.l, part, p.Reason)
				}
			}
		}
		if c.notes != "" && !strings.Contains(strings.Join(notes, "\n"), c.notes) {
			t.Errorf("%s: notes lack %q: %v", c.l, c.notes, notes)
		}
	}
}

func TestValidateTuned(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 2)
	tu := power.TunedAdm{Path: filepath.Join(powertest.FakeTuned(t, "balanced", true, ""), "tuned-adm")}
	f := facts(t, fs, tu)
	if f.Tuned == nil || f.Tuned.Active != "balanced" || !f.Tuned.Running || len(f.Tuned.Profiles) != len(powertest.TunedProfiles) {
		t.Fatalf("tuned facts %+v", f.Tuned)
	}
	if p, _ := power.Validate("h", f, power.Settings{}, "network-latency"); len(p) != 0 {
		t.Fatal(p)
	}
	if p, _ := power.Validate("h", f, power.Settings{}, "network-latancy"); len(p) != 1 || !strings.Contains(p[0].Reason, `"network-latancy" does not exist`) || !strings.Contains(p[0].Hint, "network-latency") {
		t.Fatalf("%+v", p)
	}
	stopped := power.TunedAdm{Path: filepath.Join(powertest.FakeTuned(t, "balanced", false, ""), "tuned-adm")}
	if p, _ := power.Validate("h", facts(t, fs, stopped), power.Settings{}, "network-latency"); len(p) != 1 || !strings.Contains(p[0].Reason, "tuned does not run") || !strings.Contains(p[0].Hint, "systemctl start tuned") {
		t.Fatalf("%+v", p)
	}
}

// TestPlanOrder: on intel_pstate min_perf_pct is recorded first; a turbo
// off comes after the policies' limits and a turbo on before them (the
// limits are written and read unclamped), the perf limits after turbo
// (no_turbo squashes min_perf_pct); a raised pair writes max before min.
func TestPlanOrder(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 2)
	if err := fs.WriteFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "1000000\n"); err != nil {
		t.Fatal(err)
	}
	amd := powertest.Build(t, powertest.AMDPstate, 2)
	for _, c := range []struct {
		fs   hostfs.FS
		s    power.Settings
		want []string
	}{
		{fs, power.Settings{CPUs: []int{0, 1}, Turbo: ptr(false), MinPerfPct: ptr(100), MinFreqKHz: ptr[int64](2000000), MaxFreqKHz: ptr[int64](3000000)},
			[]string{"intel_pstate/min_perf_pct=22", "cpu0/cpufreq/scaling_max_freq=3000000", "cpu0/cpufreq/scaling_min_freq=2000000",
				"cpu1/cpufreq/scaling_min_freq=2000000", "cpu1/cpufreq/scaling_max_freq=3000000", "intel_pstate/no_turbo=1", "intel_pstate/min_perf_pct=100"}},
		{fs, power.Settings{CPUs: []int{1}, Turbo: ptr(true), MinPerfPct: ptr(100), MaxFreqKHz: ptr[int64](3400000)},
			[]string{"intel_pstate/min_perf_pct=22", "intel_pstate/no_turbo=0", "intel_pstate/min_perf_pct=100", "cpu1/cpufreq/scaling_max_freq=3400000"}},
		{amd, power.Settings{CPUs: []int{1}, Turbo: ptr(false), MaxFreqKHz: ptr[int64](2800000)},
			[]string{"cpu1/cpufreq/scaling_max_freq=2800000", "cpufreq/boost=0"}},
	} {
		ch, err := power.Plan(c.fs, c.s)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range ch {
			got = append(got, strings.TrimPrefix(c.Path, "/sys/devices/system/cpu/")+"="+c.Value)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("order\n%v\nwant\n%v", got, c.want)
		}
	}
	if _, err := power.Plan(powertest.Build(t, powertest.VMNone, 2), power.Settings{Turbo: ptr(true)}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("turbo on a VM: %v", err)
	}
}

func TestNoTuned(t *testing.T) {
	tu := power.TunedAdm{Path: ""}
	t.Setenv("PATH", t.TempDir())
	if _, err := tu.State(context.Background()); !errors.Is(err, power.ErrNoTuned) {
		t.Fatalf("state without tuned-adm: %v", err)
	}
	f := facts(t, powertest.Build(t, powertest.IntelActive, 2), tu)
	if f.Tuned != nil {
		t.Fatalf("tuned facts without tuned: %+v", f.Tuned)
	}
}

func TestParseTunedAdm(t *testing.T) {
	for _, c := range []struct {
		out     string
		active  string
		running bool
		n       int
		err     bool
	}{
		{"Current active profile: network-latency\n", "network-latency", true, 0, false},
		{"Profile selection mode: auto\n", "", true, 0, false},
		{"Profile selection mode: sideways\n", "", true, 0, true},
		{"Current active profile: balanced my-extra\nCurrent post-loaded profile: my-extra\n", "balanced my-extra", true, 0, false},
		{"No current active profile.\n", "", true, 0, false},
		{"It seems that tuned daemon is not running, preset profile is not activated.\nPreset profile: throughput-performance\n", "throughput-performance", false, 0, false},
		{"Available profiles:\n- balanced                    - General non-specialized TuneD profile\n- network-latency             - Optimize for deterministic performance\nCurrent active profile: balanced\n", "balanced", true, 2, false},
		{"Cannot talk to TuneD daemon via DBus.\n", "", true, 0, true},
		{"", "", true, 0, true},
	} {
		st, err := power.ParseTunedAdm(c.out)
		if (err != nil) != c.err || st.Active != c.active || st.Running != c.running || len(st.Profiles) != c.n {
			t.Errorf("%q: %+v %v", c.out, st, err)
		}
	}
}

func FuzzParseTunedAdm(f *testing.F) {
	f.Add("Available profiles:\n- a - x\nCurrent active profile: a\n")
	f.Add("It seems that tuned daemon is not running, preset profile is not activated.\nPreset profile: b\n")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := power.ParseTunedAdm(s)
		if err == nil && st.Output != strings.TrimSpace(s) {
			t.Fatal("output not kept")
		}
	})
}

func TestDescribe(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 4)
	s := power.Settings{CPUs: []int{3}, Governor: "performance", Turbo: ptr(false), MinPerfPct: ptr(100)}
	got := strings.Join(power.Describe(context.Background(), s, "network-latency", &fs, nil), "\n")
	for _, want := range []string{"tuned: tuned-adm profile network-latency", "power: min-perf-pct 22 recorded (no_turbo 1 lowers it: the restore writes it back last): intel_pstate/min_perf_pct 22 → 22", "power: turbo off: intel_pstate/no_turbo 0 → 1",
		"power: min-perf-pct 100 (all CPUs): intel_pstate/min_perf_pct 22 → 100", "power: governor performance on CPU 3: cpu3/cpufreq/scaling_governor powersave → performance"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe lacks %q:\n%s", want, got)
		}
	}
	remote := strings.Join(power.Describe(context.Background(), s, "", nil, nil), "\n")
	if !strings.Contains(remote, "power: governor performance on CPU 3 (cpufreq/scaling_governor)") || !strings.Contains(remote, "turbo off (intel_pstate/no_turbo or cpufreq/boost") {
		t.Errorf("describe without the host:\n%s", remote)
	}
}

func TestKHz(t *testing.T) {
	for k, want := range map[int64]string{3100000: "3.1 GHz", 2401000: "2401 MHz", 800000: "800 MHz", 2800000: "2.8 GHz", 1234567: "1234567 kHz", 3000000: "3 GHz"} {
		if got := power.KHz(k); got != want {
			t.Errorf("KHz(%d) = %q, want %q", k, got, want)
		}
	}
}
