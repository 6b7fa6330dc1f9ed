package cpusched

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
)

// ThreadCPUs returns the calling thread's allowed CPUs.
func ThreadCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func TestParseSched(t *testing.T) {
	for in, want := range map[string]Sched{"": {}, "other": {}, "fifo:1": {FIFO, 1}, "fifo:99": {FIFO, 99}} {
		got, err := ParseSched(in)
		if err != nil || got != want {
			t.Errorf("ParseSched(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"fifo:0", "fifo:100", "fifo:x", "rr:5", "FIFO"} {
		if _, err := ParseSched(bad); err == nil {
			t.Errorf("ParseSched(%q) accepted", bad)
		}
	}
}

// TestSchedText: String is what ParseSched reads, and the manifest's JSON
// form is the same text.
func TestSchedText(t *testing.T) {
	for _, in := range []string{"other", "fifo:1", "fifo:99"} {
		sc, err := ParseSched(in)
		if err != nil || sc.String() != in {
			t.Errorf("ParseSched(%q) = %v, %v", in, sc, err)
		}
		b, _ := sc.MarshalText()
		var back Sched
		if err := back.UnmarshalText(b); err != nil || back != sc {
			t.Errorf("text %q read back as %v, %v", b, back, err)
		}
	}
	var back Sched
	if err := back.UnmarshalText([]byte("fifo:0")); err == nil {
		t.Error("UnmarshalText accepted fifo:0")
	}
}

// FuzzParseSched: whatever ParseSched accepts prints back to a text it
// reads as the same policy.
func FuzzParseSched(f *testing.F) {
	for _, s := range []string{"", "other", "fifo:1", "fifo:99", "fifo:0", "fifo:100", "fifo:", "fifo:+5", "rr:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseSched(s)
		if err != nil {
			return
		}
		back, err := ParseSched(sc.String())
		if err != nil || back != sc {
			t.Fatalf("ParseSched(%q) = %v; its String %q reads as %v, %v", s, sc, sc.String(), back, err)
		}
		if sc.Policy == FIFO && (sc.Priority < 1 || sc.Priority > 99) {
			t.Fatalf("ParseSched(%q) = priority %d", s, sc.Priority)
		}
	})
}

func TestCheckCPUFake(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/online"), []byte("0-3\n"), 0o644)
	fs := hostfs.FS{Root: root}
	if err := CheckCPU(fs, 3); err != nil {
		t.Fatal(err)
	}
	err := CheckCPU(fs, 7)
	if !errors.Is(err, os.ErrNotExist) || err.Error() != "CPU 7 does not exist or is offline on this host (online: 0-3): file does not exist" {
		t.Fatalf("got %v", err)
	}
}

func TestPinThread(t *testing.T) {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := PinThread(0); err != nil {
			done <- err
			return
		}
		cpus, err := ThreadCPUs()
		if err == nil && !slices.Equal(cpus, []int{0}) {
			err = errors.New("affinity not applied")
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestYielderQuiet: a Yielder yields at its first quiet moment, not again
// within YieldEvery, then again; a quiet moment does not allocate.
func TestYielderQuiet(t *testing.T) {
	var y Yielder
	now := time.Now()
	if !y.Quiet(now) {
		t.Fatal("first quiet moment did not yield")
	}
	if y.Quiet(time.Now()) {
		t.Fatal("yielded again within YieldEvery")
	}
	if !y.Quiet(time.Now().Add(YieldEvery)) {
		t.Fatal("did not yield after YieldEvery")
	}
	if n := testing.AllocsPerRun(100, func() { y.Quiet(time.Now()) }); n != 0 {
		t.Fatalf("Quiet allocated %v times", n)
	}
}

// TestYielderCycle: a caller's cycle stretches the time between yields so
// that the next quiet moment, a cycle later at most, still comes within
// yieldBy of the last yield (sysmon preempts at 10 ms), and no further.
func TestYielderCycle(t *testing.T) {
	for _, c := range []struct{ cycle, every time.Duration }{
		{0, YieldEvery},
		{time.Millisecond, 8 * time.Millisecond},
		{100 * time.Microsecond, 8 * time.Millisecond},
		{4 * time.Millisecond, 5 * time.Millisecond},
		{9 * time.Millisecond, 0},
		{time.Second, 0},
	} {
		y := Yielder{Cycle: c.cycle}
		if got := y.Every(); got != c.every {
			t.Errorf("cycle %v: every %v, want %v", c.cycle, got, c.every)
		}
		if c.cycle > 0 && c.cycle < yieldBy && y.Every()+c.cycle > yieldBy {
			t.Errorf("cycle %v: a quiet moment can come %v after a yield, past %v", c.cycle, y.Every()+c.cycle, yieldBy)
		}
		y.Quiet(time.Now()) // Quiet stamps its yield with the clock
		if y.Every() > 0 && y.Quiet(time.Now()) {
			t.Errorf("cycle %v: yielded before %v", c.cycle, y.Every())
		}
		if !y.Quiet(time.Now().Add(y.Every())) {
			t.Errorf("cycle %v: did not yield after %v", c.cycle, y.Every())
		}
	}
}

// TestYielderGap: observed gaps raise Cycle at once and lower it by an
// eighth a gap, so one short gap after a long one keeps yields frequent.
func TestYielderGap(t *testing.T) {
	var y Yielder
	y.Gap(time.Millisecond)
	if y.Cycle != time.Millisecond {
		t.Fatalf("first gap 1ms: cycle %v", y.Cycle)
	}
	y.Gap(40 * time.Millisecond)
	y.Gap(10 * time.Microsecond)
	if y.Cycle != 35*time.Millisecond || y.Every() != 0 {
		t.Fatalf("40ms then 10µs: cycle %v, every %v; want 35ms, 0", y.Cycle, y.Every())
	}
	for range 40 {
		y.Gap(time.Millisecond)
	}
	if y.Cycle != time.Millisecond {
		t.Fatalf("after 40 gaps of 1ms: cycle %v", y.Cycle)
	}
	if n := testing.AllocsPerRun(100, func() { y.Gap(time.Millisecond) }); n != 0 {
		t.Fatalf("Gap allocated %v times", n)
	}
}

func TestEnsureProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	restore := EnsureProcs(3)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS = %d after EnsureProcs(3), want 3", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS = %d after restore, want 1", got)
	}
	runtime.GOMAXPROCS(4)
	EnsureProcs(2)()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("EnsureProcs(2) changed GOMAXPROCS 4 to %d", got)
	}
}

