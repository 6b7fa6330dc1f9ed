package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/wire"
)

// CostRow is one tool's work per round trip on one side in one mode,
// counted over a window of a round of its own (never a latency round:
// perf's counting is on the path). Process figures cover all its threads;
// the measuring thread is the one that sent (the most sendmsg/sendto).
type CostRow struct {
	Mode, Tool, Side string
	Window           time.Duration // counted wall time
	// Skew bounds how far apart the events' windows are: perf switches
	// each event's counters on, and later off, one after another, so two
	// counts (a side's sends and its TX-stamp reads) may each miss the
	// sends of up to this long at the window's ends. It is the time perf
	// took to acknowledge the enable and the disable, summed.
	Skew time.Duration
	// RoundTrips are the side's sends in the window: the sender's requests,
	// the responder's replies (one each per round trip).
	RoundTrips uint64
	Threads    int // threads of the process counted
	// Uncounted threads started after perf attached (before the window):
	// their syscalls are missing from the counts.
	Uncounted int
	// Syscalls of the process, and the TX-stamp reads among them:
	// recvmsg(MSG_ERRQUEUE), which only a tool that takes kernel stamps does.
	Syscalls, StampReads uint64
	BySyscall            map[string]uint64 // process, per syscall counted by name
	ThreadSyscalls       uint64
	// Voluntary: times a thread blocked (each ends in a wake-up);
	// involuntary: times the CPU was taken from it. /proc/PID/task/TID/status.
	Voluntary, Involuntary             uint64
	ThreadVoluntary, ThreadInvoluntary uint64
	// CPU time on the CPU (/proc/PID/task/TID/schedstat), ns.
	CPUNS, ThreadCPUNS uint64
	// HeapAllocs are the Go process's heap allocations over the whole round
	// (its sample file's footer) and AllocRequests that round's requests;
	// nil for a tool that is not Go or a file without the count. A round
	// has a few at its start and end whatever its length (the runtime makes
	// a thread, the responder is told to stop), so ShortAllocs and
	// ShortRequests are the same from a shorter round: allocations per
	// round trip are the difference over the difference (AllocsPerRT).
	// For rig's own rows both come from rounds of their own, not under
	// perf, the long one allocLong × the short one (see allocRounds).
	HeapAllocs, ShortAllocs      *uint64
	AllocRequests, ShortRequests uint64
}

// AllocsPerRT is the heap allocations per round trip: how many more the
// longer round made, per request more (ok false without both rounds).
func (c CostRow) AllocsPerRT() (float64, bool) {
	if c.HeapAllocs == nil || c.ShortAllocs == nil || c.AllocRequests <= c.ShortRequests {
		return 0, false
	}
	return (float64(*c.HeapAllocs) - float64(*c.ShortAllocs)) / float64(c.AllocRequests-c.ShortRequests), true
}

// MaxAllocsPerRT is the allocation goal's bound: fewer than one heap
// allocation per thousand round trips (a hot path that allocated would
// make at least one per round trip; the start and end of a round vary by
// a few).
const MaxAllocsPerRT = 0.001

// allocShort and allocLong are the allocation rounds' lengths in counting
// rounds (CostTime). Their difference must hold well over 1/MaxAllocsPerRT
// requests per allocation the ends of a round vary by, whatever its
// length; closer rounds decided the goal by that noise, both ways
// (docs/bench.md#work-per-round-trip---parts-cost).
const (
	allocShort = 0.5
	allocLong  = 4
)

// per divides a count by the round trips.
func (c CostRow) per(n uint64) float64 {
	if c.RoundTrips == 0 {
		return 0
	}
	return float64(n) / float64(c.RoundTrips)
}

// perSecond divides a count by the window.
func (c CostRow) perSecond(n uint64) float64 {
	if c.Window <= 0 {
		return 0
	}
	return float64(n) / c.Window.Seconds()
}

