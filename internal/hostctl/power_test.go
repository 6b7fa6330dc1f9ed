package hostctl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
	j, err := journal.Open(t.TempDir(), Handlers(&nicctl.Env{FS: fs}))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	h := &Host{FS: fs, Journal: j}
	k := scenario.Knobs{Responder: scenario.Responder{CPU: ptr(2)}, Tuned: ptr("network-latency"),
		Power:  &scenario.Power{Governor: ptr("performance"), Turbo: ptr(false)},
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