// TestAvoidCPU: every thread of the process, those started afterwards
// included, keeps off the CPU, and restore gives each its set back.
func TestAvoidCPU(t *testing.T) {
	var self unix.CPUSet
	if err := unix.SchedGetaffinity(0, &self); err != nil || self.Count() < 2 {
		t.Skipf("needs two CPUs to run on: %v", err)
	}
	// A CPU no thread is pinned to alone (other tests pin theirs).
	cpu := -1
	pinned := map[int]bool{}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		var s unix.CPUSet
		if tid, _ := strconv.Atoi(e.Name()); unix.SchedGetaffinity(tid, &s) == nil && s.Count() == 1 {
			for c := range 1024 {
				pinned[c] = pinned[c] || s.IsSet(c)
			}
		}
	}
	for c := range 1024 {
		if self.IsSet(c) && !pinned[c] {
			cpu = c
			break
		}
	}
	if cpu < 0 {
		t.Skip("every CPU has a thread pinned to it alone")
	}
	restore, err := AvoidCPU(cpu)
	if err != nil {
		t.Fatal(err)
	}
	later := make(chan unix.CPUSet)
	go func() { // a new OS thread, created after
		runtime.LockOSThread()
		var s unix.CPUSet
		unix.SchedGetaffinity(0, &s)
		later <- s
	}()
	on := func() (n int) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			var s unix.CPUSet
			if tid, _ := strconv.Atoi(e.Name()); unix.SchedGetaffinity(tid, &s) == nil && s.IsSet(cpu) {
				n++
			}
		}
		return n
	}
	if s := <-later; s.IsSet(cpu) || on() != 0 {
		t.Errorf("CPU %d: a thread started later may run there %v, %d threads may", cpu, s.IsSet(cpu), on())
	}
	restore()
	// Every thread, the one started in between included, may run there
	// again unless another test pinned it elsewhere.
	ents, _ = os.ReadDir("/proc/self/task")
	for _, e := range ents {
		var s unix.CPUSet
		if tid, _ := strconv.Atoi(e.Name()); unix.SchedGetaffinity(tid, &s) == nil && s.Count() > 1 && !s.IsSet(cpu) {
			t.Errorf("thread %d kept out of CPU %d after restore", tid, cpu)
		}
	}
	if on() == 0 {
		t.Errorf("restore gave CPU %d back to no thread", cpu)
	}
}
