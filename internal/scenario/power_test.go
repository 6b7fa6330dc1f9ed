package scenario

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/power/powertest"
)

// fakeTree is a powertest layout with isolated CPUs 1-3 and the
// interfaces the shipped scenarios name.
func fakeTree(t *testing.T, l powertest.Layout, cpus int) hostfs.FS {
	t.Helper()
	fs := powertest.Build(t, l, cpus)
	for p, v := range map[string]string{
		"/sys/devices/system/cpu/isolated":  "1-3\n",
		"/sys/devices/system/cpu/nohz_full": "1-3\n",
		"/sys/class/net/eth1/ifindex":       "2\n",
		"/sys/class/net/eth2/ifindex":       "3\n",
		"/sys/class/net/lo/ifindex":         "1\n",
	} {
		os.MkdirAll(filepath.Dir(fs.Path(p)), 0o755)
		if err := os.WriteFile(fs.Path(p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// TestPowerScenarioDryRunIntelHost dry-runs scenarios/power.yaml against a
// fake 26-CPU intel_pstate host read from files: clean, nothing skipped,
// and every change printed with the value it replaces.
func TestPowerScenarioDryRunIntelHost(t *testing.T) {
	s, err := Load("../../scenarios/power.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs := fakeTree(t, powertest.IntelActive, 26)
	before := powertest.Snapshot(t, fs.Root)
	if err := Validate(s, factsFor(s, treeWithStressNG(t, fs))); err != nil {
		t.Fatal(err)
	}
	p := s.Plan()
	if len(p.Skipped) != 0 || len(p.Arms) != 3 {
		t.Fatalf("plan: %d arms, skipped %+v", len(p.Arms), p.Skipped)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, p, DryRunOptions{Local: &fs}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"power: turbo off: intel_pstate/no_turbo 0 → 1",
		"power: governor performance on CPU 5: cpu5/cpufreq/scaling_governor powersave → performance",
		"power: governor performance on CPU 1: cpu1/cpufreq/scaling_governor powersave → performance",
		"cpu5/cpuidle/state2 (C1E): disable 0 → 1",
		"(unchanged) cpufreq governor of CPU 5: powersave",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) != 0 {
		t.Fatalf("the dry run changed the tree: %v", d)
	}
}

// TestPowerScenarioRefusedWithoutCpufreq: the same file on a VM without
// cpufreq (the dev machine's layout) and on an arm64 host is refused at
// the knob, with the reason.
func TestPowerScenarioRefusedWithoutCpufreq(t *testing.T) {
	s, err := Load("../../scenarios/power.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range map[powertest.Layout][]string{
		powertest.VMNone:       {"power.yaml:60:43: host rsp has no turbo control", "a VM: the hypervisor owns P-states", "power.yaml:60:23: host rsp has no cpufreq policy on any CPU"},
		powertest.GravitonCPPC: {"power.yaml:60:43: host rsp has no boost range: ACPI CPPC highest_perf 280 = nominal_perf 280", "AWS Graviton"},
	} {
		fs := fakeTree(t, l, 26)
		err := Validate(s, factsFor(s, treeWithStressNG(t, fs)))
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("%s: %v", l, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", l, w, err)
			}
		}
	}
}

func TestPowerKnobsParseAndMerge(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: 2}
  power: {turbo: off, min-perf-pct: 100, cpus: "2,3"}
  tuned: network-latency
arms:
  - name: a
  - name: b
    power: {governor: performance, turbo: true, min-freq: 2.6GHz, max-freq: 3100 MHz}
  - name: c
    tuned: latency-performance
    power: {max-freq: 3100000kHz}
`)
	a, b, c := s.Arms[0].Effective, s.Arms[1].Effective, s.Arms[2].Effective
	if a.Power.Turbo == nil || *a.Power.Turbo || *a.Power.MinPerfPct != 100 || a.TunedProfile() != "network-latency" || a.Power.Governor != "" {
		t.Errorf("a: %+v", a.Power)
	}
	bs := b.PowerSettings()
	if !*bs.Turbo || bs.Governor != "performance" || *bs.MinFreqKHz != 2600000 || *bs.MaxFreqKHz != 3100000 || *bs.MinPerfPct != 100 || len(bs.CPUs) != 2 {
		t.Errorf("b: %+v", bs)
	}
	if c.TunedProfile() != "latency-performance" || *c.Power.MaxFreqKHz != 3100000 || *c.Power.Turbo {
		t.Errorf("c: %+v %q", c.Power, c.TunedProfile())
	}
	// The responder CPU is the default target.
	if got := (Knobs{Power: &power.Settings{Governor: "performance"}, Responder: Responder{CPU: ptrTo(7)}}).PowerSettings(); len(got.CPUs) != 1 || got.CPUs[0] != 7 {
		t.Errorf("default CPUs %v", got.CPUs)
	}
	for in, want := range map[string]int64{"2.6GHz": 2600000, "2600 MHz": 2600000, "800000kHz": 800000, "3.1 ghz": 3100000, "1.5GHz": 1500000} {
		if k, err := parseFreq(in); err != nil || k != want {
			t.Errorf("parseFreq(%q) = %d, %v", in, k, err)
		}
	}
	for _, in := range []any{"2.6", 2600, "fast", "0.1MHz", "200GHz", "2.6000001GHz", "NaNGHz"} {
		if k, err := parseFreq(in); err == nil {
			t.Errorf("parseFreq(%v) = %d, want an error", in, k)
		}
	}
}

// TestPowerFactsFromOlderAgent: an agent that does not report the
// frequency control cannot take power knobs; validation says so.
func TestPowerFactsFromOlderAgent(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    tuned: network-latency
`)
	old := smallHost().facts()
	old.Power = nil // an older rig's agent does not report it
	err := Validate(s, factsFor(s, old))
	if err == nil || !strings.Contains(err.Error(), "does not report its frequency control") || !strings.Contains(err.Error(), "6:5") {
		t.Fatalf("%v", err)
	}
}

// TestPowerNotesSharedPolicy: a policy shared by several CPUs is noted in
// the plan (they all change).
func TestPowerNotesSharedPolicy(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    responder: {cpu: 1}
    power: {governor: performance}
`)
	f := bigHost()
	fr := f.PowerFacts.Freq[1]
	fr.RelatedCPUs = []int{0, 1, 2, 3}
	f.PowerFacts.Freq[1] = fr
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(s.Arms[0].Notes, "\n"); !strings.Contains(n, "shared by CPUs 0-3") {
		t.Fatalf("notes %q", n)
	}
}
