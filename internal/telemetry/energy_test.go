package telemetry

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// raplRange is a Xeon's max_energy_range_uj: a 32-bit counter of
// 61.04 µJ units.
const raplRange = 262143328850

// raplZone writes a powercap zone below h's root as the intel_rapl
// driver shows it (powercap_sysfs: name, max_energy_range_uj, energy_uj).
func raplZone(t *testing.T, h hostfs.FS, zone, name string, rangeUJ, uj uint64) {
	t.Helper()
	d := h.Path(hostinfo.PowercapDir + "/" + zone)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"name": name, "max_energy_range_uj": strconv.FormatUint(rangeUJ, 10)} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	setEnergy(t, h, zone, uj)
}

// setEnergy moves a zone's counter (the same inode, as sysfs keeps it).
func setEnergy(t *testing.T, h hostfs.FS, zone string, uj uint64) {
	t.Helper()
	if err := os.WriteFile(h.Path(hostinfo.PowercapDir+"/"+zone+"/energy_uj"), []byte(fmt.Sprintf("%d\n", uj)), 0o400); err != nil {
		t.Fatal(err)
	}
}

// raplHost is a one-package Intel server's zones, plus the mmio
// interface to the same package counter, which must not count twice.
func raplHost(t *testing.T, h hostfs.FS) {
	raplZone(t, h, "intel-rapl:0", "package-0", raplRange, raplRange-3_000_000)
	raplZone(t, h, "intel-rapl:0:0", "dram", raplRange, 1_000_000)
	raplZone(t, h, "intel-rapl-mmio:0", "package-0", raplRange, 5)
	if err := os.MkdirAll(h.Path(hostinfo.PowercapDir+"/intel-rapl"), 0o755); err != nil { // the control type
		t.Fatal(err)
	}
}

// TestEnergyRAPL: joules per zone over three samples, the package
// counter wrapping between the first two, and mean watts over the span.
func TestEnergyRAPL(t *testing.T) {
	h := copyTree(t, "isolated")
	raplHost(t, h)
	cfg := isolatedCfg(h)
	cfg.MeasureEnergy = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	setEnergy(t, h, "intel-rapl:0", 2_000_000) // wrapped: 3 J + 2 J
	setEnergy(t, h, "intel-rapl:0:0", 1_500_000)
	s.sample()
	setEnergy(t, h, "intel-rapl:0", 7_000_000)
	setEnergy(t, h, "intel-rapl:0:0", 2_000_000)
	s.sample()
	r := s.result().Energy
	if r == nil || r.Source != rundir.EnergySourceRAPL || r.Rule != rundir.RuleRAPL || r.CannotTell != "" || len(r.Zones) != 2 {
		t.Fatalf("%+v", r)
	}
	pkg, dram := r.Zones[0], r.Zones[1]
	span := float64(s.t[2]-s.t[0]) / 1e9
	if pkg.Label() != "package-0" || pkg.Joules != 10 || pkg.Wraps != 1 || pkg.Samples != 3 || math.Abs(pkg.Seconds-span) > 1e-9 || math.Abs(pkg.Watts-10/span) > 1e-6*pkg.Watts {
		t.Fatalf("package %+v, want 10 J, one wrap over %.6f s", pkg, span)
	}
	if dram.Label() != "package-0 dram" || dram.Joules != 1 || dram.Wraps != 0 || dram.CannotTell != "" {
		t.Fatalf("dram %+v", dram)
	}
}

// TestEnergyCannotTell: a counter the reader may not read (energy_uj is
// 0400 since Linux 5.10; root reads it anyway, so the open is refused
// through the seam), a zone whose range is so small that any step may
// hold two wraps, and a host without RAPL: each says why, none says 0.
func TestEnergyCannotTell(t *testing.T) {
	h := copyTree(t, "isolated")
	raplHost(t, h)
	raplZone(t, h, "intel-rapl:0:1", "core", 1, 0)
	defer func(o func(hostfs.FS, string) (*hostinfo.File, error)) { openEnergyFile = o }(openEnergyFile)
	openEnergyFile = func(fs hostfs.FS, p string) (*hostinfo.File, error) {
		if strings.Contains(p, "intel-rapl:0:0/") {
			return nil, fmt.Errorf("open %s: %w", p, syscall.EACCES)
		}
		return hostinfo.Open(fs, p)
	}
	cfg := isolatedCfg(h)
	cfg.MeasureEnergy = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	setEnergy(t, h, "intel-rapl:0:1", 0)
	s.sample()
	r := s.result().Energy
	if len(r.Zones) != 3 {
		t.Fatalf("%+v", r)
	}
	for _, z := range r.Zones {
		t.Logf("%s: %+v", z.Label(), z)
	}
	if z := r.Zones[1]; z.Joules != 0 || !strings.Contains(z.CannotTell, "energy_uj: permission denied (energy_uj is readable by root only since Linux 5.10") {
		t.Errorf("unreadable dram %+v", z)
	}
	if z := r.Zones[2]; z.Joules != 0 || !strings.Contains(z.CannotTell, "could have wrapped more than once") {
		t.Errorf("1 µJ range %+v", z)
	}
	if z := r.Zones[0]; z.CannotTell != "" || z.Joules != 0 || z.Samples != 2 {
		t.Errorf("package %+v: measured, 0 J (it did not move)", z)
	}

	v := copyTree(t, "vm")
	s, err = New(Config{FS: v, CPUs: []int{1}, PinCPU: 0, ThreadScanEvery: -1, MaxSamples: 4, MeasureEnergy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	s.sample()
	if r := s.result().Energy; len(r.Zones) != 0 || r.Rule != "" || !strings.Contains(r.CannotTell, "no RAPL zones in /sys/class/powercap") {
		t.Fatalf("vm %+v", r)
	}
}

// TestEnergyLeadCPU: intel_rapl_msr reads a package's counters on its
// lowest online CPU (rapl_msr_read_raw, an IPI to lead_cpu); when that is
// a measured CPU the counters are read at the round's ends only, and the
// result says so.
func TestEnergyLeadCPU(t *testing.T) {
	h := copyTree(t, "isolated")
	raplHost(t, h)
	s, err := New(Config{FS: h, CPUs: []int{0, 4}, PinCPU: 1, ThreadScanEvery: -1, MaxSamples: 16, MeasureEnergy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	s.readEnergyEnd()
	setEnergy(t, h, "intel-rapl:0:0", 3_000_000)
	s.sample()
	s.sample()
	s.readEnergyEnd()
	r := s.result().Energy
	if z := r.Zones[1]; z.Samples != 2 || z.Joules != 2 || z.CannotTell != "" || !strings.Contains(r.Note, "measured CPU 0 is its package's first") {
		t.Fatalf("%+v, note %q", z, r.Note)
	}
}
