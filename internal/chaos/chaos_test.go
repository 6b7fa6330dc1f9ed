package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

// row is one fault of the matrix. run injects it and checks the outcome
// with h's helpers (observe what happened, failf what must not have).
type row struct {
	fault, expected string
	run             func(x *h)
}

// scenario is the emulated run the rows hurt: the knobs arm holds a
// journaled cpuidle knob on CPU 1 (below the row's host root) with a busy
// responder on that CPU and a stress-ng load on CPU 0; rounds 0 and 1 run
// knobs first and last.
const scenario = `name: chaos
emulate: netns
traffic: {group: 239.88.0.1:7800, interval: 1ms, count: 2000}
timestamps: software
rounds: 2
order: rotate
arms:
  - name: knobs
    responder: {cpu: 1, poll: busy}
    cstate: {poll: true}
    load: {stress-ng: --cpu 1 --cpu-load 30, cpus: 0}
  - name: base
    responder: {cpu: 1}
`

// lastRoundDone: the knobs arm of round 1 is the run's last: once its
// files are written, the run is taking the arm back and analysing.
func (x *h) lastRoundDone() bool {
	m, _ := filepath.Glob(filepath.Join(x.results, "chaos-*", "arms", "knobs", "round-1", "sender.samples"))
	return len(m) > 0
}

// killedRun checks the aftermath of a `rig run` killed with SIGKILL: its
// agents put the knob back themselves and end with their probes, the lab
// is listed as stale, and `rig restore` removes it and says so.
func killedRun(x *h, p *proc) {
	// A SIGKILL takes effect when the process leaves the kernel: a netlink
	// request waiting for rtnl_lock (held by the cleanup of the namespaces
	// earlier tests removed) can take seconds on a busy host.
	start := time.Now()
	if code := p.wait(60 * time.Second); code != -1 {
		x.failf("rig run after SIGKILL: exit %d", code)
	} else {
		x.observe("rig run gone %.1f s after SIGKILL", time.Since(start).Seconds())
	}
	x.noRig(10 * time.Second)
	if k := x.knobs(); len(k) > 0 {
		x.failf("knob left changed after the kill (the agents did not put it back): %v", k)
	} else if err := journal.CheckPending(x.state); err != nil {
		x.failf("agents left their journals pending: %v", err)
	} else {
		x.observe("knob back and no journal pending before rig restore")
	}
	stale := 0
	for name, st := range x.labList() {
		if strings.HasPrefix(name, "run-") && strings.HasPrefix(st, "stale") {
			stale++
		}
	}
	if stale != 1 {
		x.failf("rig lab list shows %d stale run lab(s), want 1", stale)
	} else {
		x.observe("rig lab list: lab stale")
	}
	x.restore(true)
	x.clean("after rig restore")
}

// interrupted checks a `rig run` stopped by a signal it handles.
func interrupted(x *h, p *proc) {
	code := p.wait(60 * time.Second)
	out := p.out.String()
	x.observe("exit %d", code)
	if code != 1 || !strings.Contains(out, "interrupted") || !strings.Contains(out, "run directory") {
		x.failf("want exit 1 saying interrupted and where the run directory is, got %d:\n%s", code, lastLines(out, 8))
	}
	x.clean("after exit")
}

