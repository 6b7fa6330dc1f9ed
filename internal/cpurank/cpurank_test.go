package cpurank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// fakeHost is a procfs/sysfs tree whose counters the test moves between
// the ranker's scans.
type fakeHost struct {
	t    *testing.T
	fs   hostfs.FS
	cpus int
	// per CPU, advanced by step(): device IRQ 30, LOC, NET_RX softirq,
	// steal ticks (USER_HZ), every task's run time and timeslices (which
	// /proc/stat shows as user ticks, /proc/schedstat as they are), ticks
	irq, loc, soft, steal, runNS, slices, ticks []uint64
	// inflight is run time of slices not ended yet: in /proc/stat, not
	// yet in /proc/schedstat
	inflight []uint64
	tasks    []*fakeTask
	sched    bool // write per-thread schedstat
	rq       bool // write /proc/schedstat
}

type fakeTask struct {
	pid, tid int
	comm     string
	cpu      int
	state    byte
	run      uint64 // ns
	slices   uint64
	// per step
	runStep, sliceStep uint64
	// hidden: not in /proc (born and gone between scans, or in another
	// PID namespace); its run time shows only in the per-CPU counters
	hidden bool
	// unswitched: never switched out, so not in rq_cpu_time yet
	unswitched bool
}

func newFake(t *testing.T, cpus int, siblings map[int]string) *fakeHost {
	h := &fakeHost{t: t, fs: hostfs.FS{Root: t.TempDir()}, cpus: cpus, sched: true,
		irq: make([]uint64, cpus), loc: make([]uint64, cpus), soft: make([]uint64, cpus), steal: make([]uint64, cpus),
		runNS: make([]uint64, cpus), slices: make([]uint64, cpus), ticks: make([]uint64, cpus), inflight: make([]uint64, cpus)}
	h.write("/sys/devices/system/cpu/online", fmt.Sprintf("0-%d\n", cpus-1))
	h.write("/proc/self/status", fmt.Sprintf("Name:\trig\nCpus_allowed_list:\t0-%d\n", cpus-1))
	h.write("/proc/net/softnet_stat", strings.Repeat("00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n", cpus))
	h.hostPIDs(true)
	for c := 0; c < cpus; c++ {
		sib := siblings[c]
		if sib == "" {
			sib = fmt.Sprint(c)
		}
		h.write(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c), sib+"\n")
		h.write(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/core_id", c), fmt.Sprint(c)+"\n")
		h.write(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c), "0\n")
	}
	h.flush()
	return h
}

