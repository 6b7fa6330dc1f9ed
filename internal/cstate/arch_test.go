package cstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// idleTree is a CPU 1 with the named states (exit latencies 0, 1, 150 µs
// ...) and a /dev/cpu_dma_latency that is a plain file.
func idleTree(t *testing.T, driver string, names ...string) hostfs.FS {
	root := t.TempDir()
	w := func(p, v string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("sys/devices/system/cpu/online", "1\n")
	w("sys/devices/system/cpu/cpuidle/current_driver", driver+"\n")
	w("dev/cpu_dma_latency", "")
	for k, n := range names {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu1/cpuidle/state%d/", k)
		for f, v := range map[string]string{"name": n, "latency": fmt.Sprint(k * 75), "disable": "0", "usage": "0", "time": "0"} {
			w(d+f, v+"\n")
		}
	}
	return hostfs.FS{Root: root}
}

// On arm64 (no POLL state) "poll" is refused: disabling every state leaves
// the CPU in WFI, not polling.
func TestPollNeedsPollState(t *testing.T) {
	arm := idleTree(t, "psci_idle", "WFI", "cpu-sleep-0")
	_, err := DisableChanges(arm, 1, nil, true)
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "no POLL idle state (states: WFI, cpu-sleep-0)") || !strings.Contains(err.Error(), "still idle in WFI") {
		t.Fatalf("poll on arm64: %v", err)
	}
	if ch, err := DisableChanges(arm, 1, []string{"cpu-sleep-0"}, false); err != nil || len(ch) != 1 {
		t.Fatalf("disable the deeper state: %v %v", ch, err)
	}
	x86 := idleTree(t, "intel_idle", "POLL", "C1", "C1E", "C6")
	if ch, err := DisableChanges(x86, 1, nil, true); err != nil || len(ch) != 3 {
		t.Fatalf("poll on x86: %v %v", ch, err)
	}
}

// A 0 µs PM QoS request says what it leaves: POLL on x86, the shallowest
// state (WFI) on arm64, nothing without a cpuidle driver.
func TestZeroLatencyEffect(t *testing.T) {
	for _, c := range []struct {
		fs   hostfs.FS
		want string
	}{
		{idleTree(t, "intel_idle", "POLL", "C1", "C6"), "held at 0 µs: POLL only"},
		{idleTree(t, "psci_idle", "WFI", "cpu-sleep-0"), "held at 0 µs: shallowest state only (WFI): the CPU has no POLL state"},
		{idleTree(t, "none"), "held at 0 µs: no effect: no cpuidle driver"},
	} {
		h, err := HoldMaxLatency(c.fs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := h.Describe(); !strings.Contains(d, c.want) {
			t.Errorf("%q, want %q", d, c.want)
		}
		h.Close()
	}
	h, err := HoldMaxLatency(idleTree(t, "psci_idle", "WFI"), 20)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if d := h.Describe(); d != hostinfo.DMALatencyPath+" held at 20 µs" {
		t.Errorf("%q", d)
	}
}