var matrix = []row{
	{
		fault:    "SIGINT of rig run during setup (lab built, agents starting)",
		expected: "exit non-zero; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitFor("the lab description", 30*time.Second, func() bool {
				m, _ := filepath.Glob(filepath.Join(x.labs, "run-*.json"))
				return len(m) > 0
			})
			x.signal(p, syscall.SIGINT)
			code := p.wait(60 * time.Second)
			x.observe("exit %d", code)
			if code <= 0 {
				x.failf("rig run interrupted in setup: exit %d, want non-zero:\n%s", code, lastLines(p.out.String(), 8))
			}
			x.clean("after exit")
		},
	},
	{
		fault:    "SIGKILL of rig run while it builds the lab",
		expected: "the half-built lab is listed stale; rig restore removes it and says so; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "the lab build", 30*time.Second, func() bool {
				m, _ := filepath.Glob(filepath.Join(x.labs, "run-*"))
				return len(m) > 0
			})
			x.signal(p, syscall.SIGKILL)
			killedRun(x, p)
		},
	},
	{
		fault:    "SIGTERM of rig run during a round",
		expected: "exit 1 saying interrupted and where the run directory is; knob back; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "a round of the knobs arm", 60*time.Second, x.inRound)
			x.signal(p, syscall.SIGTERM)
			interrupted(x, p)
		},
	},
	{
		fault:    "SIGHUP of rig run during a round (terminal or ssh gone)",
		expected: "as SIGTERM: exit 1, knob back, nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "a round of the knobs arm", 60*time.Second, x.inRound)
			x.signal(p, syscall.SIGHUP)
			interrupted(x, p)
		},
	},
	{
		fault:    "SIGKILL of rig run during a round",
		expected: "agents put the knob back and end with their probes (≤ 10 s); lab listed stale; rig restore removes it and says so",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "a round of the knobs arm", 60*time.Second, x.inRound)
			x.waitRun(p, "100 requests of the round", 60*time.Second, x.sent(100))
			x.signal(p, syscall.SIGKILL)
			killedRun(x, p)
		},
	},
	{
		fault:    "SIGTERM of rig run during the last undo and analysis",
		expected: "exit 0 or 1; manifest written; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "the last round's files", 90*time.Second, x.lastRoundDone)
			x.signal(p, syscall.SIGTERM)
			code := p.wait(60 * time.Second)
			x.observe("exit %d", code)
			if code != 0 && code != 1 {
				x.failf("exit %d:\n%s", code, lastLines(p.out.String(), 8))
			}
			if m, _ := filepath.Glob(filepath.Join(x.results, "chaos-*", "manifest.json")); len(m) != 1 {
				x.failf("manifest: %v", m)
			}
			x.clean("after exit")
		},
	},
	{
		fault:    "SIGKILL of rig run during the last undo and analysis",
		expected: "agents finish the undo; rig restore removes the lab; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "the last round's files", 90*time.Second, x.lastRoundDone)
			x.signal(p, syscall.SIGKILL)
			killedRun(x, p)
		},
	},
	{
		fault:    "SIGKILL of the responder host's agent during a round (busy responder)",
		expected: "its probe ends ≤ 10 s (CPU free); run exits 1 printing rig restore (here: the lab goes with the run); rig restore puts the knob back; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "a round of the knobs arm", 60*time.Second, x.inRound)
			agents := x.rigProcs("agent", "responder")
			probes := x.rigProcs("respond")
			if len(agents) != 1 || len(probes) != 1 {
				x.failf("responder agent %v, probe %v: want one each", agents, probes)
				return
			}
			syscall.Kill(agents[0], syscall.SIGKILL)
			start := time.Now()
			for testbin.Alive(probes[0]) && time.Since(start) < 10*time.Second {
				time.Sleep(10 * time.Millisecond)
			}
			if testbin.Alive(probes[0]) {
				x.failf("rig respond (pid %d) still runs 10 s after its agent was killed", probes[0])
			} else {
				x.observe("probe gone %.2f s after its agent", time.Since(start).Seconds())
			}
			code := p.wait(60 * time.Second)
			out := p.out.String()
			x.observe("rig run exit %d", code)
			// The run's lab goes with the run: the host is put back from here.
			if code != 1 || !strings.Contains(out, "run `"+x.rig+" restore`") {
				x.failf("want exit 1 printing `%s restore`, got %d:\n%s", x.rig, code, lastLines(out, 8))
			}
			x.restore(false)
			x.clean("after rig restore")
		},
	},
	killedProbe("respond", "responder"),
	killedProbe("send", "sender"),
	{
		fault:    "disk full: results on a 256 KiB tmpfs",
		expected: "exit 1 with 'no space left'; lists only report files that exist; knob back; nothing left",
		run: func(x *h) {
			os.MkdirAll(x.results, 0o755)
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "rig-chaos", x.results).CombinedOutput(); err != nil {
				x.failf("mount tmpfs: %v %s", err, out)
				return
			}
			x.t.Cleanup(func() { syscall.Unmount(x.results, syscall.MNT_DETACH) })
			p := x.rigRun(scenario)
			code := p.wait(120 * time.Second)
			out := p.out.String()
			x.observe("exit %d", code)
			if code != 1 || !strings.Contains(out, "no space left on device") {
				x.failf("want exit 1 saying no space left, got %d:\n%s", code, lastLines(out, 8))
			}
			for _, l := range strings.Split(out, "\n") {
				if !strings.Contains(l, "run directory ") {
					continue
				}
				i, j := strings.Index(l, "run directory ")+len("run directory "), strings.LastIndex(l, " (")
				dir := l[i:j]
				listed := strings.Split(strings.TrimSuffix(l[j+2:], ")"), ", ")
				for _, f := range listed {
					if f == "no report was written" {
						continue
					}
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						x.failf("run directory line lists %s, which does not exist: %s", f, l)
					}
				}
				x.observe("said: %s", strings.TrimSpace(l[strings.Index(l, "run directory"):]))
			}
			x.clean("after exit")
		},
	},
	{
		fault:    "two rig runs at once",
		expected: "the second is refused at once naming the first (run id, pid); the first completes (exit 0); nothing left",
		run: func(x *h) {
			a := x.rigRun(scenario)
			x.waitRun(a, "a round of the knobs arm", 60*time.Second, x.inRound)
			b := x.rigRun(scenario)
			code := b.wait(30 * time.Second)
			out := b.out.String()
			x.observe("second: exit %d: %s", code, lastLines(out, 1))
			if code == 0 || !strings.Contains(out, "host lock") || !strings.Contains(out, fmt.Sprintf("pid %d", a.cmd.Process.Pid)) {
				x.failf("second run: exit %d, want refused naming the first (pid %d):\n%s", code, a.cmd.Process.Pid, lastLines(out, 6))
			}
			if code := a.wait(120 * time.Second); code != 0 {
				x.failf("first run: exit %d:\n%s", code, lastLines(a.out.String(), 8))
			} else {
				x.observe("first: exit 0")
			}
			if m, _ := filepath.Glob(filepath.Join(x.results, "chaos-*")); len(m) != 1 {
				x.failf("run directories %v: want the first run's only", m)
			}
			x.clean("after both")
		},
	},
	{
		fault:    "rig restore during a run",
		expected: "refused naming the run; the run completes (exit 0); nothing left",
		run: func(x *h) {
			a := x.rigRun(scenario)
			x.waitRun(a, "a round of the knobs arm", 60*time.Second, x.inRound)
			code, out := x.run("restore")
			x.observe("restore: exit %d", code)
			if code == 0 || !strings.Contains(out, "host lock") || !strings.Contains(out, "run ") {
				x.failf("rig restore during a run: exit %d, want refused naming the run:\n%s", code, out)
			}
			if len(x.knobs()) == 0 {
				x.failf("rig restore undid the running arm's knob")
			}
			if code := a.wait(120 * time.Second); code != 0 {
				x.failf("run: exit %d:\n%s", code, lastLines(a.out.String(), 8))
			} else {
				x.observe("run: exit 0")
			}
			x.clean("after the run")
		},
	},
	{
		fault:    "rig nicctl set --channels during a run that sets channels (4-queue veth)",
		expected: "nicctl refused naming the run; channels 4 → 2 (arm) → 4; nothing left",
		run: func(x *h) {
			topo, yaml := nicLab(x)
			a := x.rigRun(yaml)
			x.waitRun(a, "the arm's channels 2", 60*time.Second, func() bool { return channels(x, topo) == 2 })
			// In the device's namespace (ethtool works there); the lock is
			// the machine's.
			ns := exec.Command("ip", "netns", "exec", topo.Responder.Netns, x.rig, "nicctl", "set", topo.Responder.Interface, "--channels", "3", "--for", "3s")
			ns.Env = x.env()
			nsOut, nsErr := ns.CombinedOutput()
			x.observe("nicctl: %v: %s", nsErr, lastLines(string(nsOut), 1))
			if nsErr == nil || !strings.Contains(string(nsOut), "host lock") || !strings.Contains(string(nsOut), "run ") {
				x.failf("nicctl set during the run: %v, want refused naming the run:\n%s", nsErr, nsOut)
			}
			if c := channels(x, topo); c != 2 {
				x.failf("channels %d during the arm after nicctl, want 2", c)
			}
			if code := a.wait(120 * time.Second); code != 0 {
				x.failf("run: exit %d:\n%s", code, lastLines(a.out.String(), 8))
			}
			if c := channels(x, topo); c != 4 {
				x.failf("channels %d after the run, want 4", c)
			} else {
				x.observe("channels back to 4")
			}
			x.clean("after the run")
		},
	},
	{
		fault:    "SIGKILL of the responder host's agent (via ip netns exec) while the arm holds channels 2",
		expected: "run exits 1 printing ip netns exec NS rig restore; that command, run as printed, puts channels back to 4; nothing left",
		run: func(x *h) {
			topo, yaml := nicLab(x)
			a := x.rigRun(yaml)
			x.waitRun(a, "the arm's channels 2", 60*time.Second, func() bool { return channels(x, topo) == 2 })
			agents := x.rigProcs("agent", "rsp")
			if len(agents) != 1 {
				x.failf("responder agent %v: want one", agents)
				return
			}
			syscall.Kill(agents[0], syscall.SIGKILL)
			code := a.wait(60 * time.Second)
			out := a.out.String()
			want := "ip netns exec " + topo.Responder.Netns + " " + x.rig + " restore"
			x.observe("run: exit %d", code)
			if code != 1 || !strings.Contains(out, "run `"+want+"`") {
				x.failf("want exit 1 printing `%s`, got %d:\n%s", want, code, lastLines(out, 8))
				return
			}
			f := strings.Fields(want)
			restore := exec.Command(f[0], f[1:]...)
			restore.Env = x.env()
			if rout, err := restore.CombinedOutput(); err != nil {
				x.failf("%s: %v\n%s", want, err, rout)
			}
			if c := channels(x, topo); c != 4 {
				x.failf("channels %d after the printed restore, want 4", c)
			} else {
				x.observe("the printed restore put channels back to 4")
			}
			x.clean("after the printed restore")
		},
	},
	{
		fault:    "rig run while rig nicctl set holds channels 3 (4-queue veth)",
		expected: "run refused at once naming nicctl's pid and command; nicctl's change undone at its end; nothing left",
		run: func(x *h) {
			topo, yaml := nicLab(x)
			ns := exec.Command("ip", "netns", "exec", topo.Responder.Netns, x.rig, "nicctl", "set", topo.Responder.Interface, "--channels", "3", "--for", "30s")
			ns.Env = x.env()
			nsOut := &syncBuf{}
			ns.Stdout, ns.Stderr = nsOut, nsOut
			if err := ns.Start(); err != nil {
				x.failf("nicctl: %v", err)
				return
			}
			x.waitFor("nicctl's channels 3", 30*time.Second, func() bool { return channels(x, topo) == 3 })
			a := x.rigRun(yaml)
			code := a.wait(30 * time.Second)
			out := a.out.String()
			x.observe("run: exit %d", code)
			if code == 0 || !strings.Contains(out, "host lock") || !strings.Contains(out, "nicctl set") || !strings.Contains(out, fmt.Sprintf("pid %d", ns.Process.Pid)) {
				x.failf("rig run while nicctl holds: exit %d, want refused naming nicctl (pid %d):\n%s", code, ns.Process.Pid, lastLines(out, 6))
			}
			if c := channels(x, topo); c != 3 {
				x.failf("channels %d after the refused run, want nicctl's 3", c)
			}
			ns.Process.Signal(syscall.SIGINT)
			ns.Wait()
			if c := channels(x, topo); c != 4 {
				x.failf("channels %d after nicctl ended, want 4:\n%s", c, nsOut.String())
			} else {
				x.observe("channels 3 → 4 at nicctl's end")
			}
			x.clean("after nicctl")
		},
	},
}

