package hostinfo

import (
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// CPUUse is one read of the per-CPU time counters: /proc/stat, and
// /proc/schedstat when the kernel has it (else SchedErr says why). Both
// count every task of the node, in a container too: a PID namespace hides
// tasks from /proc/PID, not from these.
type CPUUse struct {
	Times     []CPUTimes
	RunQueues []RunQueue
	SchedErr  error
}

// ReadCPUUse reads both files; only an unreadable /proc/stat is an error.
func ReadCPUUse(fs hostfs.FS) (CPUUse, error) {
	t, err := ReadCPUTimes(fs)
	if err != nil {
		return CPUUse{}, err
	}
	u := CPUUse{Times: t}
	u.RunQueues, u.SchedErr = ReadSchedstat(fs)
	return u, nil
}

// Sources of CPUBusy.
const (
	BusyRunQueue = "/proc/schedstat rq_cpu_time"
	BusyStat     = "/proc/stat"
	// BusyStatOver: /proc/stat showed more than rq_cpu_time by more than
	// its resolution: a task ran through the window without being switched
	// out, which rq_cpu_time charges only when it is.
	BusyStatOver = "/proc/stat (above rq_cpu_time: a task not switched out in the window)"
)

// Busy is the one rule for a CPU's busy time between reads a and b over
// window: rq_cpu_time when /proc/schedstat has the CPU, unless /proc/stat's
// busy share (user, nice, system, irq, softirq: everything but idle, iowait
// and steal) exceeds it by more than a tenth of the window or two USER_HZ
// ticks; else /proc/stat's share. ok is false when /proc/stat lacks the CPU.
func Busy(a, b CPUUse, cpu int, window time.Duration) (c rundir.CPUBusy, ok bool) {
	c.CPU, c.WindowNS = cpu, int64(window)
	p, q := cpuTimes(a.Times, cpu), cpuTimes(b.Times, cpu)
	if p == nil || q == nil {
		return c, false
	}
	var stat, margin float64
	if tot := q.Total() - p.Total(); tot > 0 {
		stat = max(0, (q.Busy()-q.Steal)-(p.Busy()-p.Steal)) / tot
		c.Steal = max(0, q.Steal-p.Steal) / tot
		margin = max(0.1, 0.02/tot)
	}
	c.Share, c.Source = stat, BusyStat
	ra, rb := runQueue(a.RunQueues, cpu), runQueue(b.RunQueues, cpu)
	if ra != nil && rb != nil && rb.RunNS >= ra.RunNS && rb.Slices >= ra.Slices && window > 0 {
		c.Slices, c.HaveSlices = rb.Slices-ra.Slices, true
		c.Share, c.Source = min(1, float64(rb.RunNS-ra.RunNS)/float64(window)), BusyRunQueue
		if stat-c.Share > margin {
			c.Share, c.Source = stat, BusyStatOver
		}
	}
	c.RunNS = c.Share * float64(window)
	return c, true
}

func cpuTimes(l []CPUTimes, cpu int) *CPUTimes {
	for i := range l {
		if l[i].CPU == cpu {
			return &l[i]
		}
	}
	return nil
}

func runQueue(l []RunQueue, cpu int) *RunQueue {
	for i := range l {
		if l[i].CPU == cpu {
			return &l[i]
		}
	}
	return nil
}
