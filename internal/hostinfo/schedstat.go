package hostinfo

import "bytes"

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
