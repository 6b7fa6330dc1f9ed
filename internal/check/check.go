// Package check runs the preflight checks behind `rig check`: is the
// responder CPU really quiet and isolated, and can the NIC give the stamps
// the run wants? Each check reports ok, warn or FAIL with the observed value
// and the exact fix (boot parameter, sysfs write, kubelet setting); checks
// that do not apply (no --iface, not in Kubernetes, no cpufreq) are "skip".
//
// Severity policy: FAIL means the run would measure something broken
// (CPU offline or outside the cpuset, CFS quota throttling, no such
// interface); warn means a known source of tail latency is present. A
// check that cannot read what it needs says "cannot tell" (a warning
// naming what it could not read and how to give access), never ok.
package check

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// Severity orders results; the worst decides the exit code.
type Severity int

const (
	Skip Severity = iota // not applicable here
	OK
	Warn
	Fail
)

func (s Severity) String() string {
	return [...]string{"skip", "ok", "warn", "FAIL"}[s]
}

// MarshalJSON writes the severity as its name.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a name MarshalJSON wrote (a report that crossed the
// agent protocol or was saved by rig check --json).
func (s *Severity) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for v := Skip; v <= Fail; v++ {
		if v.String() == name {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", name)
}

// Exit codes of `rig check`, by worst severity.
const (
	ExitOK   = 0 // every check ok or skipped
	ExitWarn = 3 // worst is warn
	ExitFail = 4 // at least one FAIL
)

// Result is one check.
type Result struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Observed string   `json:"observed"`
	Fix      string   `json:"fix,omitempty"`
	// Untold marks a "cannot tell" warning: the check could not read
	// what it needs, and Untold is the worst it could have said (Fail: a
	// FAIL may hide behind it). Skip, the zero value: the check told.
	Untold Severity `json:"untold,omitempty"`
}

// Report is the outcome of Run.
type Report struct {
	CPU       int    `json:"cpu"`
	CPUChoice string `json:"cpu_choice,omitempty"`
	Siblings  []int  `json:"smt_siblings,omitempty"`
	Iface     string `json:"iface,omitempty"`
	// Ranking is the measurement that chose CPU (Options.Rank).
	Ranking *rundir.Ranking `json:"ranking,omitempty"`
	Results []Result        `json:"results"`
	Worst   Severity        `json:"worst"`
}

// ExitCode maps the worst severity to 0, 3 or 4.
func (r *Report) ExitCode() int {
	switch r.Worst {
	case Fail:
		return ExitFail
	case Warn:
		return ExitWarn
	}
	return ExitOK
}

// Passed says whether a run may rely on the checks (require-check):
// nothing FAILed, and no check that can FAIL was left unable to tell.
func (r *Report) Passed() bool {
	return r.Worst < Fail && !slices.ContainsFunc(r.Results, func(x Result) bool { return x.Untold == Fail })
}

// Get returns the result with the given ID, or nil.
func (r *Report) Get(id string) *Result {
	for i := range r.Results {
		if r.Results[i].ID == id {
			return &r.Results[i]
		}
	}
	return nil
}

