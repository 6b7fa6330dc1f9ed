package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
)

// TestReadEnv: the summary reads a host from env/<host>.json as the runner
// writes it (a rundir.Snapshot; each NIC as nicctl.Info writes it, which
// TestReportReadsNICs in internal/envsnap checks against nicctl itself).
func TestReadEnv(t *testing.T) {
	s := rundir.Snapshot{Hostname: "rsp1", Kernel: "6.8.0-rt", Clocksource: "tsc",
		NIC: map[string]any{
			"ens1f0": map[string]any{"iface": "ens1f0", "driver": "mlx5_core", "speed_mbps": 25000,
				"drvinfo": map[string]any{"driver": "mlx5_core"}, "timestamping": map[string]any{"caps": map[string]any{"phc_index": 2}}},
			"veth0": map[string]any{"iface": "veth0", "drvinfo": map[string]any{"driver": "veth"},
				"timestamping": map[string]any{"caps": map[string]any{"phc_index": -1}}},
		}}
	s.CPU.Model, s.CPU.Online, s.CPU.SMT, s.CPU.Isolated, s.CPU.NohzFull = "Xeon", []int{0, 1, 2, 3}, true, []int{2, 3}, []int{3}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "responder.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var h HostFacts
	readEnv(path, &h)
	if h.EnvError != "" || h.Hostname != "rsp1" || h.Kernel != "6.8.0-rt" || h.Clocksource != "tsc" || h.CPUModel != "Xeon" || !h.SMT ||
		!slices.Equal(h.CPUsOnline, []int{0, 1, 2, 3}) || !slices.Equal(h.CPUsIsolated, []int{2, 3}) || !slices.Equal(h.NohzFull, []int{3}) {
		t.Fatalf("host %+v from %s", h, b)
	}
	// Interfaces by name; a virtual device's driver from ETHTOOL_GDRVINFO.
	if len(h.NICs) != 2 || h.NICs[0].Iface != "ens1f0" || h.NICs[0].Driver != "mlx5_core" || h.NICs[0].SpeedMbps != 25000 ||
		h.NICs[0].PHCIndex == nil || *h.NICs[0].PHCIndex != 2 || h.NICs[1].Driver != "veth" || *h.NICs[1].PHCIndex != -1 {
		t.Fatalf("nics %+v", h.NICs)
	}
}
