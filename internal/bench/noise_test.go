package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/rundir"
)

// TestCyclictestAbove: the wake-ups of at least each threshold in the
// histogram of a real run (testdata/cyclictest-hist.txt: min 15 µs, 13
// overflows past 1999 µs), overflows counted above every threshold.
func TestCyclictestAbove(t *testing.T) {
	c, err := ParseCyclictest(bytes.NewReader(readFixture(t, "cyclictest-hist.txt")))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		ns   uint64
		want int64
	}{{1000, 2000}, {15_000, 2000}, {16_000, 1999}, {20_000, 1993}, {100_000, 481}, {1_000_000, 28}, {5_000_000, 13}} {
		if got := c.above(x.ns); got != x.want {
			t.Errorf("above %d ns = %d, want %d", x.ns, got, x.want)
		}
	}
}

// syntheticNoise is a noise part of two rounds with fixed figures, osnoise
// in the probe's window or not (this VM's kernel has none).
func syntheticNoise(t *testing.T, osnoise bool) *Results {
	t.Helper()
	res := &Results{Config: Config{Rig: "rig", Dir: "d", Parts: []Part{PartNoise}, NoiseRounds: 2}}
	if err := res.Config.defaults(); err != nil {
		t.Fatal(err)
	}
	res.Env = Env{Date: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), Commit: "0123456789ab", Rig: "rig test", Kernel: "6.18.0", CPUs: 2,
		LoadBefore: "0.10 0.20 0.30", LoadAfter: "0.40 0.50 0.60", Cyclictest: "2.60"}
	nr := &NoiseResult{CPU: 1}
	for k := range 2 {
		kk := uint64(k)
		p := rundir.Noise{CPU: 1, Sched: "other", DurationNS: 10e9 + int64(k)*1e6, LongestNS: 50_327_100 - kk*1_000_000,
			Counter: rundir.NoiseCounter{Name: "TSC", HzCalibrated: 2096.01128e6, CalibratedBy: "CLOCK_MONOTONIC_RAW"},
			Floor:   rundir.NoiseFloor{Reads: 490_186_412 + kk, TypicalNS: 18.9 + float64(k)/10, ShortestNS: 10, TickNS: 0.477}}
		for i, c := range []uint64{26270, 22450, 10961, 47} {
			row := rundir.NoiseRow{AboveNS: []uint64{1000, 5000, 20000, 100000}[i], Count: c + kk*10}
			row.PerSec = float64(row.Count) / (float64(p.DurationNS) / 1e9)
			if osnoise {
				n := c/2 + kk
				row.OSNoise = &n
			}
			p.Gaps = append(p.Gaps, row)
		}
		if k == 1 {
			p.Notes = []string{"mlockall failed (ENOMEM): page faults may show as gaps"}
		}
		if osnoise {
			p.OSNoise = &rundir.OSNoise{Mode: "tracepoints, no workload", Events: 14000 + kk, LongestNS: 49_000_000, LongestName: "thread kworker/1:1:55",
				TotalNS: 350_000_000, ByKind: map[string]uint64{"irq": 10000, "softirq": 3000, "thread": 1000 + kk}}
		} else {
			p.OSNoiseMissing = "this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER; /sys/kernel/tracing/available_tracers: blk function nop)"
		}
		c := Cyclictest{MinUS: 11, AvgUS: 58, MaxUS: 9800 - int64(k)*100, Overflows: 0, Buckets: make([]int64, 20000)}
		c.Buckets[11], c.Buckets[40], c.Buckets[150], c.Buckets[c.MaxUS] = 100, 9800, 99, 1
		nr.Rounds = append(nr.Rounds, NoiseRound{ProbeFirst: k == 0, Probe: p, Cyc: c})
	}
	res.Noise = nr
	return res
}

// TestNoiseTable: every cell of the noise table holds a figure, n/a or
// "not available" with osnoise's reason; never an empty cell.
func TestNoiseTable(t *testing.T) {
	for _, osn := range []bool{false, true} {
		var b bytes.Buffer
		if err := syntheticNoise(t, osn).Markdown(&b); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		_, table, ok := strings.Cut(md, "## Platform noise on CPU 1\n")
		if !ok {
			t.Fatalf("no noise table:\n%s", md)
		}
		rows := 0
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| tool") {
				rows++
				if strings.Contains(l, "|  |") || strings.Contains(l, "| |") {
					t.Errorf("empty cell: %s", l)
				}
			}
		}
		// rig noise and cyclictest: 2 rounds and all; osnoise: 2 rounds.
		if rows != 8 {
			t.Errorf("osnoise %v: %d rows, want 8:\n%s", osn, rows, table)
		}
		if !strings.Contains(table, "\nrig noise round 2: mlockall failed") {
			t.Errorf("the probe's notes are not shown:\n%s", table)
		}
		if got := strings.Contains(table, "| osnoise (in the probe's window) | 1 (rig noise first) | not available: this kernel has no osnoise tracer"); got == osn {
			t.Errorf("osnoise %v: the osnoise row says not available: %v\n%s", osn, got, table)
		}
	}
}
