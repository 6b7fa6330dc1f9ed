package telemetry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// copyTree copies a fixture tree so a test can move its counters.
func copyTree(t *testing.T, name string) hostfs.FS {
	t.Helper()
	return hostfs.FS{Root: hostfstest.CopyTree(t, filepath.Join("../hostinfo/testdata", name))}
}

// edit rewrites a fake host file in place (same inode, as the kernel does).
func edit(t *testing.T, h hostfs.FS, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(h.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", p, old)
	}
	if err := os.WriteFile(h.Path(p), []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func isolatedCfg(h hostfs.FS) Config {
	return Config{FS: h, CPUs: []int{2, 6}, PinCPU: 0, PID: 4242, TID: 4250, IRQs: []int{121}, ThreadScanEvery: 1, MaxSamples: 16}
}

func TestEverySourceOnFakeTree(t *testing.T) {
	h := copyTree(t, "isolated")
	s, err := New(isolatedCfg(h))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	// Interval 1: NVMe IRQ and LOC on CPU 2, NET_RX softirq, C1 entries,
	// a softnet drop, responder context switches, IRQ 121 moved to CPU 3.
	edit(t, h, "/proc/interrupts", " 131:          0          0          0", " 131:          0          0         40")
	edit(t, h, "/proc/interrupts", "2001         22", "2001         47")
	edit(t, h, "/proc/softirqs", "NET_RX:       2000       2000         12", "NET_RX:       2000       2000         19")
	edit(t, h, hostinfo.IdleStatePath(2, 1)+"/usage", "3000", "3050")
	edit(t, h, "/proc/net/softnet_stat", "00000bb8 00000002", "00000bb8 00000005")
	edit(t, h, "/proc/4242/task/4250/status", "voluntary_ctxt_switches:\t4350", "voluntary_ctxt_switches:\t4360")
	edit(t, h, "/proc/irq/121/effective_affinity_list", "2", "3")
	edit(t, h, "/sys/devices/system/cpu/cpu2/thermal_throttle/core_throttle_count", "3", "5")
	s.sample()
	s.sample() // interval 2: quiet
	r := s.result()
	if r.Samples != 3 || len(r.Intervals) != 2 || r.ReadErrors != 0 {
		t.Fatalf("samples %d intervals %d errors %d %s", r.Samples, len(r.Intervals), r.ReadErrors, r.FirstError)
	}
	want := map[string]uint64{"cpu2 irq 131 nvme0q1": 40, "cpu2 irq LOC Local timer interrupts": 25, "cpu2 softirq NET_RX": 7, "cpu2 idle_usage state1 C1": 50, "cpu2 softnet dropped": 3, "cpu2 thermal core_throttle_count": 2}
	got := map[string]uint64{}
	for k, src := range r.Sources {
		got[src.Label()] = r.Intervals[0].Deltas[k]
		if r.Intervals[1].Deltas[k] != 0 {
			t.Errorf("%s moved in the quiet interval", src.Label())
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if r.Thread == nil || r.Thread.Voluntary != 10 || r.Intervals[0].Vol != 10 {
		t.Fatalf("thread %+v", r.Thread)
	}
	if len(r.AffinityChanges) != 1 || r.AffinityChanges[0].From != "2" || r.AffinityChanges[0].To != "3" || r.IRQAffinity[0].Final != "3" {
		t.Fatalf("drift %+v %+v", r.AffinityChanges, r.IRQAffinity)
	}
	comms := map[string]bool{}
	for _, th := range r.Threads {
		comms[th.Comm] = true
		if th.CPU != 2 && th.CPU != 6 {
			t.Errorf("thread %+v not on a measured CPU", th)
		}
	}
	if !comms["rig-responder"] || !comms["ksoftirqd/6"] || comms["sshd"] || r.ThreadsMode != "last_cpu" {
		t.Fatalf("threads %+v mode %s", r.Threads, r.ThreadsMode)
	}
	mid := (r.Intervals[0].Start + r.Intervals[0].End) / 2
	if r.Intervals[0].End > r.Intervals[0].Start && r.IntervalAt(mid) != &r.Intervals[0] {
		t.Fatal("IntervalAt(mid of first) is not the first interval")
	}
	if r.IntervalAt(r.Start-1) != nil || r.IntervalAt(r.End+1) != nil {
		t.Fatal("IntervalAt outside the round must be nil")
	}
	if top := r.Top(&r.Intervals[0], 1); len(top) != 1 || top[0].Label() != "cpu2 idle_usage state1 C1" {
		t.Fatalf("top %+v", top)
	}
	if sum := r.Summary(&r.Intervals[0], 2); !strings.Contains(sum, "cpu2 irq 131 nvme0q1 ×40") || !strings.Contains(sum, "thread rig-responder") {
		t.Fatal(sum)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

func TestNewRefuses(t *testing.T) {
	h := hostfs.FS{Root: "../hostinfo/testdata/isolated"}
	for name, cfg := range map[string]Config{
		"pin on measured CPU": {FS: h, CPUs: []int{2, 6}, PinCPU: 6},
		"no CPUs":             {FS: h, PinCPU: 0},
		"offline CPU":         {FS: h, CPUs: []int{9}, PinCPU: 0},
		"missing thread":      {FS: h, CPUs: []int{2}, PinCPU: 0, PID: 1, TID: 77},
		"missing irq":         {FS: h, CPUs: []int{2}, PinCPU: 0, IRQs: []int{999}},
		"names without func":  {FS: h, CPUs: []int{2}, PinCPU: 0, NICStatNames: []string{"rx_dropped"}},
		"interval too short":  {FS: h, CPUs: []int{2}, PinCPU: 0, Interval: 10},
	} {
		if s, err := New(cfg); err == nil {
			s.close()
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSampleAllocs(t *testing.T) {
	h := copyTree(t, "isolated")
	cfg := isolatedCfg(h)
	cfg.ThreadScanEvery = -1
	cfg.MaxSamples = 200
	nic := []string{"rx_dropped", "rx_missed"}
	var nicDrops uint64
	cfg.NICStatNames, cfg.NICStats = nic, func(dst []uint64) error { nicDrops++; dst[0] = nicDrops; return nil }
	cfg.MeasureFreq, cfg.FreqCPU = true, 2 // scaling_cur_freq on every sample
	cfg.MeasureEnergy = true               // RAPL energy_uj on every sample
	raplHost(t, h)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if n := testing.AllocsPerRun(100, s.sample); n != 0 {
		t.Fatalf("sample allocates %v times on the fake tree", n)
	}
	if s.errCount != 0 {
		t.Fatal(s.firstErr)
	}
	r := s.result()
	if r.Freq == nil || r.Freq.Source != rundir.FreqCurFreq || r.Freq.Samples != 101 { // AllocsPerRun warms up once
		t.Fatalf("frequency samples: %+v", r.Freq)
	}
	if r.Energy == nil || len(r.Energy.Zones) != 2 || r.Energy.Zones[0].Samples != 101 || r.Energy.Zones[0].CannotTell != "" {
		t.Fatalf("energy samples: %+v", r.Energy)
	}
	if len(r.Sources) != 1 || r.Sources[0].Label() != "nic rx_dropped" {
		t.Fatalf("only the NIC hook moved: %+v", r.Sources)
	}
}

// The live host: real seq_file and sysfs reads must not allocate either.
func TestSampleAllocsLive(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	s, err := New(Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{1}, PinCPU: 0, PID: os.Getpid(), TID: os.Getpid(), ThreadScanEvery: -1, MaxSamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if n := testing.AllocsPerRun(50, s.sample); n != 0 {
		t.Fatalf("sample allocates %v times on the live host", n)
	}
	if s.errCount != 0 {
		t.Fatal(s.firstErr)
	}
}

func BenchmarkSampleLive(b *testing.B) {
	s, err := New(Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{runtime.NumCPU() - 1}, PinCPU: 0, PID: os.Getpid(), TID: os.Getpid(),
		ThreadScanEvery: -1, MaxSamples: 2})
	if err != nil {
		b.Skip(err)
	}
	defer s.close()
	s.sample()
	s.sample() // storage full: the loop below measures reads+parses into slot... reset each time
	b.ReportAllocs()
	for b.Loop() {
		s.n = 1
		s.sample()
	}
}

func BenchmarkThreadScanLive(b *testing.B) {
	ts := newThreadScanner(hostfs.FS{Root: "/"}, []int{0}, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ts.scan(i)
	}
}

// With schedstat, a thread counts only when its timeslice count moved since
// the previous scan: a sleeper whose last CPU is the measured one does not.
func TestThreadScanSchedstat(t *testing.T) {
	h := copyTree(t, "isolated")
	for _, task := range []string{"4242/task/4250", "30/task/30", "31/task/31", "66/task/66"} {
		if err := os.WriteFile(h.Path("/proc/"+task+"/schedstat"), []byte("1000 0 10\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := newThreadScanner(h, []int{2, 6}, nil)
	ts.scan(0) // baseline: only the running responder (state R) counts
	if err := os.WriteFile(h.Path("/proc/30/task/30/schedstat"), []byte("5000 0 12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts.scan(1)
	got := map[string]rundir.ThreadSeen{}
	for _, th := range ts.threads {
		got[th.Comm] = th
	}
	if ts.noSched || len(got) != 2 || got["rig-responder"].Scans != 1 || got["ksoftirqd/2"].Scans != 1 || got["ksoftirqd/2"].RunNS != 4000 {
		t.Fatalf("noSched %v threads %+v", ts.noSched, ts.threads)
	}
}

// The round's busy time per CPU comes from the per-CPU counters (here
// /proc/schedstat: 300 ms of the second on CPU 2, none of it a thread the
// scans see), and from a container's PID namespace the thread list says
// its names are partial.
func TestBusyAndThreadsNote(t *testing.T) {
	h := copyTree(t, "isolated")
	rq := func(ns int) string {
		return "version 15\ntimestamp 1\ncpu2 0 0 9 1 9 9 " + strconv.Itoa(ns) + " 0 9\ncpu6 0 0 0 0 0 0 0 0 0\n"
	}
	if err := os.WriteFile(h.Path("/proc/schedstat"), []byte(rq(0)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(h.Path("/proc/2")); err != nil { // a pod's /proc: no kthreadd
		t.Fatal(err)
	}
	s, err := New(isolatedCfg(h))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.sample()
	s.readUse(0)
	if err := os.WriteFile(h.Path("/proc/schedstat"), []byte(rq(300_000_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	s.sample()
	s.readUse(1)
	s.useT[1] = s.useT[0].Add(time.Second) // the fake's counters moved by a nominal second
	r := s.result()
	if len(r.Busy) != 2 || r.Busy[0].CPU != 2 || r.Busy[0].Share != 0.3 || r.Busy[0].Source != hostinfo.BusyRunQueue || r.Busy[1].Share != 0 {
		t.Fatalf("busy %+v", r.Busy)
	}
	if !strings.Contains(r.ThreadsNote, "only this PID namespace") || !strings.Contains(r.ThreadsNote, "hostPID: true") {
		t.Fatalf("threads note %q", r.ThreadsNote)
	}
}