// WriteText prints one line per check and the fix under each non-ok one.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Ranking != nil {
		if err := r.Ranking.WriteText(&b); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "rig check: responder CPU %d", r.CPU)
	if r.CPUChoice != "" {
		fmt.Fprintf(&b, " (%s)", r.CPUChoice)
	}
	if len(r.Siblings) > 0 {
		fmt.Fprintf(&b, ", SMT sibling %s", cpulist.Format(r.Siblings))
	}
	if r.Iface != "" {
		fmt.Fprintf(&b, ", interface %s", r.Iface)
	}
	b.WriteString("\n")
	for _, x := range r.Results {
		fmt.Fprintf(&b, "%-4s  %-20s %s\n", x.Severity, x.ID, x.Observed)
		if x.Fix != "" && x.Severity >= Warn {
			fmt.Fprintf(&b, "      %-20s fix: %s\n", "", x.Fix)
		}
	}
	fmt.Fprintf(&b, "worst: %s (exit %d)", r.Worst, r.ExitCode())
	if r.Worst < Fail && !r.Passed() {
		b.WriteString("; a check that can FAIL could not tell: require-check stops here")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Options configure Run.
type Options struct {
	// CPU is the responder CPU; negative picks the first isolated CPU, else
	// the last online one (or the quietest, with Rank).
	CPU int
	// Rank, when set and CPU is negative, measures the candidate CPUs
	// first and checks the quietest (cpurank.Rank).
	Rank *cpurank.Options
	// Iface enables the NIC checks.
	Iface string
	// Multicast says the requests are multicast on Iface (the IGMP check).
	Multicast bool
	// NIC reads the NIC's timestamping (its TS device) and driver facts
	// (ENA); nil means the host's, through FS.
	NIC *facts.NIC
	// Getenv reads the environment (Kubernetes detection); nil: os.Getenv.
	Getenv func(string) string
	// BusyWindow is how long CPU use is measured; 0 means 250 ms.
	BusyWindow time.Duration
	// Sleep waits BusyWindow; nil means time.Sleep. Tests use it to move
	// the counters of a fake tree.
	Sleep func(time.Duration)
	// MaxExitLatencyUS is the deepest enabled idle-state exit latency that
	// is still ok; 0 means 2 µs (C1 on Intel and AMD; deeper is a warn).
	MaxExitLatencyUS uint64
	// BusyPct is the CPU use above which a CPU counts as busy; 0 means 10.
	BusyPct float64
}

type runner struct {
	ctx      context.Context
	fs       hostfs.FS
	o        Options
	r        *Report
	online   []int
	isolated []int
	isolErr  error
	nohz     []int
	nohzErr  error
	cmd      *rundir.Cmdline
	cmdErr   error
	topoErr  error // the responder CPU's topology: its SMT siblings
	cg       *rundir.Cgroup
	cgErr    error
	inK8s    bool
}

// Run runs every check. It returns an error only when nothing can be
// checked (the online CPU list is unreadable); every other problem is a
// result.
func Run(ctx context.Context, fs hostfs.FS, o Options) (*Report, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.BusyWindow == 0 {
		o.BusyWindow = 250 * time.Millisecond
	}
	if o.Sleep == nil {
		o.Sleep = time.Sleep
	}
	if o.MaxExitLatencyUS == 0 {
		o.MaxExitLatencyUS = 2
	}
	if o.BusyPct == 0 {
		o.BusyPct = 10
	}
	if o.NIC == nil {
		o.NIC = &facts.NIC{FS: fs}
		defer o.NIC.Close()
	}
	x := &runner{ctx: ctx, fs: fs, o: o, r: &Report{CPU: o.CPU, Iface: o.Iface}}
	var err error
	if x.online, err = hostinfo.OnlineCPUs(fs); err != nil {
		return nil, err
	}
	x.isolated, x.isolErr = hostinfo.IsolatedCPUs(fs)
	x.nohz, x.nohzErr = hostinfo.NohzFullCPUs(fs)
	if x.cmd, x.cmdErr = hostinfo.ReadCmdline(fs); x.cmdErr != nil {
		x.cmd = hostinfo.ParseCmdline("")
	}
	x.cg, x.cgErr = hostinfo.ReadCgroup(fs, "self")
	x.inK8s = o.Getenv("KUBERNETES_SERVICE_HOST") != ""
	if o.CPU < 0 && o.Rank != nil {
		rk, err := cpurank.Rank(ctx, fs, *o.Rank)
		if err != nil {
			return nil, err
		}
		x.r.Ranking, x.r.CPU, x.r.CPUChoice = rk, rk.Chosen, "the quietest of "+cpulist.Format(rk.Candidates)+", ranked above"
	} else if o.CPU < 0 {
		x.r.CPU, x.r.CPUChoice = x.defaultCPU()
	}
	cpu := x.r.CPU
	if t, err := hostinfo.ReadTopology(fs, cpu); err == nil {
		x.r.Siblings = t.Siblings()
	} else {
		x.topoErr = err
	}
	x.cpuOnline()
	x.cpuAllowed()
	x.isolcpus()
	x.nohzFull()
	x.rcuNocbs()
	x.irqsOnCPU()
	x.irqbalance()
	x.busy(cpu, x.r.Siblings)
	x.governor()
	x.turbo()
	x.cstates()
	x.clocksource()
	x.thp()
	x.schedRT()
	x.nic()
	x.igmp()
	x.cgroup()
	for _, res := range x.r.Results {
		x.r.Worst = max(x.r.Worst, res.Severity)
	}
	return x.r, nil
}

// defaultCPU is the CPU checked when none is named: the first isolated
// CPU, else the last online one, among the CPUs rig may run on (a pod's
// cpuset, a taskset), since a responder left unpinned runs there. When
// what rig may run on cannot be read (cpu.allowed warns), among the
// online CPUs, and the choice says so.
func (x *runner) defaultCPU() (int, string) {
	cands, where := x.online, ""
	allowed, err := hostinfo.ProcessCPUsAllowed(x.fs, "self")
	switch {
	case err != nil:
		where = " (the CPUs rig may use are unknown)"
	default:
		var in []int
		for _, c := range x.online {
			if slices.Contains(allowed, c) {
				in = append(in, c)
			}
		}
		if len(in) > 0 && len(in) < len(x.online) {
			cands, where = in, " rig may use ("+list(in)+")"
		}
	}
	for _, c := range x.isolated {
		if slices.Contains(cands, c) {
			return c, "first isolated CPU" + where + "; choose with --cpu"
		}
	}
	if where == "" || err != nil {
		return cands[len(cands)-1], "last online CPU" + where + "; choose with --cpu"
	}
	return cands[len(cands)-1], "last CPU" + where + "; choose with --cpu"
}

func (x *runner) add(id string, s Severity, fix, format string, a ...any) {
	x.r.Results = append(x.r.Results, Result{ID: id, Severity: s, Observed: fmt.Sprintf(format, a...), Fix: fix})
}

// cannot adds a "cannot tell" warning: what could not be read (the text
// says "cannot read" or "cannot tell"), and in fix how to let rig read it;
// could is the worst the check could have said.
func (x *runner) cannot(id string, could Severity, fix, format string, a ...any) {
	if fix == "" {
		fix = access
	}
	x.r.Results = append(x.r.Results, Result{ID: id, Severity: Warn, Observed: fmt.Sprintf(format, a...), Fix: fix, Untold: could})
}

// access is how to let rig read what a check needs, when nothing more
// specific is known.
const access = "run rig check where it reads the host's /proc and /sys as root (not through a masked or partial --host-root); in Kubernetes, from the host agent: kubectl exec -n rig <rig-host-agent pod> -- rig check --cpu N"

// measured is the responder CPU with its siblings: what isolation covers.
func (x *runner) measured() []int {
	return cpulist.Union([]int{x.r.CPU}, x.r.Siblings)
}

// housekeeping is where everything else should go.
func (x *runner) housekeeping() []int {
	var hk []int
	for _, c := range x.online {
		if !slices.Contains(x.measured(), c) && !slices.Contains(x.isolated, c) && !slices.Contains(x.nohz, c) {
			hk = append(hk, c)
		}
	}
	if len(hk) == 0 {
		hk = []int{0}
	}
	// The admin already chose housekeeping CPUs for IRQs: follow that.
	if ia := x.cmd.IRQAffinity; ia.Set && len(ia.CPUs) > 0 && !slices.Contains(ia.CPUs, x.r.CPU) {
		return ia.CPUs
	}
	return hk
}

func list(l []int) string {
	if len(l) == 0 {
		return "none"
	}
	return cpulist.Format(l)
}

func (x *runner) bootFix() string {
	m, hk := list(x.measured()), list(x.housekeeping())
	return fmt.Sprintf("kernel command line: isolcpus=domain,managed_irq,%s nohz_full=%s rcu_nocbs=%s irqaffinity=%s, then reboot (GRUB: /etc/default/grub.d/90-rig-isolation.cfg + update-grub)", m, m, m, hk)
}

func (x *runner) cpuOnline() {
	if slices.Contains(x.online, x.r.CPU) {
		x.add("cpu.online", OK, "", "CPU %d is online (online: %s)", x.r.CPU, list(x.online))
		return
	}
	x.add("cpu.online", Fail, fmt.Sprintf("pick an online CPU with --cpu (online: %s), or echo 1 > /sys/devices/system/cpu/cpu%d/online", list(x.online), x.r.CPU),
		"CPU %d is not online (online: %s)", x.r.CPU, list(x.online))
}

func (x *runner) cpuAllowed() {
	threads, err := hostinfo.ThreadCPUsAllowed(x.fs, "self")
	if err != nil {
		x.cannot("cpu.allowed", Fail, "", "cannot read Cpus_allowed_list of rig: %v", err)
		return
	}
	allowed, _ := hostinfo.ProcessCPUsAllowed(x.fs, "self")
	if out := x.outsideCpuset(threads); out != "" && slices.Contains(allowed, x.r.CPU) {
		x.add("cpu.allowed", Warn, "restart rig inside its container (every new thread starts in its process's cgroup), and find what writes thread IDs into another cgroup's tasks file",
			"rig may run on CPU %d (allowed: %s), but %s outside its cgroup's cpuset %s: another process moved them (a cgroup v1 tasks file takes single threads), and what rig starts from them runs outside the container's CPUs", x.r.CPU, list(allowed), out, list(x.cg.CPUSet))
		return
	}
	if slices.Contains(allowed, x.r.CPU) {
		x.add("cpu.allowed", OK, "", "rig may run on CPU %d (allowed: %s)", x.r.CPU, list(allowed))
		return
	}
	x.add("cpu.allowed", Fail, fmt.Sprintf("use a CPU in %s, or run rig outside this cpuset (taskset/cgroup/pod spec)", list(allowed)),
		"CPU %d is outside the CPUs rig may use (%s): the responder cannot be pinned there", x.r.CPU, list(allowed))
}

// outsideCpuset names rig's threads that may run on a CPU outside its
// cgroup's cpuset ("" when none, or when the cpuset is not known): the
// union of Cpus_allowed_list would hide them behind the process's list.
func (x *runner) outsideCpuset(threads []hostinfo.TaskCPUs) string {
	if x.cgErr != nil || len(x.cg.CPUSet) == 0 {
		return ""
	}
	var out []string
	for _, t := range threads {
		if slices.ContainsFunc(t.CPUs, func(c int) bool { return !slices.Contains(x.cg.CPUSet, c) }) {
			out = append(out, fmt.Sprintf("thread %s (allowed: %s)", cmp.Or(t.TID, "self"), list(t.CPUs)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, ", ") + " may run"
}

func (x *runner) isolcpus() {
	cpu := x.r.CPU
	if x.isolErr != nil {
		x.cannot("isolcpus", Warn, "", "cannot read the isolated CPUs: %v", x.isolErr)
		return
	}
	if slices.Contains(x.isolated, cpu) {
		obs := fmt.Sprintf("CPU %d is isolated (isolated: %s, flags %s)", cpu, list(x.isolated), strings.Join(x.cmd.IsolcpusFlags, ","))
		if x.cmdErr != nil {
			x.cannot("isolcpus", Warn, "", "cannot tell whether managed IRQs are kept off it: %s, and the kernel command line cannot be read: %v", obs, x.cmdErr)
			return
		}
		if !slices.Contains(x.cmd.IsolcpusFlags, "managed_irq") && x.cmd.Isolcpus.Set {
			x.add("isolcpus", Warn, x.bootFix(), "%s; without managed_irq, managed IRQs (NVMe) may still land on it", obs)
			return
		}
		x.add("isolcpus", OK, "", "%s", obs)
		return
	}
	x.add("isolcpus", Warn, x.bootFix(), "CPU %d is not isolated (isolated: %s): the scheduler balances other tasks onto it", cpu, list(x.isolated))
}

func (x *runner) nohzFull() {
	cpu := x.r.CPU
	switch {
	case errors.Is(x.nohzErr, os.ErrNotExist):
		x.add("nohz_full", Warn, "use a kernel built with CONFIG_NO_HZ_FULL=y, then "+x.bootFix(), "kernel has no nohz_full support: CPU %d gets the periodic tick", cpu)
	case x.nohzErr != nil:
		x.cannot("nohz_full", Warn, "", "cannot read nohz_full: %v", x.nohzErr)
	case slices.Contains(x.nohz, cpu):
		x.add("nohz_full", OK, "", "CPU %d is nohz_full (%s)", cpu, list(x.nohz))
	default:
		x.add("nohz_full", Warn, x.bootFix(), "CPU %d is not nohz_full (nohz_full: %s): the scheduler tick interrupts it", cpu, list(x.nohz))
	}
}

func (x *runner) rcuNocbs() {
	cpu := x.r.CPU
	switch {
	case x.cmd.RcuNocbs.Contains(cpu):
		x.add("rcu_nocbs", OK, "", "CPU %d offloads RCU callbacks (rcu_nocbs=%s)", cpu, x.cmd.RcuNocbs.Raw)
	case slices.Contains(x.nohz, cpu):
		x.add("rcu_nocbs", OK, "", "CPU %d offloads RCU callbacks (implied by nohz_full)", cpu)
	case x.cmdErr != nil:
		x.cannot("rcu_nocbs", Warn, "", "cannot tell: rcu_nocbs= is only on the kernel command line, which cannot be read: %v", x.cmdErr)
	default:
		x.add("rcu_nocbs", Warn, x.bootFix(), "CPU %d runs its own RCU callbacks (no rcu_nocbs= for it on the command line)", cpu)
	}
}

func (x *runner) irqsOnCPU() {
	cpu := x.r.CPU
	irqs, err := hostinfo.ListIRQs(x.fs)
	if err != nil {
		x.cannot("irqs.on_cpu", Warn, "", "cannot list /proc/irq: %v", err)
		return
	}
	tab, err := hostinfo.ReadInterrupts(x.fs)
	if err != nil {
		x.cannot("irqs.on_cpu", Warn, "", "cannot read /proc/interrupts (which IRQs have a handler): %v", err)
		return
	}
	names := map[string]string{}
	counts := map[string]uint64{}
	for _, r := range tab.Rows {
		names[r.ID] = r.Name
		counts[r.ID], _ = tab.Count(r.ID, cpu)
	}
	var hits, nums, unread []string
	for _, n := range irqs {
		name := names[strconv.Itoa(n)]
		if name == "" {
			continue // no handler: never fires
		}
		a, err := hostinfo.ReadIRQAffinity(x.fs, n)
		if err != nil {
			unread = append(unread, strconv.Itoa(n))
			continue
		}
		if !slices.Contains(a.Targets(), cpu) {
			continue
		}
		hits = append(hits, fmt.Sprintf("%d %s (%d so far)", n, name, counts[strconv.Itoa(n)]))
		nums = append(nums, strconv.Itoa(n))
	}
	if len(hits) == 0 && len(unread) > 0 {
		x.cannot("irqs.on_cpu", Warn, "", "cannot read the affinity of IRQ %s (/proc/irq/N/smp_affinity_list)", strings.Join(unread, ", "))
		return
	}
	if len(hits) == 0 {
		x.add("irqs.on_cpu", OK, "", "no device IRQ targets CPU %d", cpu)
		return
	}
	hk := list(x.housekeeping())
	fix := fmt.Sprintf("for i in %s; do echo %s > /proc/irq/$i/smp_affinity_list; done (managed IRQs refuse: boot with isolcpus=managed_irq,...; keep the probe queue's IRQ here only for an irq-local arm)",
		strings.Join(nums, " "), hk)
	x.add("irqs.on_cpu", Warn, fix, "%d device IRQ(s) fire on CPU %d: %s", len(hits), cpu, strings.Join(hits, ", "))
}

func (x *runner) irqbalance() {
	host, why, err := hostinfo.HostPIDs(x.fs)
	if err != nil {
		x.cannot("irqbalance", Warn, "", "cannot tell whether rig sees the node's processes: %v", err)
		return
	}
	if !host {
		x.cannot("irqbalance", Warn, "run rig check on the node: from the host agent (kubectl exec -n rig <rig-host-agent pod> -- rig check --cpu N), or give this pod hostPID: true",
			"cannot tell whether irqbalance runs: rig is in a PID namespace of its own (%s; a pod without hostPID), and irqbalance runs on the node, among processes it cannot see", why)
		return
	}
	st, err := facts.ReadIRQBalance(x.fs)
	if err != nil {
		x.cannot("irqbalance", Warn, "", "cannot scan /proc: %v", err)
		return
	}
	if !st.Running {
		x.add("irqbalance", OK, "", "irqbalance is not running")
		return
	}
	cpu := x.r.CPU
	banned, from := st.Banned(x.isolated, x.nohz)
	if slices.Contains(banned, cpu) {
		x.add("irqbalance", OK, "", "irqbalance (pid %d) runs but leaves CPU %d alone (banned %s by %s)", st.PID, cpu, list(banned), from)
		return
	}
	m := list(x.measured())
	x.add("irqbalance", Warn,
		fmt.Sprintf("set IRQBALANCE_BANNED_CPULIST=%s in /etc/default/irqbalance (Debian) or /etc/sysconfig/irqbalance (RHEL) and systemctl restart irqbalance; or systemctl stop irqbalance for the run", m),
		"irqbalance (pid %d) may move IRQs onto CPU %d (banned: %s, from %s)", st.PID, cpu, list(banned), from)
}

// busy measures the CPU and its siblings over BusyWindow — every task of
// the node and steal time, hostinfo.Busy's rule — and names the threads
// running there.
func (x *runner) busy(cpu int, sibs []int) {
	a, err := hostinfo.ReadCPUUse(x.fs)
	if err != nil {
		x.cannot("cpu.busy", Warn, "", "cannot read /proc/stat: %v", err)
		x.cannot("smt.sibling", Warn, "", "cannot read /proc/stat: %v", err)
		return
	}
	start := time.Now()
	x.o.Sleep(x.o.BusyWindow)
	el := max(x.o.BusyWindow, time.Since(start)) // a test's Sleep returns at once
	b, err := hostinfo.ReadCPUUse(x.fs)
	if err != nil {
		x.cannot("cpu.busy", Warn, "", "cannot read /proc/stat: %v", err)
		x.cannot("smt.sibling", Warn, "", "cannot read /proc/stat: %v", err)
		return
	}
	pct := func(c int) (float64, string, bool) {
		u, ok := hostinfo.Busy(a, b, c, el)
		return 100 * min(1, u.Share+u.Steal), u.Source, ok // rq_cpu_time may hold steal too
	}
	win := x.o.BusyWindow
	if v, src, ok := pct(cpu); !ok {
		x.cannot("cpu.busy", Warn, "", "cannot tell: CPU %d has no line in /proc/stat", cpu)
	} else if v > x.o.BusyPct {
		x.add("cpu.busy", Warn, "stop or move what runs there (taskset -cp "+list(x.housekeeping())+" PID), or pick another --cpu",
			"CPU %d was %.0f%% busy over %v before the run (%s); running there: %s", cpu, v, win, src, x.running(cpu))
	} else {
		x.add("cpu.busy", OK, "", "CPU %d was %.0f%% busy over %v (%s)", cpu, v, win, src)
	}
	if x.topoErr != nil {
		x.cannot("smt.sibling", Warn, "", "cannot read the topology of CPU %d (its SMT siblings): %v", cpu, x.topoErr)
		return
	}
	if len(sibs) == 0 {
		x.add("smt.sibling", OK, "", "CPU %d has no SMT sibling", cpu)
		return
	}
	for _, s := range sibs {
		if !slices.Contains(x.online, s) {
			x.add("smt.sibling", OK, "", "SMT sibling %d is offline", s)
			continue
		}
		v, _, ok := pct(s)
		if !ok {
			x.cannot("smt.sibling", Warn, "", "cannot tell: SMT sibling %d has no line in /proc/stat", s)
		} else if v > x.o.BusyPct {
			x.add("smt.sibling", Warn,
				fmt.Sprintf("keep CPU %d idle: isolate it with the responder (isolcpus=...,%d), move its tasks away, or echo off > /sys/devices/system/cpu/smt/control", s, s),
				"SMT sibling %d of CPU %d was %.0f%% busy over %v (it shares the core's pipeline and caches); running there: %s", s, cpu, v, win, x.running(s))
		} else {
			x.add("smt.sibling", OK, "", "SMT sibling %d was %.0f%% busy over %v", s, v, win)
		}
	}
}

// running names the runnable threads whose last CPU is cpu, rig's own
// (which reads /proc as it runs) left out.
func (x *runner) running(cpu int) string {
	var out []string
	procs, _ := x.fs.ReadDir("/proc")
	for _, p := range procs {
		if pid, err := strconv.Atoi(p.Name()); err != nil || pid == os.Getpid() {
			continue
		}
		tasks, _ := x.fs.ReadDir("/proc/" + p.Name() + "/task")
		for _, t := range tasks {
			b, err := x.fs.ReadFile("/proc/" + p.Name() + "/task/" + t.Name() + "/stat")
			if err != nil {
				continue
			}
			if st, ok := hostinfo.ParseTaskStat(b); ok && st.CPU == cpu && st.State == 'R' && len(out) < 8 {
				out = append(out, fmt.Sprintf("%s[%d]", st.Comm, st.PID))
			}
		}
	}
	s := strings.Join(out, " ")
	if len(out) == 0 {
		s = "no runnable thread at the moment"
	}
	if n := hostinfo.ThreadNamesNote(x.fs); n != "" {
		s += " (" + n + ")"
	}
	return s
}

func (x *runner) governor() {
	cpu := x.r.CPU
	f, err := hostinfo.ReadFreq(x.fs, cpu)
	if errors.Is(err, os.ErrNotExist) {
		x.add("governor", Skip, "", "no cpufreq on CPU %d: frequency is not OS-controlled (VM, cloud or firmware)", cpu)
		return
	}
	if err != nil {
		x.cannot("governor", Warn, "", "cannot read cpufreq: %v", err)
		return
	}
	if f.Governor == "performance" {
		x.add("governor", OK, "", "CPU %d governor performance (%s)", cpu, f.Driver)
		return
	}
	x.add("governor", Warn, fmt.Sprintf("echo performance > /sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor (or tuned-adm profile network-latency); for one arm of a scenario: power: {governor: performance} (or tuned: network-latency)", cpu),
		"CPU %d governor %s (%s): the clock ramps up after idle", cpu, f.Governor, f.Driver)
}

func (x *runner) turbo() {
	t, err := hostinfo.ReadTurbo(x.fs)
	if errors.Is(err, os.ErrNotExist) {
		x.add("turbo", Skip, "", "no turbo control (intel_pstate/no_turbo or cpufreq/boost absent)")
		return
	}
	if err != nil {
		x.cannot("turbo", Warn, "", "cannot read turbo state: %v", err)
		return
	}
	if !t.Enabled {
		x.add("turbo", OK, "", "turbo off (%s)", t.Source)
		return
	}
	fix := "echo 0 > " + t.Source
	if t.IntelPstate() {
		fix = "echo 1 > " + t.Source
	}
	fix += "; for one arm of a scenario: power: {turbo: off}"
	x.add("turbo", Warn, fix, "turbo on (%s): the clock follows load and temperature of the other cores", t.Source)
}

// cstateBootFix is the boot parameter that keeps every CPU shallow, for
// the host's architecture and cpuidle driver.
func cstateBootFix(arch, driver string) string {
	switch {
	case arch == "aarch64":
		return "or boot with cpuidle.off=1: the CPUs then idle in WFI only (arm64 has no POLL state; the deeper states are the firmware's PSCI/ACPI LPI states)"
	case driver == "intel_idle":
		return "or boot with intel_idle.max_cstate=1: C1 the deepest"
	case driver == "acpi_idle":
		return "or boot with processor.max_cstate=1"
	}
	return "or boot with idle=poll: the CPUs poll instead of idling"
}

func (x *runner) cstates() {
	cpu := x.r.CPU
	arch, _ := hostinfo.Arch(x.fs)
	driver, _, derr := hostinfo.IdleDriver(x.fs)
	st, err := hostinfo.ReadIdleStates(x.fs, cpu)
	// No states are believed only when the driver agrees: none, or no
	// cpuidle in the kernel at all.
	if errors.Is(err, os.ErrNotExist) && derr != nil && !errors.Is(derr, os.ErrNotExist) {
		x.cannot("cstates", Warn, "", "cannot tell the idle states of CPU %d: it has none, and the cpuidle driver cannot be read: %v", cpu, derr)
		return
	}
	if errors.Is(err, os.ErrNotExist) && driver != "" && driver != "none" {
		x.cannot("cstates", Warn, "", "cannot read the idle states of CPU %d, whose cpuidle driver is %s: %v", cpu, driver, err)
		return
	}
	if errors.Is(err, os.ErrNotExist) {
		how := "the kernel's default idle (HLT), or idle=poll"
		if arch == "aarch64" {
			how = "it idles in WFI; the hypervisor or firmware owns anything deeper (AWS Graviton: not OS-controlled)"
		}
		x.add("cstates", OK, "", "CPU %d has no cpuidle states (cpuidle driver %s): %s", cpu, orNone(driver), how)
		return
	}
	if err != nil {
		x.cannot("cstates", Warn, "", "cannot read cpuidle: %v", err)
		return
	}
	var deep, fixes []string
	for _, s := range st {
		if !s.Disabled && s.LatencyUS > x.o.MaxExitLatencyUS {
			deep = append(deep, fmt.Sprintf("%s (exit %d µs, entered %d times)", s.Name, s.LatencyUS, s.Usage))
			fixes = append(fixes, fmt.Sprintf("echo 1 > %s/disable", hostinfo.IdleStatePath(cpu, s.Index)))
		}
	}
	var all []string
	for _, s := range st {
		d := ""
		if s.Disabled {
			d = " disabled"
		}
		all = append(all, fmt.Sprintf("%s %dµs%s", s.Name, s.LatencyUS, d))
	}
	if len(deep) == 0 {
		x.add("cstates", OK, "", "CPU %d idle states within %d µs exit latency: %s", cpu, x.o.MaxExitLatencyUS, strings.Join(all, ", "))
		return
	}
	x.add("cstates", Warn, strings.Join(fixes, "; ")+" ("+cstateBootFix(arch, driver)+")",
		"CPU %d may enter deep idle states (%s): %s", cpu, orNone(driver), strings.Join(deep, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (x *runner) clocksource() {
	cur, avail, err := hostinfo.Clocksource(x.fs)
	if err != nil {
		x.cannot("clocksource", Warn, "", "cannot read clocksource: %v", err)
		return
	}
	switch cur {
	case "tsc", "arch_sys_counter", "kvm-clock":
		x.add("clocksource", OK, "", "clocksource %s (available: %s)", cur, strings.Join(avail, " "))
		return
	}
	fix := "boot with tsc=reliable if the CPU has constant_tsc and nonstop_tsc"
	if slices.Contains(avail, "tsc") {
		fix = "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
	}
	x.add("clocksource", Warn, fix, "clocksource %s: every timestamp is a slow read (no vDSO fast path)", cur)
}

func (x *runner) thp() {
	e, _, err := hostinfo.THP(x.fs)
	if errors.Is(err, os.ErrNotExist) {
		x.add("thp", Skip, "", "no transparent hugepage support")
		return
	}
	if err != nil {
		x.cannot("thp", Warn, "", "cannot read THP: %v", err)
		return
	}
	if e == "always" {
		x.add("thp", Warn, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
			"THP enabled=always: page faults may compact memory and khugepaged scans run")
		return
	}
	x.add("thp", OK, "", "THP enabled=%s", e)
}

// schedRT: with RT bandwidth limited (the kernel's default, 950000 of every
// 1000000 µs), a SCHED_FIFO thread that never sleeps — a fifo busy-poll
// responder — is taken off its CPU for the rest of each period: before
// Linux 6.12 always, from 6.12 (the fair server) whenever another task on
// that CPU waits. Seed setups run such responders with the limit lifted.
func (x *runner) schedRT() {
	r, err := hostinfo.ReadSchedRT(x.fs)
	if err != nil {
		x.cannot("sched.rt", Warn, "", "cannot read the RT bandwidth (/proc/sys/kernel/sched_rt_runtime_us): %v", err)
		return
	}
	if r.Unlimited() {
		x.add("sched.rt", OK, "", "RT threads run without a bandwidth limit (kernel.sched_rt_runtime_us = -1)")
		return
	}
	x.add("sched.rt", Warn, "sysctl -w kernel.sched_rt_runtime_us=-1 for SCHED_FIFO busy-poll arms (only where that thread has its CPU to itself: a runaway RT thread then keeps it)",
		"RT threads may run %d of every %d µs (kernel.sched_rt_runtime_us): a SCHED_FIFO thread that never sleeps is stopped for the rest of each period (from Linux 6.12 while another task on its CPU waits)", r.RuntimeUS, r.PeriodUS)
}
