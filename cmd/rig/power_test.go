package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

const powerScenario = `name: p
emulate: netns
traffic: {group: 239.1.1.1:5000}
timestamps: software
arms:
  - name: base
    responder: {cpu: 1}
  - name: runtime
    responder: {cpu: 1}
    power: {governor: performance, turbo: off}
`

// TestDryRunRefusesPowerWithoutCpufreq: on a host without cpufreq (this
// VM, and a fake tree of its layout) `rig run --dry-run` refuses the
// power knobs with the reason, exit 2, and changes nothing.
func TestDryRunRefusesPowerWithoutCpufreq(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte(powerScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(root hostfs.FS) {
		t.Helper()
		var out bytes.Buffer
		err := dryRun(context.Background(), &out, f, root)
		if exitCode(err) != 2 {
			t.Fatalf("want a usage error (exit 2), got %v", err)
		}
		for _, want := range []string{"p.yaml:10:23: host responder has no cpufreq policy on any CPU", "a VM: the hypervisor owns P-states",
			"p.yaml:10:43: host responder has no turbo control", "hint: leave power out on this host"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
	}
	check(powertest.Build(t, powertest.VMNone, 2))
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/cpufreq"); err == nil {
		t.Skip("this machine has cpufreq: the live refusal applies to the dev VM only")
	}
	check(hostfs.Default())
	if code := run([]string{"run", "--dry-run", f}); code != 2 {
		t.Errorf("rig run --dry-run: exit %d, want 2", code)
	}
}

// TestPowerKill9ThenRestore kills the responder host's agent with -9 in
// the middle of an arm (a tuned profile switched, min_perf_pct recorded,
// the governor and max-freq set, turbo off written but not yet recorded
// as effective) and checks that `rig restore` puts the fake intel_pstate
// tree and the tuned profile back.
func TestPowerKill9ThenRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rig (-short)")
	}
	bin := testbin.Rig(t)
	fs := powertest.Build(t, powertest.IntelActive, 4)
	before := powertest.Snapshot(t, fs.Root)
	tuned := powertest.FakeTuned(t, "balanced", true, fs.Root)
	state := t.TempDir()
	env := append(os.Environ(), hostfs.EnvRoot+"="+fs.Root, "RIG_STATE_DIR="+state, power.EnvTunedAdm+"="+filepath.Join(tuned, "tuned-adm"))

	// Apply 1 is the tuned profile, 2 min_perf_pct as it is, 3 CPU 1's
	// governor, 4 its max-freq, 5 no_turbo (limits before a turbo off).
	killAgentAtPause(t, bin, env, 5, scenario.Knobs{Responder: scenario.Responder{CPU: ptrTo(1)}, Tuned: ptrTo("network-latency"),
		Power: &power.Settings{Governor: "performance", Turbo: ptrTo(false), MaxFreqKHz: ptrTo[int64](3100000)}})

	// Snapshots hold real paths: cpuN/cpufreq links to cpufreq/policyN.
	mid := powertest.Snapshot(t, fs.Root)
	cpu := fs.Root + "/sys/devices/system/cpu/"
	for p, want := range map[string]string{
		"intel_pstate/no_turbo":            "1\n",           // rig, paused before its read-back
		"cpufreq/policy1/scaling_governor": "performance\n", // rig
		"cpufreq/policy1/scaling_max_freq": "3100000\n",     // rig
		"intel_pstate/min_perf_pct":        "100\n",         // the tuned profile
		"cpufreq/policy0/scaling_governor": "performance\n", // the tuned profile
	} {
		if mid[cpu+p] != want {
			t.Errorf("at the kill %s = %q, want %q", p, mid[cpu+p], want)
		}
	}
	if got := powertest.TunedActive(t, tuned); got != "network-latency" {
		t.Fatalf("tuned at the kill: %q", got)
	}

	// Every host-changing command now refuses; restore puts it all back.
	rc := exec.Command(bin, "restore")
	rc.Env = env
	out, err := rc.CombinedOutput()
	if err != nil {
		t.Fatalf("rig restore: %v\n%s", err, out)
	}
	t.Logf("rig restore:\n%s", out)
	for _, want := range []string{"cpufreq/scaling_governor", "cpufreq/scaling_max_freq", "intel_pstate/no_turbo", "intel_pstate/min_perf_pct", "tuned-profile tuned"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("restore output lacks %q:\n%s", want, out)
		}
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("tree differs after rig restore:\n%s", strings.Join(d, "\n"))
	}
	if got := powertest.TunedActive(t, tuned); got != "balanced" {
		t.Fatalf("tuned after restore: %q", got)
	}
	rc = exec.Command(bin, "restore")
	rc.Env = env
	if out, err := rc.CombinedOutput(); err != nil || !strings.Contains(string(out), "nothing to restore") {
		t.Fatalf("second restore: %v\n%s", err, out)
	}
}

// killAgentAtPause starts `rig agent --stdio` with env, asks it to apply
// knobs, and kills it with -9 once its pause-th journaled change is made
// (journal.EnvTestPause) and before it is recorded as effective.
func killAgentAtPause(t *testing.T, bin string, env []string, pause int, knobs scenario.Knobs) {
	t.Helper()
	cmd := exec.Command(bin, "agent", "--stdio")
	cmd.Env = append(env, fmt.Sprintf("%s=%d", journal.EnvTestPause, pause))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, `"proto":"rig-agent"`) {
		t.Fatalf("hello %q %v", line, err)
	}
	k, _ := json.Marshal(knobs)
	args, _ := json.Marshal(agent.ApplyArgs{Arm: "runtime", Knobs: k, LengthNS: int64(time.Minute)})
	req, _ := json.Marshal(agent.Request{ID: 1, Op: agent.OpApply, Args: args})
	if _, err := stdin.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	testbin.KillAtPause(t, cmd, stderr, 60*time.Second)
}

func ptrTo[T any](v T) *T { return &v }
