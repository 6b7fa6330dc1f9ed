package envsnap

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/nicctl"
)

// TestReportReadsNICs: the report reads a host's snapshot as the runner
// writes it, NICs included: the analysis does not import nicctl (it reads
// the host), so this checks the names it reads a nicctl.Info by.
func TestReportReadsNICs(t *testing.T) {
	defer func(f func(context.Context, hostfs.FS, string) (any, error)) { NICFacts = f }(NICFacts)
	NICFacts = func(_ context.Context, _ hostfs.FS, iface string) (any, error) {
		if iface == "veth0" {
			return &nicctl.Info{Device: nicctl.Device{Iface: "veth0"}, DrvInfo: &nicctl.DrvInfo{Driver: "veth"},
				Timestamping: &tstamp.NICState{Caps: tstamp.Caps{PHCIndex: -1}}}, nil
		}
		return &nicctl.Info{Device: nicctl.Device{Iface: iface, Driver: "mlx5_core"}, SpeedMbps: 25000,
			DrvInfo: &nicctl.DrvInfo{Driver: "mlx5_core"}, Timestamping: &tstamp.NICState{Caps: tstamp.Caps{PHCIndex: 2}}}, nil
	}
	s := Take(context.Background(), fx("isolated"), Options{Getenv: noenv, Ifaces: []string{"ens1f0", "veth0"}})
	run := t.TempDir()
	m := rundir.Manifest{Format: "rig-run", FormatVersion: rundir.FormatVersion, Arms: []rundir.Arm{{Name: "a"}},
		Hosts: map[string]rundir.Host{"rsp1": {Roles: []string{"responder"}, Via: "local"}}}
	if err := rundir.WriteJSON(filepath.Join(run, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteJSON(filepath.Join(run, rundir.EnvDir, "rsp1.json"), s); err != nil {
		t.Fatal(err)
	}
	in, err := analysis.Load(run)
	if err != nil || len(in.Hosts) != 1 {
		t.Fatalf("%v, hosts %+v", err, in)
	}
	h := in.Hosts[0]
	if h.EnvError != "" || h.Hostname != s.Hostname || h.Kernel != "6.8.0-rig-fixture" || h.Clocksource != "tsc" || h.CPUModel != s.CPU.Model || !h.SMT ||
		!slices.Equal(h.CPUsOnline, s.CPU.Online) || !slices.Equal(h.CPUsIsolated, []int{2, 6}) || !slices.Equal(h.NohzFull, []int{2, 6}) {
		t.Fatalf("host %+v", h)
	}
	// Interfaces by name; a virtual device's driver from ETHTOOL_GDRVINFO.
	if len(h.NICs) != 2 || h.NICs[0].Iface != "ens1f0" || h.NICs[0].Driver != "mlx5_core" || h.NICs[0].SpeedMbps != 25000 ||
		h.NICs[0].PHCIndex == nil || *h.NICs[0].PHCIndex != 2 || h.NICs[1].Driver != "veth" || *h.NICs[1].PHCIndex != -1 {
		t.Fatalf("nics %+v", h.NICs)
	}
}
