package telemetry

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/rundir"
)

// msrBytes is a fixture for /dev/cpu/N/msr at 0xE7: MPERF = mperf and
// APERF (which overlaps it in a file) = mperf>>8 | top<<56.
func msrBytes(mperf uint64, top byte) []byte {
	b := make([]byte, 9)
	binary.LittleEndian.PutUint64(b, mperf)
	b[8] = top
	return b
}

// tscBytes is a fixture for /dev/cpu/N/msr at 0x10: the TSC.
func tscBytes(tsc uint64) []byte { return binary.LittleEndian.AppendUint64(nil, tsc) }

// TestFreqAPERF measures with a fixture file standing in for the msr
// device, on an AMD host (no base_frequency, no "@ GHz" in the model
// name: nothing says MPERF's rate but the TSC): APERF, MPERF and the TSC
// at the first and the last sample.
func TestFreqAPERF(t *testing.T) {
	h := copyTree(t, "isolated")
	edit(t, h, "/proc/cpuinfo", "Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", "AMD EPYC 9124 16-Core Processor")
	powertest.MSRFixture(t, h, 2, map[int64][]byte{hostinfo.MSRTSC: tscBytes(1 << 40), hostinfo.MSRMPERF: msrBytes(0, 0)})
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
	// MPERF moves by 2^58 and APERF (its high 7 bytes and the next one)
	// by 2^50 + 5·2^56: ΔAPERF/ΔMPERF = 1.25 + 1/256; the TSC by 2^59.
	powertest.MSRFixture(t, h, 2, map[int64][]byte{hostinfo.MSRTSC: tscBytes(1<<40 + 1<<59), hostinfo.MSRMPERF: msrBytes(1<<58, 5)})
	s.sample()
	s.freq.readMSR(true)
	if n := testing.AllocsPerRun(50, func() { s.freq.readMSR(true) }); n != 0 {
		t.Fatalf("reading APERF/MPERF allocates %v times", n)
	}
	r := s.result().Freq
	e := s.freq.ends
	tscMHz := float64(1<<59) / float64(e[1].ns-e[0].ns) * 1e3
	if want := (1.25 + 1.0/256) * tscMHz; r.Source != rundir.FreqAPERF || r.Rule != rundir.RuleAPERFTSC || math.Abs(r.MHz-want) > 1e-6*want ||
		math.Abs(r.TSCMHz-tscMHz) > 1e-6*tscMHz || r.BusyPct != 50 || r.Samples != 2 || r.BaseMHz != 0 || !strings.Contains(r.Note, "IPI") {
		t.Fatalf("%+v, want %.3f MHz (TSC %.3f MHz), busy 50 %%", r, want, tscMHz)
	}
}

func TestFreqMath(t *testing.T) {
	fm := &freqMeter{cpu: 3, msr: &hostinfo.MSR{}, ends: [2]msrSample{
		{mperf: 1_000, aperf: 5_000, tsc: 7_000, ns: 0, ok: true},
		{mperf: 1_000 + 1_200_000_000, aperf: 5_000 + 1_500_000_000, tsc: 7_000 + 2_400_000_000, ns: 1_000_000_000, ok: true}}}
	r := fm.result(0)
	// The TSC ran at 2.4 GHz; × 1.5/1.2 = 3 GHz; MPERF moved 1.2e9 of the
	// TSC's 2.4e9 cycles: 50 % busy.
	if r.MHz != 3000 || r.TSCMHz != 2400 || math.Abs(r.BusyPct-50) > 1e-9 || r.Rule != rundir.RuleAPERFTSC {
		t.Fatalf("%+v", r)
	}
	fm.ends[1].mperf = fm.ends[0].mperf
	if r := fm.result(0); r.Source != rundir.FreqNone || r.Rule != "" || !strings.Contains(r.Note, "idle for the whole round") {
		t.Fatalf("idle round %+v", r)
	}
	fm.ends[1].mperf = 0
	if r := fm.result(0); r.Source != rundir.FreqNone || !strings.Contains(r.Note, "backwards") {
		t.Fatalf("reset %+v", r)
	}
	fm.ends[1].mperf, fm.ends[1].tsc = 2_000_000_000, fm.ends[0].tsc
	if r := fm.result(0); r.Source != rundir.FreqNone || !strings.Contains(r.Note, "stood still") {
		t.Fatalf("TSC stood still %+v", r)
	}
	fm.ends[1].ok = false
	if r := fm.result(0); r.Source != rundir.FreqNone || !strings.Contains(r.Note, "failed") {
		t.Fatalf("failed read %+v", r)
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
	if r.Source != rundir.FreqCurFreq || r.Rule != rundir.RuleCurFreq || r.Samples != 3 || math.Abs(r.MHz-(3000+3400+3400)/3.0) > 1e-9 || r.MinMHz != 3000 || r.MaxMHz != 3400 ||
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
	if r.Source != rundir.FreqNone || r.MHz != 0 || !strings.Contains(r.Note, "no /dev/cpu/1/msr") || !strings.Contains(r.Note, "no cpufreq on CPU 1") {
		t.Fatalf("%+v", r)
	}
}