// The tools of the cost table: rig as it runs, rig with the Go runtime's
// asynchronous (signal) preemption off in its probe processes, sockperf.
const (
	CostRig          = "rig"
	CostRigNoAsync   = "rig, GODEBUG=asyncpreemptoff=1"
	CostSockperf     = "sockperf"
	asyncPreemptOff  = "GODEBUG=asyncpreemptoff=1"
	msgErrqueue      = 0x2000 // MSG_ERRQUEUE
	costSettle       = time.Second
	sockperfPreamble = 3 * time.Second // its client's warm-up sleep and warm-up, with margin
)

// cost counts each tool's work per round trip in block and busy rounds of
// its own (CostTime long, CostWindow of it counted under perf).
func (b *runner) cost(ctx context.Context) error {
	cfg := b.cfg
	if _, err := exec.LookPath("perf"); err != nil {
		return errors.New("cost: perf not found (install linux-perf: make bench installs it): it counts the tools' syscalls")
	}
	// Probe processes without asynchronous preemption: agents of their own
	// whose environment the rig processes they start inherit.
	var noAsync [2]*agent.Client
	for i, a := range []struct {
		role netlab.Role
		cpu  int
	}{{netlab.Sender, cfg.SenderCPU}, {netlab.Responder, cfg.ResponderCPU}} {
		c, err := agent.DialRig(ctx, string(a.role)+"-noasync", b.prefix(a.role, a.cpu), cfg.Rig, []string{asyncPreemptOff}, cfg.Log)
		if err != nil {
			return fmt.Errorf("cost: starting the %s agent with %s: %w", a.role, asyncPreemptOff, err)
		}
		defer c.Close()
		noAsync[i] = c
	}
	tools := []string{CostRig, CostRigNoAsync, CostSockperf}
	if cfg.native() {
		tools = slices.Insert(tools, 2, RigNative)
	}
	for _, mode := range peerModes {
		for _, tool := range tools {
			b.logf("cost: %s %s", mode, tool)
			var rows []CostRow
			var err error
			switch tool {
			case CostSockperf:
				rows, err = b.costSockperf(ctx, mode)
			case CostRigNoAsync:
				rows, err = b.costRig(ctx, mode, probe.EngineGo, noAsync[0], noAsync[1])
			case RigNative:
				rows, err = b.costRig(ctx, mode, probe.EngineNative, b.snd, b.rsp)
			default:
				rows, err = b.costRig(ctx, mode, probe.EngineGo, b.snd, b.rsp)
			}
			if err != nil {
				return fmt.Errorf("cost (%s, %s): %w", mode, tool, err)
			}
			if tool == CostRig {
				if err := b.allocRounds(ctx, mode, rows); err != nil {
					return fmt.Errorf("cost (%s, %s): %w", mode, tool, err)
				}
			}
			for i := range rows {
				rows[i].Mode, rows[i].Tool = mode, tool
			}
			b.res.Cost = append(b.res.Cost, rows...)
		}
	}
	return nil
}

// costRig runs one rig round through the agents snd and rsp on engine,
// and counts a window of it: of the native engine the programs rig send
// and rig respond started, which run the loops.
func (b *runner) costRig(ctx context.Context, mode string, engine probe.Engine, snd, rsp *agent.Client) ([]CostRow, error) {
	cfg := b.cfg
	runID := wire.NewRunID()
	id := wire.FormatRunID(runID)
	dir := filepath.Join(cfg.Dir, "cost", fmt.Sprintf("%s-rig-%s", mode, id))
	done := make(chan error, 1)
	spec, err := b.rigSpec(dir, mode, "software", engine, time.Millisecond, 0, time.Millisecond, int(cfg.CostTime/time.Millisecond), 0)
	if err != nil {
		return nil, err
	}
	go func() {
		spec.SendOn, spec.RespondOn[0], spec.Send.RunID = snd, rsp, runID
		done <- b.runRound(ctx, spec)
	}()
	match := func(cmd string) func(rundir.Process) bool {
		return func(p rundir.Process) bool {
			// --run-id ID or --run-id=ID: the agents pass flags in the second form.
			return len(p.Cmdline) > 2 && p.Cmdline[1] == cmd && slices.ContainsFunc(p.Cmdline, func(a string) bool { return a == id || a == "--run-id="+id })
		}
	}
	comm, rspComm := kernelComm(cfg.Rig), kernelComm(cfg.Rig)
	isSender, isResponder := match("send"), match("respond")
	if engine == probe.EngineNative {
		// The programs' command lines are rig's (sender/native.go,
		// responder/native.go): --run-id ID.
		byID := func(p rundir.Process) bool { return slices.Contains(p.Cmdline, id) }
		comm, rspComm, isSender, isResponder = kernelComm(native.SendProgram), kernelComm(native.RespondProgram), byID, byID
	}
	c, err := b.countTool(ctx, comm, rspComm, isSender, isResponder, costSettle, done)
	werr := <-done
	if err != nil {
		return nil, errors.Join(err, werr)
	}
	if werr != nil {
		return nil, werr
	}
	for i, role := range []samples.Role{samples.RoleSender, samples.RoleResponder} {
		f, err := samples.ReadFile(filepath.Join(dir, samples.FileName(role)))
		if err != nil {
			return nil, err
		}
		if f.Footer != nil && f.Footer.Thread != nil && f.Footer.Thread.HeapAllocs != nil {
			c[i].HeapAllocs, c[i].AllocRequests = f.Footer.Thread.HeapAllocs, uint64(len(f.Records))
		}
	}
	return c, nil
}

