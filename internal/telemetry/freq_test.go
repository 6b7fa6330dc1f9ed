package telemetry

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/teldata"
)

// msrBytes is a fixture for /dev/cpu/N/msr at 0xE7: MPERF = mperf and
// APERF (which overlaps it in a file) = mperf>>8 | top<<56.
func msrBytes(mperf uint64, top byte) []byte {
	b := make([]byte, 9)
	binary.LittleEndian.PutUint64(b, mperf)
	b[8] = top
	return b
}

// TestFreqAPERF measures with a fixture file standing in for the msr
// device: APERF/MPERF at the first and the last sample, × the nominal
// frequency from the model name (the isolated tree has no
// base_frequency).
func TestFreqAPERF(t *testing.T) {
	h := copyTree(t, "isolated")
	powertest.MSRFixture(t, h, 2, map[int64][]byte{hostinfo.MSRMPERF: msrBytes(1<<20, 0)})
	cfg := isolatedCfg(h)
	cfg.MeasureFreq, cfg.FreqCPU = true, 2
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.freq.msr == nil {
		t.Fatalf("APERF/MPERF not opened: %s", s.freq.note)
	}
	s.sample()
	s.freq.readMSR(false)
	powertest.MSRFixture(t, h, 2, map[int64][]byte{hostinfo.MSRMPERF: msrBytes(1<<32, 0)})
	s.sample()
	s.freq.readMSR(true)
	if n := testing.AllocsPerRun(50, func() { s.freq.readMSR(true) }); n != 0 {
		t.Fatalf("reading APERF/MPERF allocates %v times", n)
	}
	r := s.result().Freq
	// ΔAPERF/ΔMPERF = ((1<<32)>>8 − (1<<20)>>8) / ((1<<32) − (1<<20)) = 1/256.
	want := 3100.0 / 256
	if r.Source != teldata.FreqAPERF || math.Abs(r.MHz-want) > 1e-9 || r.BaseMHz != 3100 || r.Samples != 2 ||
		!strings.Contains(r.BaseFrom, "Gold 6346") || !strings.Contains(r.Note, "IPI") {
		t.Fatalf("%+v, want %.6f MHz", r, want)
	}
}

func TestFreqMath(t *testing.T) {
	fm := &freqMeter{cpu: 3, msr: &hostinfo.MSR{}, baseKHz: 2_400_000, ok0: true, ok1: true,
		m0: 1_000, a0: 5_000, t0: 0, m1: 1_000 + 1_200_000_000, a1: 5_000 + 1_500_000_000, t1: 1_000_000_000}
	r := fm.result(0)
	// 2.4 GHz × 1.5/1.2 = 3 GHz; MPERF moved 1.2e9 of 2.4e9 cycles: 50 % busy.
	if r.MHz != 3000 || math.Abs(r.BusyPct-50) > 1e-9 {
		t.Fatalf("%+v", r)
	}
	fm.m1 = fm.m0
	if r := fm.result(0); r.Source != teldata.FreqNone || !strings.Contains(r.Note, "idle for the whole round") {
		t.Fatalf("idle round %+v", r)
	}
	fm.m1, fm.ok1 = 0, true
	if r := fm.result(0); r.Source != teldata.FreqNone || !strings.Contains(r.Note, "backwards") {
		t.Fatalf("reset %+v", r)
	}
}

// TestFreqCurFreq falls back to scaling_cur_freq without the msr driver,
// and says why.
func TestFreqCurFreq(t *testing.T) {
	h := copyTree(t, "isolated")
	cfg := isolatedCfg(h)
	cfg.MeasureFreq, cfg.FreqCPU = true, 2
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	edit(t, h, hostinfo.CPUFreqPath(2, "scaling_cur_freq"), "3000000", "3400000")
	s.sample()
	s.sample()
	r := s.result().Freq
	if r.Source != teldata.FreqCurFreq || r.Samples != 3 || math.Abs(r.MHz-(3000+3400+3400)/3.0) > 1e-9 || r.MinMHz != 3000 || r.MaxMHz != 3400 ||
		!strings.Contains(r.Note, "no /dev/cpu/2/msr (the msr driver is not loaded: modprobe msr)") {
		t.Fatalf("%+v", r)
	}
}

// TestFreqNotMeasurable: the dev VM has neither.
func TestFreqNotMeasurable(t *testing.T) {
	h := copyTree(t, "vm")
	s, err := New(Config{FS: h, CPUs: []int{1}, PinCPU: 0, ThreadScanEvery: -1, MaxSamples: 4, MeasureFreq: true, FreqCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	s.sample()
	r := s.result().Freq
	if r.Source != teldata.FreqNone || r.MHz != 0 || !strings.Contains(r.Note, "no /dev/cpu/1/msr") || !strings.Contains(r.Note, "no cpufreq on CPU 1") {
		t.Fatalf("%+v", r)
	}
}