// nicLab builds a lab with a 4-queue responder veth (a lab built by hand:
// the test removes it) and returns a scenario whose hosts are its
// killedProbe is the row that SIGKILLs rig's probe cmd (the word in
// rig run's errors: responder, sender) during a round.
func killedProbe(cmd, word string) row {
	return row{
		fault:    "SIGKILL of the " + word + " probe during a round",
		expected: "run exits 1 naming the " + word + "; knob back; nothing left",
		run: func(x *h) {
			p := x.rigRun(scenario)
			x.waitRun(p, "a round of the knobs arm", 60*time.Second, x.inRound)
			for _, pid := range x.rigProcs(cmd) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			code := p.wait(60 * time.Second)
			out := p.out.String()
			x.observe("exit %d", code)
			if code != 1 || !strings.Contains(out, word) {
				x.failf("want exit 1 naming the %s, got %d:\n%s", word, code, lastLines(out, 8))
			}
			x.clean("after exit")
		},
	}
}

// namespaces and whose arm sets 2 channels on the responder.
func nicLab(x *h) (*netlab.Topology, string) {
	x.realRoot()
	x.t.Setenv(netlab.EnvDir, x.labs+"-byhand")
	topo := netlabtest.New(x.t, netlab.Options{RxQueues: 4})
	x.netnsBefore = append(x.netnsBefore, topo.Namespaces()...) // the test's, removed by its cleanup
	return topo, fmt.Sprintf(`name: chaos
hosts:
  snd: {via: ip netns exec %s, roles: [sender], iface: %s}
  rsp: {via: ip netns exec %s, roles: [responder], iface: %s}
  cap: {via: ip netns exec %s, roles: [capture], iface: %s}
traffic: {group: 239.88.0.2:7801, interval: 1ms, count: 2000}
timestamps: software
rounds: 1
arms:
  - name: ch2
    responder: {cpu: 1}
    nic: {channels: 2}
`, topo.Sender.Netns, topo.Sender.Interface, topo.Responder.Netns, topo.Responder.Interface, topo.Capture.Netns, topo.Capture.Interface)
}

