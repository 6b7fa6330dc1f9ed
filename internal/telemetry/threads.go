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
}

type threadHit struct{ sample, thread int32 }

func newThreadScanner(fs hostfs.FS, cpus []int) *threadScanner {
	return &threadScanner{fs: fs, cpus: cpus, byTID: map[int]int{}, slices: map[int]uint64{}, runNS: map[int]uint64{}}
}

func (ts *threadScanner) scan(sample int) {
	procs, err := ts.fs.ReadDir("/proc")
	if err != nil {
		return
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
			tid, comm, state, cpu, ok := hostinfo.ParseTaskStatFields(b)
			if !ok || !slices.Contains(ts.cpus, cpu) {
				continue
			}
			ran, runNS := ts.ran(dir+"/"+t.Name()+"/schedstat", tid, state)
			if !ran {
				continue
			}
			k, ok := ts.byTID[tid]
			if !ok || ts.threads[k].Comm != string(comm) {
				k = len(ts.threads)
				ts.threads = append(ts.threads, rundir.ThreadSeen{TID: tid, PID: pid, Comm: string(comm)})
				ts.byTID[tid] = k
			}
			th := &ts.threads[k]
			th.CPU = cpu
			th.Scans++
			th.RunNS += runNS
			ts.hits = append(ts.hits, threadHit{int32(sample), int32(k)})
		}
	}
}

// ran reports whether the task ran since the previous scan, and for how
// long. The first sighting only counts if the task is running now.
func (ts *threadScanner) ran(p string, tid int, state byte) (bool, uint64) {
	if ts.noSched {
		return true, 0
	}
	b, err := ts.fs.ReadFile(p)
	if err != nil {
		ts.noSched = true
		return true, 0
	}
	st, ok := hostinfo.ParseTaskSchedstat(b)
	if !ok {
		ts.noSched = true
		return true, 0
	}
	run, n := st.RunNS, st.Slices
	prev, seen := ts.slices[tid]
	prevRun := ts.runNS[tid]
	ts.slices[tid], ts.runNS[tid] = n, run
	if !seen {
		return state == 'R', 0
	}
	if n == prev {
		return false, 0
	}
	return true, run - prevRun
}