// allocRounds runs two rig rounds, allocShort and allocLong counting
// rounds long (not under perf), and gives rows its processes' heap
// allocations in each: the long round's as HeapAllocs, the short one's as
// ShortAllocs.
func (b *runner) allocRounds(ctx context.Context, mode string, rows []CostRow) error {
	for i := range rows {
		rows[i].HeapAllocs, rows[i].AllocRequests = nil, 0 // the perf round's: not these rows'
	}
	for _, long := range []bool{false, true} {
		name, length := "short", allocShort
		if long {
			name, length = "long", allocLong
		}
		dir := filepath.Join(b.cfg.Dir, "cost", mode+"-rig-allocs-"+name)
		spec, err := b.rigSpec(dir, mode, "software", probe.EngineGo, time.Millisecond, 0, time.Millisecond, int(float64(b.cfg.CostTime/time.Millisecond)*length), 0)
		if err != nil {
			return err
		}
		if err := b.runRound(ctx, spec); err != nil {
			return err
		}
		for i, role := range []samples.Role{samples.RoleSender, samples.RoleResponder} {
			f, err := samples.ReadFile(filepath.Join(dir, samples.FileName(role)))
			if err != nil {
				return err
			}
			if f.Footer == nil || f.Footer.Thread == nil || f.Footer.Thread.HeapAllocs == nil {
				continue
			}
			n, reqs := f.Footer.Thread.HeapAllocs, uint64(len(f.Records))
			if long {
				rows[i].HeapAllocs, rows[i].AllocRequests = n, reqs
			} else {
				rows[i].ShortAllocs, rows[i].ShortRequests = n, reqs
			}
		}
	}
	return nil
}

// costSockperf runs one sockperf ping-pong and counts a window of it after
// its client's warm-up.
func (b *runner) costSockperf(ctx context.Context, mode string) ([]CostRow, error) {
	dir := filepath.Join(b.cfg.Dir, "cost", mode+"-sockperf")
	done := make(chan error, 1)
	go func() {
		_, err := b.sockperf(ctx, dir, mode == "busy", "1000", b.cfg.CostTime)
		done <- err
	}()
	match := func(cmd string) func(rundir.Process) bool {
		return func(p rundir.Process) bool {
			return len(p.Cmdline) > 1 && p.Cmdline[1] == cmd && slices.Contains(p.Cmdline, sockperfGroup) && slices.Contains(p.Cmdline, sockperfPort)
		}
	}
	c, err := b.countTool(ctx, "sockperf", "sockperf", match("ping-pong"), match("server"), sockperfPreamble, done)
	werr := <-done
	if err != nil {
		return nil, errors.Join(err, werr)
	}
	return c, werr
}

// kernelComm is a program's name as /proc/PID/comm gives it: the kernel
// keeps 15 bytes of its executable's base name.
func kernelComm(path string) string {
	c := filepath.Base(path)
	return c[:min(len(c), 15)]
}