// channels reads the responder veth's RX channel count.
func channels(x *h, topo *netlab.Topology) int {
	out, err := exec.Command("ip", "netns", "exec", topo.Responder.Netns, x.rig, "nicctl", "show", topo.Responder.Interface, "--json").Output()
	if err != nil {
		return -1
	}
	var in struct {
		Channels struct {
			Rx, Combined *int
		} `json:"channels"`
	}
	if json.Unmarshal(out, &in) != nil || in.Channels.Rx == nil {
		return -1
	}
	return *in.Channels.Rx
}

// TestChaos runs the matrix and prints its table. Every row must hold.
func TestChaos(t *testing.T) {
	if os.Getenv("RIG_CHAOS") != "1" {
		t.Skip("the fault matrix runs with RIG_CHAOS=1 (make chaos)")
	}
	// Asked for and not possible is a failure, not a skip: a skipped
	// matrix would pass CI having proved nothing.
	if testing.Short() || os.Geteuid() != 0 {
		t.Fatal("the fault matrix needs root (namespaces, mounts) and no -short")
	}
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatal("the fault matrix needs stress-ng (make deps installs it)")
	}
	type result struct {
		row      row
		observed string
		held     bool
		took     time.Duration
	}
	var results []result
	for _, r := range matrix {
		var x *h
		start := time.Now()
		ok := t.Run(r.fault, func(t *testing.T) {
			x = newH(t)
			r.run(x)
		})
		if x == nil {
			continue // not selected by -run
		}
		results = append(results, result{r, strings.Join(x.obs, "; "), ok, time.Since(start)})
	}
	held := 0
	var b strings.Builder
	fmt.Fprintln(&b, "| fault | expected | observed | held |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, r := range results {
		h := "no"
		if r.held {
			h, held = "yes", held+1
		}
		fmt.Fprintf(&b, "| %s | %s | %s (%.0f s) | %s |\n", r.row.fault, r.row.expected, strings.ReplaceAll(r.observed, "\n", " "), r.took.Seconds(), h)
	}
	fmt.Printf("\nrig chaos matrix: %d of %d rows held\n\n%s\n", held, len(results), b.String())
	if path := os.Getenv("RIG_CHAOS_TABLE"); path != "" {
		os.WriteFile(path, []byte(b.String()), 0o644)
	}
}
