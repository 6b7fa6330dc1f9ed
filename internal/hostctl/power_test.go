package hostctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

func ptr[T any](v T) *T { return &v }

// TestPowerArm applies a whole runtime-tuning stage as one arm (a tuned
// profile, performance governor, turbo off, C1E and C6 disabled) on a fake
// intel_pstate host, checks every value, and undoes it to the byte; an arm
// that fails half way takes back what it did, the tuned profile included.
func TestPowerArm(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 4)
	before := powertest.Snapshot(t, fs.Root)
	dir := powertest.FakeTuned(t, "balanced", true, fs.Root)
	t.Setenv(power.EnvTunedAdm, filepath.Join(dir, "tuned-adm"))
	j, err := journal.Open(t.TempDir(), Handlers(&nicctl.Env{NIC: facts.NIC{FS: fs}}))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	h := &Host{FS: fs, Journal: j}
	k := scenario.Knobs{Responder: scenario.Responder{CPU: ptr(2)}, Tuned: ptr("network-latency"),
		Power:  &power.Settings{Governor: "performance", Turbo: ptr(false)},
		CState: &scenario.CState{Disable: []string{"C1E", "C6"}}}
	ap, err := Apply(context.Background(), h, Arm{Name: "runtime", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"intel_pstate/no_turbo": "1", "cpu2/cpufreq/scaling_governor": "performance",
		"cpu2/cpuidle/state2/disable": "1", "cpu2/cpuidle/state3/disable": "1", "intel_pstate/min_perf_pct": "100"} {
		if got, _ := fs.ReadString("/sys/devices/system/cpu/" + p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	rep := strings.Join(ap.Report, "\n")
	for _, want := range []string{"tuned: profile balanced → network-latency", "power: turbo off: intel_pstate/no_turbo 0 → 1", "power: governor performance on CPU 2"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("not restored:\n%s", strings.Join(d, "\n"))
	}
	if got := powertest.TunedActive(t, dir); got != "balanced" {
		t.Fatalf("tuned %q", got)
	}

	// An idle state the CPU lacks fails after tuned, turbo and the
	// governor were set: all come back.
	k.CState = &scenario.CState{Disable: []string{"C7"}}
	if _, err := Apply(context.Background(), h, Arm{Name: "bad", Knobs: k}); err == nil || !strings.Contains(err.Error(), `no idle state "C7"`) {
		t.Fatalf("apply with an idle state the CPU lacks: %v", err)
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("a failed arm left changes:\n%s", strings.Join(d, "\n"))
	}
	if got := powertest.TunedActive(t, dir); got != "balanced" {
		t.Fatalf("tuned after a failed arm: %q", got)
	}
}

func openJournal(t *testing.T, fs hostfs.FS, tu power.Tuned) *journal.Journal {
	t.Helper()
	h := journal.Handlers{KindTuned: tunedUndo(tu)}
	h[journal.KindSysfs] = journal.SysfsUndo(fs, fs.Root)
	j, err := journal.Open(t.TempDir(), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// TestApplyRestore applies on every layout what it accepts, through a
// model of each kernel's side effects (no_turbo squashes min_perf_pct and
// clamps the policies' limits, boost 0 on amd-pstate clamps them too),
// reads every value back, and restores the tree byte for byte — also on
// hosts tuned to min_perf_pct 100 and on a host whose turbo was off.
func TestApplyRestore(t *testing.T) {
	const ip = "/sys/devices/system/cpu/intel_pstate/"
	for _, c := range []struct {
		name string
		l    powertest.Layout
		host map[string]string // written through the model before the snapshot, in order
		s    power.Settings
		want map[string]string // host path → value after apply
	}{
		{"tuned", powertest.IntelActive, map[string]string{"min_perf_pct": "100"},
			power.Settings{CPUs: []int{1, 3}, Governor: "performance", Turbo: ptr(false), MinPerfPct: ptr(100), MaxPerfPct: ptr(100), MaxFreqKHz: ptr[int64](3000000)},
			map[string]string{"intel_pstate/no_turbo": "1", "intel_pstate/min_perf_pct": "100", "cpu1/cpufreq/scaling_governor": "performance",
				"cpu3/cpufreq/scaling_governor": "performance", "cpu3/cpufreq/scaling_max_freq": "3000000", "cpu0/cpufreq/scaling_governor": "powersave",
				"cpu0/cpufreq/scaling_max_freq": "3100000"}},
		{"turbo-only", powertest.IntelActive, map[string]string{"min_perf_pct": "100"}, power.Settings{Turbo: ptr(false)},
			map[string]string{"intel_pstate/no_turbo": "1", "intel_pstate/min_perf_pct": "86", "cpu2/cpufreq/scaling_max_freq": "3100000"}},
		{"limits", powertest.IntelActive, nil, power.Settings{CPUs: []int{2}, Turbo: ptr(false), MinFreqKHz: ptr[int64](2000000), MaxFreqKHz: ptr[int64](3000000)},
			map[string]string{"cpu2/cpufreq/scaling_min_freq": "2000000", "cpu2/cpufreq/scaling_max_freq": "3000000", "cpu1/cpufreq/scaling_max_freq": "3100000"}},
		{"turbo-on", powertest.IntelActive, map[string]string{"no_turbo": "1", "min_perf_pct": "100"},
			power.Settings{CPUs: []int{1}, Turbo: ptr(true), MaxFreqKHz: ptr[int64](3400000)},
			map[string]string{"intel_pstate/no_turbo": "0", "intel_pstate/min_perf_pct": "100", "cpu1/cpufreq/scaling_max_freq": "3400000", "cpu0/cpufreq/scaling_max_freq": "3600000"}},
		{"passive", powertest.IntelPassive, map[string]string{"min_perf_pct": "100"},
			power.Settings{CPUs: []int{0}, Governor: "performance", Turbo: ptr(false), MinPerfPct: ptr(100), MaxFreqKHz: ptr[int64](3000000)},
			map[string]string{"cpu0/cpufreq/scaling_governor": "performance", "cpu0/cpufreq/scaling_min_freq": "3000000", "cpu0/cpufreq/scaling_max_freq": "3000000",
				"cpu1/cpufreq/scaling_min_freq": "3100000"}},
		{"passive-limits", powertest.IntelPassive, nil, power.Settings{CPUs: []int{0}, Governor: "performance", MinFreqKHz: ptr[int64](3100000), MaxFreqKHz: ptr[int64](3100000)},
			map[string]string{"cpu0/cpufreq/scaling_governor": "performance", "cpu0/cpufreq/scaling_min_freq": "3100000", "cpu0/cpufreq/scaling_max_freq": "3100000"}},
		{"acpi", powertest.ACPIBoost, nil, power.Settings{CPUs: []int{2}, Governor: "performance", Turbo: ptr(false), MinFreqKHz: ptr[int64](2400000)},
			map[string]string{"cpufreq/boost": "0", "cpu2/cpufreq/scaling_governor": "performance", "cpu2/cpufreq/scaling_min_freq": "2400000"}},
		{"amd", powertest.AMDPstate, nil, power.Settings{CPUs: []int{1}, Governor: "performance", Turbo: ptr(false), MinFreqKHz: ptr[int64](2000000), MaxFreqKHz: ptr[int64](2800000)},
			map[string]string{"cpufreq/boost": "0", "cpu1/cpufreq/boost": "0", "cpu1/cpufreq/scaling_max_freq": "2800000", "cpu0/cpufreq/scaling_max_freq": "3000000",
				"cpu0/cpufreq/cpuinfo_max_freq": "3000000"}},
		{"graviton", powertest.GravitonCPPC, nil, power.Settings{CPUs: []int{1}, Governor: "schedutil"},
			map[string]string{"cpu1/cpufreq/scaling_governor": "schedutil"}},
	} {
		for _, k := range powertest.Kernels {
			t.Run(c.name+"/"+string(k), func(t *testing.T) {
				fs := powertest.Emulate(t, powertest.Build(t, c.l, 4), k)
				for _, f := range []string{"no_turbo", "min_perf_pct"} {
					if v, ok := c.host[f]; ok {
						if err := fs.WriteFile(ip+f, v); err != nil {
							t.Fatal(err)
						}
					}
				}
				before := powertest.Snapshot(t, fs.Root)
				j := openJournal(t, fs, nil)
				report, err := applyPower(context.Background(), j, fs, c.s)
				if err != nil {
					t.Fatalf("%v\n%s", err, strings.Join(report, "\n"))
				}
				for p, v := range c.want {
					got, err := fs.ReadString("/sys/devices/system/cpu/" + p)
					if err != nil || got != v {
						t.Errorf("%s = %q (%v), want %q", p, got, err, v)
					}
				}
				if len(report) == 0 || !strings.Contains(report[0], "→") {
					t.Errorf("report %q", report)
				}
				if _, err := j.Undo(context.Background()); err != nil {
					t.Fatal(err)
				}
				if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) > 0 {
					t.Fatalf("not restored:\n%s\napplied:\n%s", strings.Join(d, "\n"), strings.Join(report, "\n"))
				}
			})
		}
	}
}

// TestApplyRefusedWithoutControl: on the VM layout (no cpufreq, no turbo)
// and on the fixed-frequency arm64 layout nothing is written and nothing
// is journaled; the error says what is missing.
func TestApplyRefusedWithoutControl(t *testing.T) {
	for _, c := range []struct {
		l    powertest.Layout
		s    power.Settings
		want string
	}{
		{powertest.VMNone, power.Settings{CPUs: []int{1}, Governor: "performance"}, "CPU 1 cpufreq"},
		{powertest.VMNone, power.Settings{Turbo: ptr(false)}, "turbo"},
		{powertest.VMNone, power.Settings{MinPerfPct: ptr(100)}, "min/max-perf-pct"},
		{powertest.GravitonCPPC, power.Settings{MaxPerfPct: ptr(100)}, "min/max-perf-pct"},
	} {
		fs := powertest.Build(t, c.l, 2)
		before := powertest.Snapshot(t, fs.Root)
		j := openJournal(t, fs, nil)
		_, err := applyPower(context.Background(), j, fs, c.s)
		if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v", c.l, c.s, err)
		}
		if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) > 0 || j.Mark() != 0 {
			t.Errorf("%s: changed %v, journal at %d", c.l, d, j.Mark())
		}
	}
}

// TestApplyFailures: a write that fails names the file; a value the
// kernel does not keep (here a file that swallows writes, like a clamp
// that reads back something else) is an error, and the change stays
// journaled for the caller's undo.
func TestApplyFailures(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 2)
	j := openJournal(t, fs, nil)
	p := fs.Path("/sys/devices/system/cpu/intel_pstate/min_perf_pct")
	os.Remove(p)
	os.Mkdir(p, 0o755)
	if _, err := applyPower(context.Background(), j, fs, power.Settings{MinPerfPct: ptr(100)}); err == nil || !strings.Contains(err.Error(), "min_perf_pct") {
		t.Fatalf("apply on a broken file: %v", err)
	}
	fs = powertest.Build(t, powertest.IntelActive, 2)
	j = openJournal(t, fs, nil)
	q := fs.Path("/sys/devices/system/cpu/intel_pstate/min_perf_pct")
	os.Remove(q)
	if err := os.Symlink("/dev/null", q); err != nil {
		t.Fatal(err)
	}
	_, err := applyPower(context.Background(), j, fs, power.Settings{MinPerfPct: ptr(90)})
	if err == nil || !strings.Contains(err.Error(), `reads "" after writing "90": the kernel did not take the value`) {
		t.Fatalf("apply that does not read back: %v", err)
	}
	if open, _ := journal.Pending(j.Dir()); len(open) != 1 || !strings.HasSuffix(open[0].Target, "min_perf_pct") {
		t.Fatalf("the unkept change must stay open for the undo: %+v", open)
	}
}

