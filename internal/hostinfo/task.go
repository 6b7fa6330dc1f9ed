package hostinfo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// TaskStat is what rig reads of a /proc/PID/stat or
// /proc/PID/task/TID/stat line.
type TaskStat struct {
	PID   int    // the TID for a task file
	Comm  []byte // without its parentheses, aliasing the line
	State byte
	Flags uint64 // field 9, the kernel's PF_* flags (PFIOWorker)
	CPU   int    // field 39 "processor": the CPU the task last ran on
}

// PFIOWorker is PF_IO_WORKER (include/linux/sched.h): a thread the kernel
// made in the process for io_uring (iou-sqp-PID, iou-wrk-PID).
const PFIOWorker = 0x10

// ParseTaskStat parses a stat line without allocating. The comm may
// contain spaces and ')', so the fields after it are found from the last
// ')'.
func ParseTaskStat(b []byte) (st TaskStat, ok bool) {
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open < 1 || close < open {
		return TaskStat{}, false
	}
	p, n, ok1 := parseUintPrefix(bytes.TrimSpace(b[:open]))
	if !ok1 || n != len(bytes.TrimSpace(b[:open])) || p > 1<<31 {
		return TaskStat{}, false
	}
	st.PID, st.Comm = int(p), b[open+1:close]
	rest := b[close+1:]
	// Field 3 (state) is the first after ')'; processor is field 39.
	for field := 3; ; field++ {
		rest = trimLeftSpace(rest)
		if len(rest) == 0 {
			return TaskStat{}, false
		}
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		switch field {
		case 3:
			if len(tok) != 1 {
				return TaskStat{}, false
			}
			st.State = tok[0]
		case 9:
			v, m, ok := parseUintPrefix(tok)
			if !ok || m != len(tok) {
				return TaskStat{}, false
			}
			st.Flags = v
		case 39:
			v, m, ok := parseUintPrefix(tok)
			if !ok || m != len(tok) || v > 1<<20 {
				return TaskStat{}, false
			}
			st.CPU = int(v)
			return st, true
		}
		rest = rest[end:]
	}
}

// ParseCtxSwitches extracts voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches from a /proc/.../status file without
// allocating.
func ParseCtxSwitches(b []byte) (vol, invol uint64, ok bool) {
	var haveV, haveI bool
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		k, v, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "voluntary_ctxt_switches":
			dst, haveV = &vol, true
		case "nonvoluntary_ctxt_switches":
			dst, haveI = &invol, true
		default:
			continue
		}
		x, good := ParseUint(v)
		if !good {
			return 0, 0, false
		}
		*dst = x
	}
	return vol, invol, haveV && haveI
}

