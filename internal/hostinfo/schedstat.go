package hostinfo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
)

// TaskSchedstat is /proc/PID/task/TID/schedstat (CONFIG_SCHED_INFO): the
// time the task ran, the time it waited on a runqueue, and how many
// timeslices it ran (each one begins with a context switch onto a CPU).
type TaskSchedstat struct {
	RunNS, WaitNS, Slices uint64
}

// ParseTaskSchedstat parses the three numbers of a task's schedstat file
// ("run_ns wait_ns timeslices\n"). It does not allocate; ok is false for
// anything else.
func ParseTaskSchedstat(b []byte) (s TaskSchedstat, ok bool) {
	var v [3]uint64
	for i := range v {
		b = trimLeftSpace(b)
		n, m, good := parseUintPrefix(b)
		if !good {
			return TaskSchedstat{}, false
		}
		v[i] = n
		b = b[m:]
	}
	if len(bytes.TrimSpace(b)) != 0 {
		return TaskSchedstat{}, false
	}
	return TaskSchedstat{RunNS: v[0], WaitNS: v[1], Slices: v[2]}, true
}

// RunQueue is one cpuN line of /proc/schedstat (CONFIG_SCHEDSTATS): what
// the CPU's runqueue ran, every task of the node counted, exited ones
// included. RunNS (field 7, rq_cpu_time) is charged when a task is switched
// out, so a task still running is not in it yet.
type RunQueue struct {
	CPU                   int
	RunNS, WaitNS, Slices uint64 // fields 7, 8, 9
}

// Versions of /proc/schedstat whose cpuN lines rig reads (the kernel's
// sched-stats.rst: 15 dropped three yield counters; 16 and 17 changed only
// the domain lines). The kernel bumps the version when a field changes.
const minSchedstatVersion, maxSchedstatVersion = 15, 17

// ParseSchedstat parses /proc/schedstat: the version line, then one cpuN
// line per online CPU with at least nine numbers; domain lines are skipped.
// A version rig does not know is an error: its fields may mean otherwise.
func ParseSchedstat(b []byte) ([]RunQueue, error) {
	var out []RunQueue
	version := -1
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		switch {
		case len(f) == 0 || f[0] == "timestamp" || strings.HasPrefix(f[0], "domain"):
		case f[0] == "version" && version < 0 && len(f) == 2:
			v, err := strconv.Atoi(f[1])
			if err != nil || v < minSchedstatVersion || v > maxSchedstatVersion {
				return nil, fmt.Errorf("/proc/schedstat: version %q: rig reads versions %d to %d", f[1], minSchedstatVersion, maxSchedstatVersion)
			}
			version = v
		case version >= 0 && strings.HasPrefix(f[0], "cpu") && len(f) >= 10:
			cpu, err := strconv.ParseUint(f[0][3:], 10, 20)
			rq := RunQueue{CPU: int(cpu)}
			for i, dst := range []*uint64{&rq.RunNS, &rq.WaitNS, &rq.Slices} {
				if err == nil {
					*dst, err = strconv.ParseUint(f[7+i], 10, 64)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("/proc/schedstat:%d: %q: %v", n, clip(line), err)
			}
			out = append(out, rq)
		default:
			return nil, fmt.Errorf("/proc/schedstat:%d: %q: want \"version N\" first, then \"cpuN\" lines of at least nine numbers", n, clip(line))
		}
	}
	if version < 0 {
		return nil, errors.New("/proc/schedstat: no version line")
	}
	return out, nil
}

// ReadSchedstat reads /proc/schedstat; without CONFIG_SCHEDSTATS the error
// wraps os.ErrNotExist.
func ReadSchedstat(fs hostfs.FS) ([]RunQueue, error) {
	b, err := fs.ReadFile("/proc/schedstat")
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (a kernel built without CONFIG_SCHEDSTATS)", err)
	}
	if err != nil {
		return nil, err
	}
	return ParseSchedstat(b)
}