// TestTunedApplyRestore switches to network-latency and back from a
// profile an admin set, from none, and from one tuned picked itself
// (profile_mode auto: the restore runs auto_profile, so the host stays in
// auto mode).
func TestTunedApplyRestore(t *testing.T) {
	for _, before := range []string{"balanced", "", power.AutoProfile + "throughput-performance"} {
		fs := powertest.Build(t, powertest.IntelActive, 2)
		snap := powertest.Snapshot(t, fs.Root)
		profile, auto := strings.CutPrefix(before, power.AutoProfile)
		dir := powertest.FakeTuned(t, profile, true, fs.Root)
		if auto {
			powertest.TunedAuto(t, dir)
		}
		tu := power.TunedAdm{Path: filepath.Join(dir, "tuned-adm")}
		j := openJournal(t, fs, tu)
		r, err := j.Apply(context.Background(), tunedChange(tu, "network-latency"))
		if err != nil || r.Previous != before || r.Effective != "network-latency" {
			t.Fatalf("apply: %+v %v", r, err)
		}
		// The profile's own changes are the profile's.
		st := power.ReadState(context.Background(), fs, 0, tu)
		if st.Freq.Governor != "performance" || st.Turbo.MinPerfPct != 100 || !strings.Contains(st.Tuned, "Current active profile: network-latency") {
			t.Fatalf("state under the profile: %+v %+v %q", st.Freq, st.Turbo, st.Tuned)
		}
		res, err := j.Undo(context.Background())
		if err != nil || len(res) != 1 || res[0].Restored != before {
			t.Fatalf("undo: %+v %v", res, err)
		}
		if st, err := tu.Active(context.Background()); err != nil || st.Active != profile || st.Auto != auto {
			t.Fatalf("after undo %+v %v, want %q auto %v", st, err, profile, auto)
		}
		if d := powertest.Diff(snap, powertest.Snapshot(t, fs.Root)); len(d) > 0 {
			t.Fatalf("tuned left changes:\n%s", strings.Join(d, "\n"))
		}
		calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
		if want := map[bool]string{true: "auto_profile", false: map[string]string{"balanced": "profile balanced", "": "off"}[before]}[auto]; !strings.Contains(string(calls), want) {
			t.Fatalf("restore did not run tuned-adm %s:\n%s", want, calls)
		}
	}
	// A profile tuned does not have: refused, nothing changes.
	dir := powertest.FakeTuned(t, "balanced", true, "")
	tu := power.TunedAdm{Path: filepath.Join(dir, "tuned-adm")}
	j := openJournal(t, powertest.Build(t, powertest.IntelActive, 2), tu)
	if _, err := j.Apply(context.Background(), tunedChange(tu, "nope")); err == nil || !strings.Contains(err.Error(), "doesn't exist") {
		t.Fatalf("unknown profile: %v", err)
	}
	if got := powertest.TunedActive(t, dir); got != "balanced" {
		t.Fatal(got)
	}
}
