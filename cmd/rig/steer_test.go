package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

// TestSteerKill9ThenRestore kills the responder host's agent with -9 in
// the middle of an arm with irq.away and smt.fence — every IRQ of a fake
// /proc/irq moved off CPU 1 and its sibling 5, CPU 5 offline but not yet
// recorded as effective — and checks that `rig restore` gives back the
// fake tree byte for byte. The fake tree is a copy of an 8-CPU host's
// (never this machine's /proc/irq).
func TestSteerKill9ThenRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rig (-short)")
	}
	bin := testbin.Rig(t)
	root := hostfstest.CopyTree(t, "../../internal/hostinfo/testdata/c7i")
	for c := 1; c < 8; c++ {
		if err := os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/cpu"+strconv.Itoa(c), "online"), []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	irqs, _ := filepath.Glob(filepath.Join(root, "proc/irq/*/smp_affinity_list"))
	if len(irqs) < 10 {
		t.Fatalf("fixture has %d IRQs", len(irqs))
	}
	before := powertest.Snapshot(t, root)
	state := t.TempDir()
	env := append(os.Environ(), hostfs.EnvRoot+"="+root, "RIG_STATE_DIR="+state)
	// Each IRQ includes CPU 1 or 5 (irqbalance is not running there):
	// one apply per IRQ, then the fence.
	cpu := 1
	killAgentAtPause(t, bin, env, len(irqs)+1, scenario.Knobs{Responder: scenario.Responder{CPU: &cpu},
		IRQ: &scenario.IRQ{Away: true}, SMT: &scenario.SMT{Fence: true}})

	mid := powertest.Snapshot(t, root)
	for p, want := range map[string]string{"sys/devices/system/cpu/cpu5/online": "0\n", "proc/irq/0/smp_affinity_list": "0,2-4,6-7"} {
		if got := mid[filepath.Join(root, p)]; got != want {
			t.Errorf("at the kill %s = %q, want %q", p, got, want)
		}
	}
	rc := exec.Command(bin, "restore")
	rc.Env = env
	out, err := rc.CombinedOutput()
	if err != nil {
		t.Fatalf("rig restore: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "cpu5/online") || !strings.Contains(string(out), "/proc/irq/0/smp_affinity_list") {
		t.Errorf("restore output lacks the fence or the IRQs:\n%s", out)
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, root)); len(d) > 0 {
		t.Fatalf("tree differs after rig restore:\n%s", strings.Join(d, "\n"))
	}
}

const steerScenario = `name: steer
emulate: netns
traffic: {group: 239.88.0.7:7807, interval: 1ms, count: 300}
timestamps: software
rounds: 1
arms:
  - name: base
    responder: {cpu: 1}
  - name: away
    responder: {cpu: 1}
    irq: {away: true}
  - name: fence
    responder: {cpu: 1}
    smt: {fence: true}
`

// TestRunIRQAwayOnFakeIRQTree runs an emulated `rig run` whose arm moves
// every IRQ off the responder CPU, on a fake /proc/irq: a copy of this
// machine's IRQ files (one read-only, as a managed IRQ's, and one without
// smp_affinity_list) bind-mounted over /proc/irq in a mount namespace of
// the run's own, so the machine's real IRQs are never written. The arm
// moves them, names the two it cannot, the round keeps what was done in
// host-changes.txt, the tree is back byte for byte after the run, and the
// fence arm is skipped on this machine's CPUs, which have no SMT sibling.
// One round: each round applies and takes back the same, and only round
// 0's record is read.
func TestRunIRQAwayOnFakeIRQTree(t *testing.T) {
	testbin.Integration(t)
	if online, _ := os.ReadFile("/sys/devices/system/cpu/online"); strings.TrimSpace(string(online)) == "0" {
		t.Skip("needs 2 CPUs")
	}
	if sib, _ := os.ReadFile("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list"); strings.TrimSpace(string(sib)) != "1" {
		t.Skip("CPU 1 has an SMT sibling here: the fence arm would run")
	}
	bin := testbin.Rig(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	fake := filepath.Join(dir, "irq")
	real, err := filepath.Glob("/proc/irq/[0-9]*")
	if err != nil || len(real) == 0 {
		t.Fatalf("no IRQs here: %v", err)
	}
	for _, d := range real {
		n := filepath.Base(d)
		os.MkdirAll(filepath.Join(fake, n), 0o755)
		for _, f := range []string{"smp_affinity_list", "effective_affinity_list"} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fake, n, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	managed := filepath.Base(real[0])
	os.Chmod(filepath.Join(fake, managed, "smp_affinity_list"), 0o444)
	os.MkdirAll(filepath.Join(fake, "999"), 0o755)
	before := powertest.Snapshot(t, fake)
	scen := filepath.Join(dir, "steer.yaml")
	if err := os.WriteFile(scen, []byte(steerScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results")
	// The bind mount is made or the run does not start (&&); the mount
	// namespace, and the mount, end with the run.
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$1" /proc/irq && exec "$2" run -v --results "$3" "$4"`,
		"sh", fake, bin, results, scen)
	cmd.Env = append(os.Environ(), hostfs.EnvRoot+"="+hostfstest.IdleRoot(t), "RIG_STATE_DIR="+filepath.Join(dir, "state"),
		"RIG_LAB_DIR="+filepath.Join(dir, "labs"), "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rig run: %v\n%s", err, out)
	}
	for _, want := range []string{"irq away: irq 999 ? → ? (effective ?) — no smp_affinity_list: left alone; cannot tell whether it runs on CPU 1",
		"LEFT on it: IRQ " + managed + " (smp_affinity_list is read-only), IRQ 999 (no smp_affinity_list: cannot tell)",
		"arm fence skipped: CPU 1 has no SMT sibling", "irq away: held to the end of the arm: no IRQ came back to CPU 1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	rec, err := filepath.Glob(filepath.Join(results, "steer-*", "arms", "away", "round-0", "host-changes.txt"))
	if err != nil || len(rec) != 1 {
		t.Fatalf("host-changes.txt of the away arm: %v %v", rec, err)
	}
	b, _ := os.ReadFile(rec[0])
	if !strings.Contains(string(b), "IRQs moved off CPU 1") || !strings.Contains(string(b), "restored sysfs /proc/irq/") {
		t.Errorf("host-changes.txt:\n%s", b)
	}
	if d := powertest.Diff(before, powertest.Snapshot(t, fake)); len(d) > 0 {
		t.Fatalf("fake /proc/irq differs after the run:\n%s", strings.Join(d, "\n"))
	}
}
