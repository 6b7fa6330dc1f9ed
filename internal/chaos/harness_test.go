package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

// h is one row's world: its own state, lab, results and temporary
// directories and a host root whose cpuidle knobs are files (this VM has
// no cpuidle driver; see hostfstest.IdleRoot), so that nothing it does
// reaches another row.
type h struct {
	t                                    *testing.T
	rig                                  string
	dir, state, labs, root, results, tmp string
	netnsBefore                          []string
	obs                                  []string
	started                              time.Time
	labsMu                               sync.Mutex
	labsSeen                             map[string]bool // every lab of the row's rig processes
}

func newH(t *testing.T) *h {
	t.Helper()
	rig := os.Getenv("RIG_CHAOS_BIN")
	if rig == "" {
		rig = testbin.Rig(t)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	x := &h{t: t, rig: rig, dir: dir, state: filepath.Join(dir, "state"), labs: filepath.Join(dir, "labs"),
		root: hostfstest.IdleRoot(t), results: filepath.Join(dir, "results"), tmp: filepath.Join(dir, "tmp"),
		netnsBefore: netnsList(), started: time.Now()}
	os.MkdirAll(x.tmp, 0o755)
	// Other users of the machine make namespaces too: only those of the
	// row's labs count, so note every lab that appears in its lab dir.
	x.labsSeen = map[string]bool{}
	stop := make(chan struct{})
	go func() {
		for {
			ents, _ := os.ReadDir(x.labs)
			x.labsMu.Lock()
			for _, e := range ents {
				if n := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".json"), ".building"); !strings.HasPrefix(n, ".") {
					x.labsSeen[n] = true
				}
			}
			x.labsMu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(x.sweep)
	t.Cleanup(func() { close(stop) })
	return x
}

// ownNetns reports a namespace of one of the row's labs.
func (x *h) ownNetns(ns string) bool {
	x.labsMu.Lock()
	defer x.labsMu.Unlock()
	for lab := range x.labsSeen {
		if strings.HasPrefix(ns, lab+"-") {
			return true
		}
	}
	return false
}

// env is the environment of every rig process of the row.
func (x *h) env(extra ...string) []string {
	env := append(os.Environ(), journal.EnvDir+"="+x.state, "RIG_LAB_DIR="+x.labs, "TMPDIR="+x.tmp)
	if x.root != "" {
		env = append(env, hostfs.EnvRoot+"="+x.root)
	}
	return append(env, extra...)
}

// realRoot makes the row's processes use the live /proc and /sys (for
// NIC knobs: nicctl resolves /sys/class/net links inside the root, and
// the idle root's links lead out of it).
func (x *h) realRoot() { x.root = "" }

// observe records what happened, for the table's "observed" column (the
// test log has the whole text of a failure).
func (x *h) observe(format string, a ...any) {
	o := strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
	if r := []rune(o); len(r) > 160 {
		o = string(r[:160]) + "…"
	}
	x.obs = append(x.obs, o)
}

// failf records a broken expectation: the row does not hold.
func (x *h) failf(format string, a ...any) {
	x.t.Helper()
	msg := fmt.Sprintf(format, a...)
	x.observe("FAILED: %s", msg)
	x.t.Error(msg)
}

// proc is a rig process of the row.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuf
	done chan struct{}
	err  error
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs rig with args in the row's environment (plus extra).
func (x *h) start(extra []string, args ...string) *proc {
	x.t.Helper()
	cmd := exec.Command(x.rig, args...)
	cmd.Env = x.env(extra...)
	p := &proc{cmd: cmd, out: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		x.t.Fatalf("rig %v: %v", args, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	x.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// rigRun starts `rig run` on a scenario.
func (x *h) rigRun(yaml string, extra ...string) *proc {
	x.t.Helper()
	path := filepath.Join(x.dir, fmt.Sprintf("scenario-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		x.t.Fatal(err)
	}
	return x.start(nil, append([]string{"run", "--results", x.results}, append(extra, path)...)...)
}

// wait waits for p to exit and returns its exit code (-1: killed by a
// signal, -2: still running after timeout).
func (p *proc) wait(timeout time.Duration) int {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -2
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -3
	}
	return 0
}

// run runs rig to the end and returns its exit code and output.
func (x *h) run(args ...string) (int, string) {
	x.t.Helper()
	p := x.start(nil, args...)
	code := p.wait(2 * time.Minute)
	return code, p.out.String()
}

// waitFor polls cond until it holds; the row fails (and stops) after
// timeout, with what it was waiting for.
func (x *h) waitFor(what string, timeout time.Duration, cond func() bool) {
	x.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			x.failf("timed out after %v waiting for %s", timeout, what)
			x.t.FailNow()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRun is waitFor while p runs: the row fails at once, with p's
// output, if p exits first.
func (x *h) waitRun(p *proc, what string, timeout time.Duration, cond func() bool) {
	x.t.Helper()
	x.waitFor(what, timeout, func() bool {
		select {
		case <-p.done:
			x.failf("rig exited (%v) before %s:\n%s", p.err, what, lastLines(p.out.String(), 10))
			x.t.FailNow()
		default:
		}
		return cond()
	})
}

// knobs returns the cpuidle "disable" files below the row's host root that
// are not "0" (an arm's cstate knob in force).
func (x *h) knobs() []string {
	if x.root == "" {
		return nil
	}
	var out []string
	m, _ := filepath.Glob(filepath.Join(x.root, "sys/devices/system/cpu/cpu*/cpuidle/state*/disable"))
	for _, f := range m {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != "0" {
			out = append(out, strings.TrimPrefix(f, x.root))
		}
	}
	return out
}

// rigProcs lists the running processes of the row's rig binary whose
// command line contains every word of match.
func (x *h) rigProcs(match ...string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != x.rig {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); zombie(st) {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cl), "\x00"), "\x00")
		ok := true
		for _, m := range match {
			ok = ok && slices.Contains(args, m)
		}
		if ok {
			out = append(out, pid)
		}
	}
	return out
}

// stressNG lists the stress-ng processes of the row: the loads its agents
// started carry the row's TMPDIR in their environment.
func (x *h) stressNG() []int {
	procs, _ := hostinfo.FindProcesses(hostfs.FS{Root: "/"}, "stress-ng")
	var out []int
	for _, p := range procs {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if slices.Contains(strings.Split(string(env), "\x00"), "TMPDIR="+x.tmp) {
			out = append(out, p.PID)
		}
	}
	return out
}

func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

// inRound reports the middle of a round of the knobs arm: its knob in
// force, the responder ready and the sender (started once the responder
// and capture are ready) sending.
func (x *h) inRound() bool {
	return len(x.knobs()) > 0 && len(x.rigProcs("respond")) > 0 && len(x.rigProcs("send")) > 0
}

// sent returns a condition: the round's rig send has sent n requests (its
// namespace's UDP datagrams, counted from the first call).
func (x *h) sent(n int) func() bool {
	base := -1
	return func() bool {
		pids := x.rigProcs("send")
		if len(pids) != 1 {
			return false
		}
		c, err := netlabtest.UDPSent(pids[0])
		if err != nil {
			return false
		}
		if base < 0 {
			base = c
		}
		return c >= base+n
	}
}

func netnsList() []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// leftovers lists everything the row's rig processes left on the host.
func (x *h) leftovers() []string {
	var out []string
	if k := x.knobs(); len(k) > 0 {
		out = append(out, "knob left changed: "+strings.Join(k, " "))
	}
	if err := journal.CheckPending(x.state); err != nil {
		out = append(out, "journal: "+err.Error())
	}
	if p := x.rigProcs(); len(p) > 0 {
		out = append(out, fmt.Sprintf("rig processes %v", p))
	}
	if p := x.stressNG(); len(p) > 0 {
		out = append(out, fmt.Sprintf("stress-ng processes %v", p))
	}
	if ents, _ := os.ReadDir(x.labs); len(ents) > 0 {
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		out = append(out, "lab descriptions "+strings.Join(n, " "))
	}
	for _, ns := range netnsList() {
		if !slices.Contains(x.netnsBefore, ns) && x.ownNetns(ns) {
			out = append(out, "namespace "+ns)
		}
	}
	if ents, _ := os.ReadDir(x.tmp); len(ents) > 0 {
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		out = append(out, "in TMPDIR: "+strings.Join(n, " "))
	}
	if l, err := journal.LockHost(x.state, journal.Self("")); err != nil {
		out = append(out, "host lock: "+err.Error())
	} else {
		l.Unlock()
	}
	return out
}

// clean waits up to 10 s for the row's processes to end, then checks that
// nothing is left, and records it.
func (x *h) clean(when string) {
	x.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(x.rigProcs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := x.leftovers(); len(l) > 0 {
		x.failf("%s: left behind: %s", when, strings.Join(l, "; "))
		return
	}
	x.observe("%s: nothing left", when)
}

// noRig waits up to bound for the row's rig processes to end and says how
// long it took.
func (x *h) noRig(bound time.Duration) {
	x.t.Helper()
	start := time.Now()
	for len(x.rigProcs()) > 0 {
		if time.Since(start) > bound {
			x.failf("rig processes still running %v after the fault: %v", bound, x.rigProcs())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	x.observe("all rig processes gone in %.1f s", time.Since(start).Seconds())
}

// restore runs `rig restore` and records what it said.
func (x *h) restore(wantRemovedLab bool) {
	x.t.Helper()
	code, out := x.run("restore")
	if code != 0 {
		x.failf("rig restore: exit %d:\n%s", code, out)
		return
	}
	removed := strings.Contains(out, "lab run-") // "removed lab" or "removed unfinished lab"
	switch {
	case wantRemovedLab && !removed:
		x.failf("rig restore did not remove (or did not mention) the run's lab:\n%s", out)
	case removed:
		x.observe("rig restore removed the lab and said so")
	default:
		x.observe("rig restore: %s", firstLine(out))
	}
}

// labList runs `rig lab list --json` and returns the state of each lab.
func (x *h) labList() map[string]string {
	x.t.Helper()
	code, out := x.run("lab", "list", "--json")
	var rows []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		x.failf("rig lab list --json: exit %d: %s", code, out)
		return nil
	}
	m := map[string]string{}
	for _, r := range rows {
		m[r.Name] = r.State
	}
	return m
}

// signal sends sig to p.
func (x *h) signal(p *proc, sig syscall.Signal) {
	x.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		x.failf("signal %v: %v", sig, err)
	}
}

// sweep removes whatever a failed row left, so the next row starts clean
// (the row has already failed for it).
func (x *h) sweep() {
	for _, pid := range x.rigProcs() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); len(x.rigProcs()) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if len(x.leftovers()) == 0 {
		return
	}
	cmd := exec.Command(x.rig, "restore")
	cmd.Env = x.env()
	cmd.Run()
	ents, _ := os.ReadDir(x.labs)
	for _, e := range ents {
		c := exec.Command(x.rig, "lab", "down", "--name", strings.TrimSuffix(e.Name(), ".json"))
		c.Env = x.env()
		c.Run()
	}
	cmd = exec.Command(x.rig, "restore", "--discard")
	cmd.Env = x.env()
	cmd.Run()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lastLines returns the last n lines of s, for failure messages.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