// countTool finds the tool's sender and responder processes (by comm,
// then isSender and isResponder), waits until the sender has run for
// settle, and counts both over the window. done ends the wait early when
// the round failed.
func (b *runner) countTool(ctx context.Context, comm, rspComm string, isSender, isResponder func(rundir.Process) bool, settle time.Duration, done chan error) ([]CostRow, error) {
	fs := hostfs.Default()
	var snd, rsp int
	deadline := time.Now().Add(30 * time.Second)
	for snd == 0 || rsp == 0 {
		ps, err := hostinfo.FindProcesses(fs, comm, rspComm)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			switch {
			case p.Comm == comm && isSender(p):
				snd = p.PID
			case p.Comm == rspComm && isResponder(p):
				rsp = p.PID
			}
		}
		if snd != 0 && rsp != 0 {
			break
		}
		select {
		case err := <-done:
			done <- err // the caller reads it
			return nil, fmt.Errorf("the round ended before its %s processes were found", comm)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s sender and responder processes not found after 30s", comm)
		}
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	counts, win, err := b.countWindow(ctx, []int{snd, rsp}, b.cfg.CostWindow)
	if err != nil {
		return nil, err
	}
	rows := []CostRow{costRow("sender", snd, counts, win), costRow("responder", rsp, counts, win)}
	for _, r := range rows {
		if r.RoundTrips == 0 {
			return nil, fmt.Errorf("the %s sent nothing in the counted window (%v from %v after it started): the round ended first; give --cost-time more than the settle time, perf's start-up and --cost-window %v",
				r.Side, win.took.Round(time.Millisecond), settle, b.cfg.CostWindow)
		}
	}
	return rows, nil
}

// costRow sums a process's threads' counts.
func costRow(side string, pid int, counts map[int]*taskCount, win countedWindow) CostRow {
	r := CostRow{Side: side, Window: win.took, Skew: win.skew, BySyscall: map[string]uint64{}}
	var thread *taskCount
	for _, tc := range counts {
		if tc.pid != pid {
			continue
		}
		r.Threads++
		if tc.uncounted {
			r.Uncounted++
		}
		r.Syscalls += tc.ev[evAll]
		r.StampReads += tc.ev[evErrqueue]
		for i, e := range perfEvents {
			if e.name != "" {
				r.BySyscall[e.name] += tc.ev[i]
			}
		}
		r.Voluntary += tc.vol
		r.Involuntary += tc.invol
		r.CPUNS += tc.runNS
		if thread == nil || tc.sends() > thread.sends() {
			thread = tc
		}
	}
	if thread != nil {
		r.RoundTrips = thread.sends()
		r.ThreadSyscalls, r.ThreadVoluntary, r.ThreadInvoluntary, r.ThreadCPUNS = thread.ev[evAll], thread.vol, thread.invol, thread.runNS
	}
	return r
}

// perfEvents are the counted events: every syscall, the TX-stamp reads,
// and the syscalls either tool makes per round trip by name.
var perfEvents = []struct{ name, event, filter string }{
	{"", "raw_syscalls:sys_enter", ""},
	{"", "syscalls:sys_enter_recvmsg", fmt.Sprintf("flags & %#x", msgErrqueue)},
	{"recvmsg", "syscalls:sys_enter_recvmsg", ""},
	{"recvfrom", "syscalls:sys_enter_recvfrom", ""},
	{"sendmsg", "syscalls:sys_enter_sendmsg", ""},
	{"sendto", "syscalls:sys_enter_sendto", ""},
	{"ppoll", "syscalls:sys_enter_ppoll", ""},
	{"poll", "syscalls:sys_enter_poll", ""},
	{"select", "syscalls:sys_enter_select", ""},
	{"epoll_wait", "syscalls:sys_enter_epoll_wait", ""},
	{"epoll_pwait", "syscalls:sys_enter_epoll_pwait", ""},
	{"read", "syscalls:sys_enter_read", ""},
	{"timerfd_settime", "syscalls:sys_enter_timerfd_settime", ""},
	{"futex", "syscalls:sys_enter_futex", ""},
	{"nanosleep", "syscalls:sys_enter_nanosleep", ""},
	{"clock_nanosleep", "syscalls:sys_enter_clock_nanosleep", ""},
	{"sched_yield", "syscalls:sys_enter_sched_yield", ""},
	{"rt_sigreturn", "syscalls:sys_enter_rt_sigreturn", ""},
	{"tgkill", "syscalls:sys_enter_tgkill", ""},
	{"getrusage", "syscalls:sys_enter_getrusage", ""},
}