// hostPIDs makes /proc the host's (kthreadd is PID 2) or a container's
// own (no PID 2).
func (h *fakeHost) hostPIDs(host bool) {
	h.t.Helper()
	if host {
		h.write("/proc/2/comm", "kthreadd\n")
	} else if err := os.RemoveAll(h.fs.Path("/proc/2")); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) write(p, v string) {
	h.t.Helper()
	f := h.fs.Path(p)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) flush() {
	var b bytes.Buffer
	row := func(id string, v []uint64, desc string) {
		fmt.Fprintf(&b, "%4s:", id)
		for _, x := range v {
			fmt.Fprintf(&b, " %10d", x)
		}
		fmt.Fprintf(&b, "  %s\n", desc)
	}
	for c := 0; c < h.cpus; c++ {
		fmt.Fprintf(&b, "       CPU%d", c)
	}
	b.WriteString("\n")
	row("30", h.irq, "PCI-MSIX-0000:00:05.0 1-edge eth0-rx-0")
	row("LOC", h.loc, "Local timer interrupts")
	h.write("/proc/interrupts", b.String())
	b.Reset()
	for c := 0; c < h.cpus; c++ {
		fmt.Fprintf(&b, "    CPU%d", c)
	}
	b.WriteString("\n")
	row("NET_RX", h.soft, "")
	row("TIMER", make([]uint64, h.cpus), "")
	h.write("/proc/softirqs", b.String())
	b.Reset()
	user, idle := make([]uint64, h.cpus), make([]uint64, h.cpus)
	var tu, ti, ts uint64
	for c := 0; c < h.cpus; c++ {
		user[c] = (h.runNS[c] + h.inflight[c]) / 10_000_000
		idle[c] = h.ticks[c] - min(h.ticks[c], user[c]+h.steal[c])
		tu, ti, ts = tu+user[c], ti+idle[c], ts+h.steal[c]
	}
	fmt.Fprintf(&b, "cpu  %d 0 0 %d 0 0 0 %d 0 0\n", tu, ti, ts)
	for c := 0; c < h.cpus; c++ {
		fmt.Fprintf(&b, "cpu%d %d 0 0 %d 0 0 0 %d 0 0\n", c, user[c], idle[c], h.steal[c])
	}
	b.WriteString("intr 0\nctxt 0\nbtime 1796227201\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	h.write("/proc/stat", b.String())
	if h.rq {
		b.Reset()
		b.WriteString("version 15\ntimestamp 4294937296\n")
		for c := 0; c < h.cpus; c++ {
			fmt.Fprintf(&b, "cpu%d 0 0 %d 0 %d 0 %d 0 %d\n", c, h.slices[c], h.slices[c], h.runNS[c], h.slices[c])
			fmt.Fprintf(&b, "domain0 %x 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", 1<<h.cpus-1)
		}
		h.write("/proc/schedstat", b.String())
	}
	for _, tk := range h.tasks {
		if tk.hidden {
			continue
		}
		d := fmt.Sprintf("/proc/%d/task/%d/", tk.pid, tk.tid)
		// Fields 3..39: state, then 35 numbers, the last being the CPU.
		fields := make([]string, 36)
		for i := range fields {
			fields[i] = "0"
		}
		fields[35] = fmt.Sprint(tk.cpu)
		h.write(d+"stat", fmt.Sprintf("%d (%s) %c %s\n", tk.tid, tk.comm, tk.state, strings.Join(fields, " ")))
		if h.sched {
			h.write(d+"schedstat", fmt.Sprintf("%d 0 %d\n", tk.run, tk.slices))
		}
	}
}

// step advances the counters by one ranker step of the window; user
// ticks are run time of tasks outside the fake's list.
func (h *fakeHost) step(irq, loc, soft, user, steal []uint64) {
	for c := 0; c < h.cpus; c++ {
		h.irq[c] += at(irq, c)
		h.loc[c] += at(loc, c)
		h.soft[c] += at(soft, c)
		h.runNS[c] += at(user, c) * 10_000_000
		h.steal[c] += at(steal, c)
		h.ticks[c] += 25 // 4 steps of 1 s at USER_HZ 100
	}
	for _, tk := range h.tasks {
		tk.run += tk.runStep
		tk.slices += tk.sliceStep
		if tk.unswitched {
			h.inflight[tk.cpu] += tk.runStep
			continue
		}
		h.runNS[tk.cpu] += tk.runStep
		h.slices[tk.cpu] += tk.sliceStep
	}
	h.flush()
}

func at(v []uint64, i int) uint64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func (h *fakeHost) rank(t *testing.T, o Options, each func()) *rundir.Ranking {
	t.Helper()
	o.NoPin = true
	o.Window = time.Second
	o.Scans = 5
	o.Self = 1 // the fake tree has no process of the test's pid
	o.Sleep = func(context.Context, time.Duration) error { each(); return nil }
	r, err := Rank(context.Background(), h.fs, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A busy thread on one CPU sends the choice to the other, both ways, with
// and without /proc/schedstat.
func TestBusyThreadDecides(t *testing.T) {
	for i, busy := range []int{0, 1, 0, 1} {
		want := 1 - busy
		h := newFake(t, 2, nil)
		h.rq = i >= 2
		h.tasks = []*fakeTask{{pid: 100, tid: 100, comm: "stress-ng-cpu", cpu: busy, state: 'R', runStep: 250_000_000, sliceStep: 60}}
		h.flush()
		r := h.rank(t, Options{}, func() { h.step(nil, []uint64{250, 250}, nil, nil, nil) })
		if r.Chosen != want || r.CPUs[0].Rank != 1 || len(r.CPUs) != 2 {
			t.Fatalf("busy CPU %d: chose %d, want %d:\n%+v", busy, r.Chosen, want, r.CPUs)
		}
		loud := r.CPUs[1]
		if loud.CPU != busy || loud.RunUS < 999_000 || loud.CtxSwitches != 240 || loud.Runnable != 1 ||
			!strings.HasPrefix(loud.TopThreads[0], "stress-ng-cpu[100] 1000.0 ms") {
			t.Errorf("evidence of the busy CPU: %+v", loud)
		}
		if q := r.CPUs[0]; q.RunUS != 0 || q.Runnable != 0 || q.ArchIRQs != 1000 || q.Own != 2000 {
			t.Errorf("evidence of the quiet CPU: %+v", q)
		}
		if !strings.Contains(r.From, "Cpus_allowed_list 0-1") || !strings.Contains(r.CtxSource, "schedstat") {
			t.Errorf("sources: %q %q", r.From, r.CtxSource)
		}
		src := "from /proc/stat on CPU 0-1, less the ranker's own threads"
		if h.rq {
			src = "from /proc/schedstat rq_cpu_time on CPU 0-1, less"
		}
		if !strings.Contains(r.RunSource, src) {
			t.Errorf("run source %q, want %q", r.RunSource, src)
		}
	}
}

// Run time that no scan of /proc sees — threads born and gone between two
// scans, threads in another PID namespace — is counted from the per-CPU
// counters; the threads /proc shows only name what ran.
func TestUnseenRunCounted(t *testing.T) {
	for _, rq := range []bool{false, true} {
		h := newFake(t, 2, nil)
		h.rq = rq
		h.tasks = []*fakeTask{{pid: 200, tid: 200, comm: "short-lived", cpu: 1, runStep: 200_000_000, sliceStep: 400, hidden: true},
			{pid: 100, tid: 100, comm: "sh", cpu: 1, state: 'S', runStep: 1_000_000, sliceStep: 50}}
		h.flush()
		r := h.rank(t, Options{}, func() { h.step(nil, []uint64{250, 250}, nil, nil, nil) })
		loud := r.Get(1)
		if r.Chosen != 0 || loud.RunUS < 800_000 || loud.RunUS > 805_000 || loud.BusyPct < 80 {
			t.Fatalf("schedstat %v: chose %d; CPU 1: %+v", rq, r.Chosen, loud)
		}
		if loud.TopThreads[0] != "sh[100] 4.0 ms" {
			t.Errorf("names: %v", loud.TopThreads)
		}
		// The runqueue counts every timeslice; the scan only the ones of
		// threads it sees.
		if want := map[bool]float64{false: 200, true: 1800}[rq]; loud.CtxSwitches != want {
			t.Errorf("schedstat %v: %v context switches/s, want %v", rq, loud.CtxSwitches, want)
		}
	}
}

// rq_cpu_time charges a slice when it ends: a thread that is never switched
// out in the window shows in /proc/stat only, and /proc/stat is taken.
func TestNotSwitchedOut(t *testing.T) {
	h := newFake(t, 2, nil)
	h.rq = true
	h.tasks = []*fakeTask{{pid: 300, tid: 300, comm: "poller", cpu: 0, state: 'R', runStep: 250_000_000, unswitched: true}}
	h.flush()
	r := h.rank(t, Options{}, func() { h.step(nil, []uint64{1, 1}, nil, nil, nil) })
	if c := r.Get(0); r.Chosen != 1 || c.RunUS != 1e6 {
		t.Fatalf("chose %d; CPU 0: %+v", r.Chosen, c)
	}
	if !strings.Contains(r.RunSource, "from /proc/schedstat rq_cpu_time on CPU 1, "+hostinfo.BusyStatOver+" on CPU 0") {
		t.Errorf("run source %q", r.RunSource)
	}
}

// In a container's PID namespace the ranking says that the threads it
// names are the container's only, and how to name the others.
func TestChildPIDNamespace(t *testing.T) {
	h := newFake(t, 2, nil)
	r := h.rank(t, Options{}, func() { h.step(nil, nil, nil, nil, nil) })
	if len(r.Notes) != 1 || strings.Contains(r.Notes[0], "PID namespace") {
		t.Fatalf("host PID namespace: notes %q", r.Notes)
	}
	h.hostPIDs(false)
	r = h.rank(t, Options{}, func() { h.step(nil, nil, nil, nil, nil) })
	if n := r.Notes[len(r.Notes)-1]; !strings.Contains(n, "only this PID namespace") || !strings.Contains(n, "hostPID: true") {
		t.Fatalf("notes %q", r.Notes)
	}
}

// Interrupts and softirqs rank idle CPUs; steal counts like run time.
func TestEventsAndSteal(t *testing.T) {
	h := newFake(t, 4, nil)
	r := h.rank(t, Options{}, func() {
		h.step([]uint64{0, 500, 0, 0}, []uint64{10, 10, 10, 10}, []uint64{0, 0, 400, 0}, nil, []uint64{0, 0, 0, 5})
	})
	var order []int
	for _, c := range r.CPUs {
		order = append(order, c.CPU)
	}
	// CPU 3: 20 % steal = 200 000 µs/s; CPU 1: 2000 irq/s; CPU 2: 1600 softirq/s.
	if fmt.Sprint(order) != "[0 2 1 3]" {
		t.Fatalf("order %v:\n%+v", order, r.CPUs)
	}
	if c := r.CPUs[1]; c.Softirqs != 1600 || c.Own != 2*(1600+40) {
		t.Errorf("CPU 2: %+v", c)
	}
	if c := r.CPUs[2]; c.IRQs != 2000 || c.TopIRQs[0] != "30 eth0-rx-0 2000/s" {
		t.Errorf("CPU 1: %+v", c)
	}
	if c := r.CPUs[3]; c.StealPct != 20 || c.Own < 200_000 {
		t.Errorf("CPU 3: %+v", c)
	}
}

// A CPU whose SMT sibling is busy ranks behind a core that is idle, even
// though the CPU itself is quiet; between the two threads of a core the
// quieter wins.
func TestSiblingAddsToCost(t *testing.T) {
	h := newFake(t, 4, map[int]string{0: "0,2", 2: "0,2", 1: "1,3", 3: "1,3"})
	h.tasks = []*fakeTask{{pid: 100, tid: 101, comm: "noisy", cpu: 2, state: 'R', runStep: 200_000_000, sliceStep: 10}}
	h.flush()
	r := h.rank(t, Options{CPUs: []int{0, 1}}, func() { h.step(nil, []uint64{1, 2, 1, 1}, nil, nil, nil) })
	if r.Chosen != 1 || r.CPUs[1].CPU != 0 || r.CPUs[1].Cost < 800_000 || r.CPUs[1].Own > 100 {
		t.Fatalf("%+v", r.CPUs)
	}
	if fmt.Sprint(r.Candidates) != "[0 1]" || !strings.Contains(r.From, "list 0-1") {
		t.Errorf("candidates %v from %q", r.Candidates, r.From)
	}
	r = h.rank(t, Options{CPUs: []int{0, 2}}, func() { h.step(nil, nil, nil, nil, nil) })
	if r.Chosen != 0 || r.CPUs[0].Cost != r.CPUs[1].Cost {
		t.Fatalf("two threads of one core: %+v", r.CPUs)
	}
}

// The ranker's own threads are not counted, whoever they are.
func TestSelfNotCounted(t *testing.T) {
	for _, rq := range []bool{false, true} {
		h := newFake(t, 2, nil)
		h.rq = rq
		h.tasks = []*fakeTask{{pid: 1, tid: 7, comm: "rig", cpu: 1, state: 'R', runStep: 250_000_000, sliceStep: 5}}
		h.flush()
		r := h.rank(t, Options{}, func() { h.step(nil, []uint64{5, 1}, nil, nil, nil) })
		if r.Chosen != 1 || r.CPUs[0].RunUS != 0 || r.CPUs[0].Runnable != 0 || r.CPUs[0].CtxSwitches != 0 || r.CPUs[0].BusyPct != 100 {
			t.Fatalf("schedstat %v: %+v", rq, r.CPUs)
		}
	}
}

// Without per-thread schedstat the busy share of /proc/stat stands in for
// the run time, and the result says so.
func TestNoSchedstat(t *testing.T) {
	h := newFake(t, 2, nil)
	h.sched = false
	h.tasks = []*fakeTask{{pid: 100, tid: 100, comm: "busy", cpu: 0, state: 'R'}}
	h.flush()
	r := h.rank(t, Options{}, func() { h.step(nil, nil, nil, []uint64{20, 1}, nil) })
	if r.Chosen != 1 || r.CPUs[1].RunUS != 800_000 || r.CPUs[1].CtxSwitches != 0 || !strings.Contains(r.CtxSource, "unavailable") || len(r.Notes) == 0 {
		t.Fatalf("%+v %q %v", r.CPUs, r.CtxSource, r.Notes)
	}
	if r.CPUs[1].TopThreads[0] != "busy[100] ×4" {
		t.Errorf("runnable sightings: %v", r.CPUs[1].TopThreads)
	}
}

// The sampler scans only the watched CPUs' threads: a quiet candidate
// (no thread there) does not make schedstat look missing.
func TestQuietCandidateKeepsSchedstat(t *testing.T) {
	h := newFake(t, 2, nil)
	h.tasks = []*fakeTask{{pid: 100, tid: 100, comm: "busy", cpu: 0, state: 'R', runStep: 1000, sliceStep: 1}}
	h.flush()
	r := h.rank(t, Options{CPUs: []int{1}}, func() { h.step(nil, nil, nil, nil, nil) })
	if strings.Contains(r.RunSource+r.CtxSource, "CONFIG_SCHED_INFO") {
		t.Fatalf("%q %q", r.RunSource, r.CtxSource)
	}
}

func TestCandidatesRefused(t *testing.T) {
	h := newFake(t, 4, nil)
	h.tasks = []*fakeTask{{pid: 100, tid: 100, comm: "sleeper", cpu: 3, state: 'S'}}
	h.flush()
	h.write("/proc/self/status", "Cpus_allowed_list:\t2-3\n")
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{[]int{0, 1}, "none of the candidates 0-1 may be used by rig here: its cpuset allows 2-3"},
		{[]int{2, 9}, "CPU 9 of the candidates 2,9 is not online here (online: 0-3)"},
	} {
		_, err := Rank(context.Background(), h.fs, Options{CPUs: c.cpus, NoPin: true, Sleep: func(context.Context, time.Duration) error { return nil }})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.cpus, err, c.want)
		}
	}
	// Partly outside the cpuset: ranked among the rest, with a note.
	r := h.rank(t, Options{CPUs: []int{1, 2, 3}}, func() { h.step(nil, nil, nil, nil, nil) })
	if fmt.Sprint(r.Candidates) != "[2 3]" || !strings.Contains(r.Notes[0], "CPU 1 is outside") {
		t.Fatalf("%v %v", r.Candidates, r.Notes)
	}
	// The allowed set by default.
	r = h.rank(t, Options{}, func() { h.step(nil, nil, nil, nil, nil) })
	if fmt.Sprint(r.Candidates) != "[2 3]" {
		t.Fatalf("default candidates %v", r.Candidates)
	}
}

func TestCancelled(t *testing.T) {
	h := newFake(t, 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Rank(ctx, h.fs, Options{NoPin: true, Window: time.Hour}); err == nil {
		t.Fatal("a cancelled ranking returned no error")
	}
}

func TestTextAndJSON(t *testing.T) {
	h := newFake(t, 2, nil)
	h.tasks = []*fakeTask{{pid: 100, tid: 100, comm: "stress-ng-cpu", cpu: 0, state: 'R', runStep: 250_000_000, sliceStep: 1}}
	h.flush()
	r := h.rank(t, Options{}, func() { h.step([]uint64{3, 0}, nil, nil, nil, nil) })
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"quietest CPU 1 of 0-1 over 1s: cost 0 µs/s (next: CPU 0, 1000032 µs/s)", "rank", "CPU 0: stress-ng-cpu[100] 1000.0 ms; 30 eth0-rx-0 12/s", "rule: cost of a CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back rundir.Ranking
	if err := json.Unmarshal(j, &back); err != nil || back.Format != rundir.RankingFormat || back.Chosen != 1 || back.CPUs[1].TopThreads[0] != r.CPUs[1].TopThreads[0] {
		t.Fatalf("%v %+v", err, back)
	}
}
