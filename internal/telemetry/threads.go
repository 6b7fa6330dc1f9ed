package telemetry

import (
	"slices"
	"strconv"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// threadScanner finds the threads that ran on the measured CPUs. A task's
// stat field 39 is the CPU it last ran on, which stays set while it sleeps;
// so a thread counts in a scan only if /proc/.../schedstat shows it ran
// (its timeslice count moved) since the previous scan. Without schedstat
// (CONFIG_SCHED_INFO off) every sighting counts and Result says so.
// The scan names threads; it cannot measure how busy a CPU was (threads
// born and gone between two scans, and in a container every thread outside
// its PID namespace, are never seen): Result.Busy does, from the per-CPU
// counters.
//
// The scan allocates (directory listings, file reads); it runs every
// Config.ThreadScanEvery samples, not on every sample.
type threadScanner struct {
	fs      hostfs.FS
	cpus    []int
	threads []rundir.ThreadSeen
	byTID   map[int]int    // tid -> index in threads (latest comm)
	slices  map[int]uint64 // tid -> timeslices at the previous scan
	runNS   map[int]uint64
	hits    []threadHit
	noSched bool
	scanned func(sample int, tasks []Task)
}

type threadHit struct{ sample, thread int32 }

func newThreadScanner(fs hostfs.FS, cpus []int, scanned func(int, []Task)) *threadScanner {
	return &threadScanner{fs: fs, cpus: cpus, byTID: map[int]int{}, slices: map[int]uint64{}, runNS: map[int]uint64{}, scanned: scanned}
}

// Task is one thread a scan found on a watched CPU: its state and last
// CPU (stat) and, when SchedOK, its run time and timeslices (schedstat).
type Task struct {
	PID, TID int
	Comm     string
	State    byte
	CPU      int
	Sched    hostinfo.TaskSchedstat
	SchedOK  bool
}

// tasks reads the stat of every thread, and the schedstat of those whose
// last CPU is watched. Threads that exit during the scan are skipped.
func (ts *threadScanner) tasks() []Task {
	var out []Task
	procs, err := ts.fs.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/task"
		tasks, err := ts.fs.ReadDir(dir)
		if err != nil {
			continue // exited
		}
		for _, t := range tasks {
			b, err := ts.fs.ReadFile(dir + "/" + t.Name() + "/stat")
			if err != nil {
				continue
			}
			st, ok := hostinfo.ParseTaskStat(b)
			if !ok || !slices.Contains(ts.cpus, st.CPU) {
				continue
			}
			tk := Task{PID: pid, TID: st.PID, Comm: string(st.Comm), State: st.State, CPU: st.CPU}
			if !ts.noSched {
				if b, err := ts.fs.ReadFile(dir + "/" + t.Name() + "/schedstat"); err == nil {
					tk.Sched, tk.SchedOK = hostinfo.ParseTaskSchedstat(b)
				}
			}
			out = append(out, tk)
		}
	}
	return out
}

// scan records the threads that ran on the watched CPUs since the
// previous scan, and hands every thread there to Config.Scanned. Without
// schedstat (no thread of a scan has one: CONFIG_SCHED_INFO off) every
// sighting counts from then on.
func (ts *threadScanner) scan(sample int) {
	tasks := ts.tasks()
	if !ts.noSched && len(tasks) > 0 && !slices.ContainsFunc(tasks, func(t Task) bool { return t.SchedOK }) {
		ts.noSched = true
	}
	for _, t := range tasks {
		ran, runNS := ts.ran(t)
		if !ran {
			continue
		}
		k, ok := ts.byTID[t.TID]
		if !ok || ts.threads[k].Comm != t.Comm {
			k = len(ts.threads)
			ts.threads = append(ts.threads, rundir.ThreadSeen{TID: t.TID, PID: t.PID, Comm: t.Comm})
			ts.byTID[t.TID] = k
		}
		th := &ts.threads[k]
		th.CPU = t.CPU
		th.Scans++
		th.RunNS += runNS
		ts.hits = append(ts.hits, threadHit{int32(sample), int32(k)})
	}
	if ts.scanned != nil {
		ts.scanned(sample, tasks)
	}
}

// ran reports whether the task ran since the previous scan, and for how
// long. The first sighting, or one without schedstat, only counts if the
// task is running now.
func (ts *threadScanner) ran(t Task) (bool, uint64) {
	if ts.noSched {
		return true, 0
	}
	if !t.SchedOK {
		return t.State == 'R', 0
	}
	run, n := t.Sched.RunNS, t.Sched.Slices
	prev, seen := ts.slices[t.TID]
	prevRun := ts.runNS[t.TID]
	ts.slices[t.TID], ts.runNS[t.TID] = n, run
	if !seen {
		return t.State == 'R', 0
	}
	if n == prev {
		return false, 0
	}
	return true, run - prevRun
}