// Indexes of perfEvents.
const (
	evAll      = 0
	evErrqueue = 1
	evSendmsg  = 4
	evSendto   = 5
)

// taskCount is one thread's counts over a window.
type taskCount struct {
	pid, tid          int
	vol, invol, runNS uint64
	ev                []uint64 // per perfEvents
	uncounted         bool     // perf did not count its syscalls
}

func (t *taskCount) sends() uint64 { return t.ev[evSendmsg] + t.ev[evSendto] }

// taskSnap is a thread's /proc counters at one moment.
type taskSnap struct{ vol, invol, runNS uint64 }

// snapTasks reads every thread of the processes.
func snapTasks(fs hostfs.FS, pids []int) (map[int]taskSnap, map[int]int, error) {
	snap, owner := map[int]taskSnap{}, map[int]int{}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/task"
		ents, err := fs.ReadDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("process %d: %w", pid, err)
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			st, err1 := fs.ReadFile(dir + "/" + e.Name() + "/status")
			ss, err2 := fs.ReadFile(dir + "/" + e.Name() + "/schedstat")
			if err1 != nil || err2 != nil {
				continue // the thread ended
			}
			vol, invol, ok1 := hostinfo.ParseCtxSwitches(st)
			sched, ok2 := hostinfo.ParseTaskSchedstat(ss)
			if !ok1 || !ok2 {
				return nil, nil, fmt.Errorf("%s/%s: unreadable status or schedstat", dir, e.Name())
			}
			snap[tid], owner[tid] = taskSnap{vol, invol, sched.RunNS}, pid
		}
	}
	return snap, owner, nil
}

// countedWindow is the wall time a count took, and how far apart perf
// switched its events' counters (CostRow.Window, CostRow.Skew).
type countedWindow struct{ took, skew time.Duration }