// StatusField returns the value of "Key:" in a /proc/.../status file.
func StatusField(b []byte, key string) (string, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// HostPIDs reports whether fs's /proc shows the host's PID namespace, the
// initial one, where ptp4l and chronyd run: kthreadd, which the kernel
// starts as PID 2 of that namespace and of no other, is there. A process
// in a container without the host's PID namespace (Kubernetes without
// hostPID, docker without --pid=host, unshare -p --mount-proc) sees its
// own processes in /proc and no kernel thread. why says what was seen.
// (NSpid in /proc/self/status cannot tell: it lists the PID in the
// namespaces from the one that mounted that /proc down, so a container
// with its own /proc shows one field; and PID 1 is no sign either: a
// host's may be systemd, init or a VM's agent.)
func HostPIDs(fs hostfs.FS) (host bool, why string, err error) {
	comm, err := fs.ReadString("/proc/2/comm")
	switch {
	case err == nil && comm == "kthreadd":
		return true, "kthreadd is PID 2", nil
	case err == nil:
		return false, "PID 2 is " + comm + ", not kthreadd", nil
	case !errors.Is(err, os.ErrNotExist):
		return false, "", fmt.Errorf("reading /proc/2/comm: %w", err)
	}
	if init, err := fs.ReadString("/proc/1/comm"); err == nil {
		return false, "no PID 2 (kthreadd) in /proc; PID 1 is " + init, nil
	}
	return false, "no PID 2 (kthreadd) in /proc", nil
}

// ThreadNamesNote is what a list of threads named from /proc must say
// beside it: "" when /proc shows the whole node, else that threads outside
// this PID namespace are not named and how to name them.
func ThreadNamesNote(fs hostfs.FS) string {
	const how = "run rig in the host's PID namespace (pod spec hostPID: true, or kubectl exec into the rig-host-agent pod) to name them"
	node, _, err := HostPIDs(fs)
	switch {
	case err != nil:
		return "cannot tell whether /proc shows every thread of the node (" + err.Error() + "): threads outside this PID namespace may not be named; " + how
	case !node:
		return "/proc shows only this PID namespace (a container's): threads outside it (host daemons, kernel threads, other pods) are not named, though their run time is counted; " + how
	}
	return ""
}

// CPUsAllowed reads Cpus_allowed_list of a task ("self", "PID" or
// "PID/task/TID").
func CPUsAllowed(fs hostfs.FS, task string) ([]int, error) {
	p := "/proc/" + task + "/status"
	b, err := fs.ReadFile(p)
	if err != nil {
		return nil, err
	}
	v, ok := StatusField(b, "Cpus_allowed_list")
	if !ok {
		return nil, fmt.Errorf("%s: no Cpus_allowed_list line", p)
	}
	l, err := cpulist.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

// TaskCPUs is a thread's Cpus_allowed_list.
type TaskCPUs struct {
	TID  string // "" for the process's own line (no task directory)
	CPUs []int
}

// ThreadCPUsAllowed reads the Cpus_allowed_list of each thread of a
// process (pid "self" or a number), skipping threads that exit meanwhile
// and the kernel's io_uring threads (PFIOWorker): an SQPOLL thread is
// placed on every online CPU whatever the process's cpuset (seen on 6.18
// in a cgroup v1 cpuset), and lingers after its ring is closed — rig's own
// io_uring probe (internal/facts) made a pod's rig see the node's CPUs.
// Without a task directory (a fake tree) it is the process's own list.
func ThreadCPUsAllowed(fs hostfs.FS, pid string) ([]TaskCPUs, error) {
	tasks, _ := fs.ReadDir("/proc/" + pid + "/task")
	var all []TaskCPUs
	for _, t := range tasks {
		task := pid + "/task/" + t.Name()
		if b, err := fs.ReadFile("/proc/" + task + "/stat"); err == nil {
			if st, ok := ParseTaskStat(b); ok && st.Flags&PFIOWorker != 0 {
				continue
			}
		}
		if l, err := CPUsAllowed(fs, task); err == nil {
			all = append(all, TaskCPUs{t.Name(), l})
		}
	}
	if len(all) == 0 {
		l, err := CPUsAllowed(fs, pid)
		return []TaskCPUs{{CPUs: l}}, err
	}
	return all, nil
}

// ProcessCPUsAllowed is what a process may run on: the union of its
// threads' Cpus_allowed_list (ThreadCPUsAllowed). A thread that pinned
// itself narrows only its own list, and a Go process's main thread can stay
// pinned after the goroutine that pinned it ended; the process's cpuset
// (taskset, a container's cgroup) bounds them all.
func ProcessCPUsAllowed(fs hostfs.FS, pid string) ([]int, error) {
	ts, err := ThreadCPUsAllowed(fs, pid)
	if err != nil {
		return nil, err
	}
	var all []int
	for _, t := range ts {
		all = append(all, t.CPUs...)
	}
	sort.Ints(all)
	return slices.Compact(all), nil
}

// FindProcesses returns the processes whose comm is one of names, ordered
// by PID. Processes that exit during the scan are skipped.
func FindProcesses(fs hostfs.FS, names ...string) ([]rundir.Process, error) {
	ents, err := fs.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []rundir.Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := fs.ReadString("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		for _, n := range names {
			if comm == n {
				p := rundir.Process{PID: pid, Comm: comm}
				if cl, err := fs.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
					for _, a := range bytes.Split(bytes.TrimRight(cl, "\x00"), []byte{0}) {
						p.Cmdline = append(p.Cmdline, string(a))
					}
				}
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// IRQAffinity is the configured and effective affinity of one IRQ.
type IRQAffinity struct {
	IRQ      int   `json:"irq"`
	Affinity []int `json:"affinity"`
	// Effective is where the IRQ actually fires (x86 picks one CPU of the
	// mask); nil with EffectiveKnown false on kernels without the file.
	Effective      []int `json:"effective,omitempty"`
	EffectiveKnown bool  `json:"effective_known"`
}

// Targets returns Effective when known, else Affinity.
func (a IRQAffinity) Targets() []int {
	if a.EffectiveKnown {
		return a.Effective
	}
	return a.Affinity
}

// ReadIRQAffinity reads /proc/irq/N/{smp,effective}_affinity_list.
func ReadIRQAffinity(fs hostfs.FS, irq int) (IRQAffinity, error) {
	a := IRQAffinity{IRQ: irq}
	d := fmt.Sprintf("/proc/irq/%d", irq)
	var err error
	if a.Affinity, err = readList(fs, d+"/smp_affinity_list"); err != nil {
		return a, err
	}
	a.Effective, err = readList(fs, d+"/effective_affinity_list")
	switch {
	case err == nil:
		a.EffectiveKnown = true
	case !os.IsNotExist(err):
		return a, err
	}
	return a, nil
}

// ListIRQs returns the numbered IRQs under /proc/irq, ascending.
func ListIRQs(fs hostfs.FS) ([]int, error) {
	ents, err := fs.ReadDir("/proc/irq")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// CPUTimes are the time counters of one /proc/stat cpuN line, in seconds.
type CPUTimes struct {
	CPU                              int
	User, Nice, System, Idle, Iowait float64
	IRQ, SoftIRQ, Steal              float64
}

// Busy is everything except idle and iowait.
func (t CPUTimes) Busy() float64 { return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal }

// Total is all the counters.
func (t CPUTimes) Total() float64 { return t.Busy() + t.Idle + t.Iowait }

// ReadCPUTimes reads the per-CPU lines of /proc/stat with prometheus/procfs
// (which covers this file well), ordered by CPU.
func ReadCPUTimes(fs hostfs.FS) ([]CPUTimes, error) {
	pfs, err := procfs.NewFS(fs.Path("/proc"))
	if err != nil {
		return nil, err
	}
	st, err := pfs.Stat()
	if err != nil {
		return nil, err
	}
	out := make([]CPUTimes, 0, len(st.CPU))
	for cpu, c := range st.CPU {
		out = append(out, CPUTimes{int(cpu), c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	return out, nil
}
