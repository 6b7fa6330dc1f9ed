package hostinfo

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/rig-project/rig/internal/power/powertest"
)

func TestReadFreqLayouts(t *testing.T) {
	for _, c := range []struct {
		l          powertest.Layout
		driver     string
		governors  int
		base       int64
		table, epp int
		turbo      string // Source suffix, "" = none
	}{
		{powertest.IntelActive, "intel_pstate", 2, 3100000, 0, 5, "no_turbo"},
		{powertest.IntelPassive, "intel_cpufreq", 6, 3100000, 0, 5, "no_turbo"},
		{powertest.ACPIBoost, "acpi-cpufreq", 6, 0, 14, 0, "boost"},
		{powertest.GravitonCPPC, "cppc_cpufreq", 6, 0, 0, 0, "boost"},
	} {
		fs := powertest.Build(t, c.l, 4)
		f, err := ReadFreq(fs, 3)
		if err != nil {
			t.Fatalf("%s: %v", c.l, err)
		}
		if f.Driver != c.driver || len(f.Governors) != c.governors || f.BaseKHz != c.base || len(f.TableKHz) != c.table || len(f.EPPs) != c.epp || !slices.Equal(f.RelatedCPUs, []int{3}) {
			t.Errorf("%s: %+v", c.l, f)
		}
		tb, err := ReadTurbo(fs)
		if err != nil || len(tb.Source) < len(c.turbo) || tb.Source[len(tb.Source)-len(c.turbo):] != c.turbo {
			t.Errorf("%s: turbo %+v %v", c.l, tb, err)
		}
	}
	vm := powertest.Build(t, powertest.VMNone, 2)
	if _, err := ReadFreq(vm, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VM cpufreq: %v", err)
	}
	if _, err := ReadTurbo(vm); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VM turbo: %v", err)
	}
	if fl, err := CPUFlags(vm); err != nil || !slices.Contains(fl, "hypervisor") {
		t.Errorf("VM flags %v %v", fl, err)
	}
	if fl, _ := CPUFlags(powertest.Build(t, powertest.GravitonCPPC, 1)); !slices.Contains(fl, "sve2") {
		t.Errorf("arm64 Features %v", fl)
	}
}

// TestMSRFixture reads APERF and MPERF from a fixture file standing in for
// /dev/cpu/N/msr: pread at the register number, 8 bytes little-endian.
// The two registers overlap in a file, so the fixture is 9 bytes at 0xE7.
func TestMSRFixture(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 2)
	if _, err := OpenMSR(fs, 1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no msr driver: %v", err)
	}
	powertest.MSRFixture(t, fs, 1, map[int64][]byte{MSRMPERF: {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x08, 0x09}})
	m, err := OpenMSR(fs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mp, err1 := m.Read(MSRMPERF)
	ap, err2 := m.Read(MSRAPERF)
	if err1 != nil || err2 != nil || mp != 0x0877665544332211 || ap != 0x0908776655443322 {
		t.Fatalf("MPERF %#x (%v) APERF %#x (%v)", mp, err1, ap, err2)
	}
	if _, err := m.Read(0x1000); err == nil {
		t.Fatal("read past the fixture: want a short-read error")
	}
	if n := testing.AllocsPerRun(100, func() { m.Read(MSRAPERF) }); n != 0 {
		t.Fatalf("MSR.Read allocates %v times", n)
	}
}