// countWindow counts the processes' threads over window: perf stat counts
// the syscalls per thread between an enable and a disable sent on its
// control pipe, and /proc is read right after each acknowledgement.
func (b *runner) countWindow(ctx context.Context, pids []int, window time.Duration) (map[int]*taskCount, countedWindow, error) {
	fs := hostfs.Default()
	out := filepath.Join(b.cfg.Dir, "cost", fmt.Sprintf("perf-%d.csv", pids[0]))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, countedWindow{}, err
	}
	args := []string{"stat", "-x,", "--per-thread", "-D", "-1", "--control", "fd:3,4", "-o", out}
	for _, e := range perfEvents {
		args = append(args, "-e", e.event)
		if e.filter != "" {
			args = append(args, "--filter", e.filter)
		}
	}
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	args = append(args, "-p", strings.Join(ps, ","))
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, countedWindow{}, err
	}
	defer ctlW.Close()
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return nil, countedWindow{}, err
	}
	defer ackR.Close()
	errOut := &limitedBuffer{max: 4096}
	cmd := exec.Command("perf", args...)
	cmd.ExtraFiles = []*os.File{ctlR, ackW}
	cmd.Stdout, cmd.Stderr = errOut, errOut
	err = cmd.Start()
	ctlR.Close()
	ackW.Close()
	if err != nil {
		return nil, countedWindow{}, fmt.Errorf("perf stat: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			return err
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("perf stat did not stop on SIGINT: %v", <-exited)
		}
	}
	command := func(c string) error {
		if _, err := ctlW.WriteString(c + "\n"); err != nil {
			return err
		}
		_ = ackR.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 16)
		n, err := ackR.Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), "ack") {
			return fmt.Errorf("perf stat on processes %v did not acknowledge %q: %v (%s)", pids, c, err, strings.TrimSpace(errOut.String()))
		}
		return nil
	}
	fail := func(err error) (map[int]*taskCount, countedWindow, error) {
		return nil, countedWindow{}, errors.Join(err, stop())
	}
	// perf reads its control pipe once its counters are open (which takes
	// a while for every event on every thread): the first acknowledgement
	// says it is ready, the second starts the window at once.
	if err := command("disable"); err != nil {
		return fail(err)
	}
	ask := time.Now()
	if err := command("enable"); err != nil {
		return fail(err)
	}
	t0 := time.Now()
	win := countedWindow{skew: t0.Sub(ask)}
	before, owner, err := snapTasks(fs, pids)
	if err != nil {
		return fail(err)
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	ask = time.Now()
	if err := command("disable"); err != nil {
		return fail(err)
	}
	win.skew += time.Since(ask)
	after, _, err := snapTasks(fs, pids)
	win.took = time.Since(t0)
	if err != nil {
		return fail(err)
	}
	if err := stop(); err != nil && !interrupted(err) {
		return nil, countedWindow{}, fmt.Errorf("perf stat: %v (%s)", err, errOut.String())
	}
	text, err := os.ReadFile(out)
	if err != nil {
		return nil, countedWindow{}, err
	}
	evs, err := parsePerfStat(string(text), len(perfEvents), func(i int) string { return perfEvents[i].event })
	if err != nil {
		return nil, countedWindow{}, fmt.Errorf("perf stat output %s: %w", out, err)
	}
	counts := map[int]*taskCount{}
	for tid, a := range after {
		pid, ok := owner[tid]
		bf, seen := before[tid]
		if !ok || !seen {
			continue // started during the window: perf did not count it either
		}
		tc := &taskCount{pid: pid, tid: tid, vol: a.vol - bf.vol, invol: a.invol - bf.invol, runNS: a.runNS - bf.runNS, ev: evs[tid]}
		if tc.ev == nil {
			// Started after perf attached, before the window: perf does not
			// follow it. Its switches and CPU time still count; its syscalls
			// are missing, and the row says so.
			tc.ev, tc.uncounted = make([]uint64, len(perfEvents)), true
		}
		counts[tid] = tc
	}
	return counts, win, nil
}

// parsePerfStat parses `perf stat -x, --per-thread` output: a line per
// thread and event, "comm-tid,count,unit,event,…", a thread's lines in the
// order the events were given (perf 6.1 groups them by event); "<not
// counted>" is a thread that did not run while counting (0). An event given
// twice (with different filters) is told apart by that order. It returns
// the counts per thread id, per event.
func parsePerfStat(text string, nEvents int, event func(int) string) (map[int][]uint64, error) {
	out := map[int][]uint64{}
	next := map[int]int{} // per thread: the event its next line is
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "Events ") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d %q: want comm-tid,count,unit,event,…", i+1, line)
		}
		dash := strings.LastIndexByte(f[0], '-')
		tid, err := strconv.Atoi(f[0][dash+1:])
		if dash < 0 || err != nil || tid <= 0 {
			return nil, fmt.Errorf("line %d %q: no thread id in %q", i+1, line, f[0])
		}
		k := next[tid]
		if k >= nEvents || f[3] != event(k) {
			return nil, fmt.Errorf("line %d %q: event %q, want %q", i+1, line, f[3], eventAt(event, nEvents, k))
		}
		var n uint64
		if f[1] != "<not counted>" { // a thread that did not run in the window
			if n, err = strconv.ParseUint(f[1], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d %q: count %q (perf could not count %s: tracefs mounted? root?)", i+1, line, f[1], f[3])
			}
		}
		if out[tid] == nil {
			out[tid] = make([]uint64, nEvents)
		}
		out[tid][k] = n
		next[tid] = k + 1
	}
	for tid, k := range next {
		if k != nEvents {
			return nil, fmt.Errorf("thread %d: %d of %d events", tid, k, nEvents)
		}
	}
	return out, nil
}

// interrupted reports whether a process ended by the SIGINT it was sent.
func interrupted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

func eventAt(event func(int) string, n, k int) string {
	if k < n {
		return event(k)
	}
	return "no more events"
}
