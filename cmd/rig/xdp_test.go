package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// reflectorLab is a lab whose responder's switch port is ready for the
// reflector in driver mode (netlab's PassXDP), as rig run readies it.
func reflectorLab(t *testing.T) *netlab.Topology {
	topo := netlabtest.New(t, netlab.Options{})
	c, err := topo.PassXDP(netlab.Responder)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return topo
}

// udpIn is how many datagrams the responder's namespace delivered to a
// socket or found no socket for (Udp InDatagrams + NoPorts).
func udpIn(t *testing.T, topo *netlab.Topology) int {
	var n int
	err := topo.Do(netlab.Responder, func() error {
		for _, s := range []string{"InDatagrams", "NoPorts"} {
			v, err := netlabtest.UDPStat(unix.Gettid(), s) // this thread is in the namespace
			if err != nil {
				return err
			}
			n += v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// captureRound runs rig capture, rig respond (with respond's flags) and
// rig send for count requests on topo, and returns the round's joined
// files, the responder's log and how many datagrams reached the
// responder's stack during the round.
func captureRound(t *testing.T, topo *netlab.Topology, count int, respond ...string) (*samples.Joined, string, int) {
	t.Helper()
	rig := testbin.Rig(t)
	dir := t.TempDir()
	const runID = "00000000000f100e"
	start := func(r netlab.Role, args ...string) (*exec.Cmd, *lockedBuffer) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", topo.Netns(r), rig}, args...)...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, out
	}
	capt, capOut := start(netlab.Capture, "capture", "--iface", topo.Capture.Interface, "--timestamps", "software", "--duration", "60s",
		"--run-id", runID, "--out", filepath.Join(dir, "capture.samples"))
	waitFor(t, capOut, ": ready")
	rsp, rspOut := start(netlab.Responder, append([]string{"respond", "--iface", topo.Responder.Interface, "--timestamps", "software",
		"--count", fmt.Sprint(count), "--run-id", runID, "--out", filepath.Join(dir, "responder.samples")}, respond...)...)
	waitFor(t, rspOut, ": ready")
	in := udpIn(t, topo)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", topo.Netns(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--count", fmt.Sprint(count), "--timestamps", "software", "--run-id", runID, "--out", filepath.Join(dir, "sender.samples")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("sent %d  received %d  lost 0", count, count)) {
		t.Fatalf("rig send: %v\n%s\nrig respond %v:\n%s", err, out, respond, rspOut)
	}
	if err := rsp.Wait(); err != nil {
		t.Fatalf("rig respond %v: %v\n%s", respond, err, rspOut)
	}
	in = udpIn(t, topo) - in
	for n, deadline := 0, time.Now().Add(30*time.Second); n < 2*count; time.Sleep(5 * time.Millisecond) {
		var err error
		if n, err = netlabtest.RxPackets(capt.Process.Pid, topo.Capture.Interface); err != nil || time.Now().After(deadline) {
			t.Fatalf("capture port: %d of %d copies (%v)\n%s", n, 2*count, err, capOut)
		}
	}
	_ = capt.Process.Signal(os.Interrupt) // ip netns exec exec'd rig: this is rig
	if err := capt.Wait(); err != nil {
		t.Fatalf("rig capture: %v\n%s", err, capOut)
	}
	j, err := samples.JoinDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return j, rspOut.String(), in
}

// captureTurnarounds are the capture's reply − request of every request
// answered by responder id, sorted; it fails t unless all count are.
func captureTurnarounds(t *testing.T, j *samples.Joined, id uint32, count int) []time.Duration {
	t.Helper()
	var d []time.Duration
	for _, r := range j.Records {
		if r.Responder == id && r.T[samples.CapReqSW] != 0 && r.T[samples.CapRepSW] != 0 && r.T[samples.RxSW] != 0 {
			d = append(d, time.Duration(r.T[samples.CapRepSW]-r.T[samples.CapReqSW]))
		}
	}
	if len(d) != count {
		t.Fatalf("%d of %d requests answered by responder %d with both capture stamps and the sender's", len(d), count, id)
	}
	slices.Sort(d)
	return d
}

// TestReflectorEngine: rig respond --engine xdp answers every request of
// rig send in the driver: the replies reach the sender and the capture, its counters are the requests sent, no datagram reached
// the responder's stack (the Go engine's round shows the check sees them),
// and its sample file holds counts, no stamps. The capture's turnaround of
// the floor is below the Go engine's on the same lab.
func TestReflectorEngine(t *testing.T) {
	topo := reflectorLab(t)
	const n = 500
	j, log, in := captureRound(t, topo, n, "--engine", "xdp")
	f := j.Headers[samples.RoleResponder]
	c := j.Counters[samples.RoleResponder]
	if c.Received != n || c.Sent != n || c.Foreign != 0 || f.Settings["engine"] != "xdp" || f.Settings["attach"] != "driver" || len(f.Clocks) != 0 || f.ResponderID != 0 {
		t.Errorf("reflector file: counters %+v, settings %v, clocks %v\n%s", c, f.Settings, f.Clocks, log)
	}
	for _, r := range j.Records {
		if r.T[samples.ReqRxSW] != 0 || r.T[samples.ReqRxUser] != 0 || r.T[samples.RepTxUser] != 0 {
			t.Fatalf("a responder stamp in the reflector's round: %+v", r)
		}
	}
	if in != 0 {
		t.Errorf("%d datagrams reached the responder's stack: the program did not answer them all", in)
	}
	if !strings.Contains(log, "program attached to "+topo.Responder.Interface+" in driver mode") {
		t.Errorf("log:\n%s", log)
	}
	floor := captureTurnarounds(t, j, 0, n)
	rep, err := analysis.Analyze(&analysis.Input{Run: "floor", Warmup: 2, Arms: []analysis.InputArm{{Name: "xdp",
		Rounds: []analysis.InputRound{{Load: func() (*samples.Joined, error) { return j, nil }}}}}}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.Arm("xdp"); a.Metrics[analysis.Turnaround] == nil || a.Metrics[analysis.Turnaround].Source != "reflector floor: capture sw" || a.Metrics[analysis.UserProcessing] != nil {
		t.Errorf("analysis of the reflector's round: turnaround %+v, user processing %+v", a.Metrics[analysis.Turnaround], a.Metrics[analysis.UserProcessing])
	}
	j, _, in = captureRound(t, topo, n)
	if in != n {
		t.Errorf("the Go engine's round: %d datagrams reached the stack, want %d", in, n)
	}
	goT := captureTurnarounds(t, j, 0, n)
	t.Logf("capture turnaround (software stamps on the mirror port, %d requests): xdp floor median %v p99 %v; go engine median %v p99 %v",
		n, floor[n/2], floor[n*99/100], goT[n/2], goT[n*99/100])
	if floor[n/2] >= goT[n/2] {
		t.Errorf("the floor's median turnaround %v is not below the Go engine's %v", floor[n/2], goT[n/2])
	}
}

// xdpAttached reports whether topo's responder veth has an XDP program.
func xdpAttached(t *testing.T, topo *netlab.Topology) bool {
	out, err := exec.Command("ip", "-n", topo.Netns(netlab.Responder), "link", "show", "dev", topo.Responder.Interface).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link: %v\n%s", err, out)
	}
	return strings.Contains(string(out), "prog/xdp")
}

// reflectorsLoaded is how many reflector programs the kernel holds.
func reflectorsLoaded(t *testing.T) int {
	n := 0
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return n
		} else if err != nil {
			t.Fatal(err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		if info, err := p.Info(); err == nil && info.Name == "rig_reflect" {
			n++
		}
		p.Close()
	}
}

// TestReflectorDetach: the program goes with rig respond, however it
// ends — SIGTERM (its file says interrupted) or SIGKILL (the BPF link is
// the process's file: nothing is left attached for rig restore to undo),
// at XDP and at tc ingress.
func TestReflectorDetach(t *testing.T) {
	topo := reflectorLab(t)
	rig := testbin.Rig(t)
	out := filepath.Join(t.TempDir(), "responder.samples")
	for _, c := range []struct {
		engine string
		sig    syscall.Signal
	}{{"xdp-generic", syscall.SIGTERM}, {"xdp", syscall.SIGKILL}, {"tc", syscall.SIGKILL}} {
		sig := c.sig
		cmd := exec.Command("ip", "netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
			"--run-id", "1", "--engine", c.engine, "--out", out)
		log := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitFor(t, log, ": ready")
		if xdpAttached(t, topo) != (c.engine != "tc") || reflectorsLoaded(t) != 1 {
			t.Fatalf("%s: XDP attached %v, %d reflectors loaded while rig respond runs\n%s", c.engine, xdpAttached(t, topo), reflectorsLoaded(t), log)
		}
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		if xdpAttached(t, topo) {
			t.Errorf("%s after %v: an XDP program is still attached to %s", c.engine, sig, topo.Responder.Interface)
		}
		// The kernel frees a released program after an RCU grace period.
		for deadline := time.Now().Add(10 * time.Second); reflectorsLoaded(t) != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s after %v: the program is still loaded", c.engine, sig)
			}
		}
		if sig == syscall.SIGTERM {
			f, ferr := samples.ReadFile(out)
			if err != nil || ferr != nil || !strings.HasPrefix(f.Footer.Stopped, samples.StoppedInterrupted) || f.Header.Settings["attach"] != "generic" {
				t.Errorf("after SIGTERM: %v, file %v\n%s", err, ferr, log)
			}
		}
	}
}

// TestReflectorRefusals: what the reflector cannot do is refused before
// anything is attached, saying why and what to do instead: a loop's
// options, an interface without native XDP (a bridge device in the lab's
// namespace), and a process without CAP_BPF.
func TestReflectorRefusals(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	rig := testbin.Rig(t)
	respond := func(user bool, args ...string) (int, string) {
		cmdline := []string{"netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--run-id", "1"}
		if user { // nobody, without capabilities, in the lab's namespace
			cmdline = slices.Insert(cmdline, 3, "setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups")
		}
		cmd := exec.Command("ip", append(cmdline, args...)...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	for _, c := range [][]string{{"link", "add", "xdpless", "type", "bridge"}, {"addr", "add", "10.9.9.9/24", "dev", "xdpless"}, {"link", "set", "xdpless", "up"}} {
		if out, err := exec.Command("ip", append([]string{"-n", topo.Netns(netlab.Responder)}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", c, err, out)
		}
	}
	for _, c := range []struct {
		user bool
		args []string
		code int
		want []string
	}{
		{false, []string{"--iface", topo.Responder.Interface, "--engine", "xdp", "--cpu", "1"}, 2, []string{"--cpu 1 with --engine xdp: the program has no thread to pin"}},
		{false, []string{"--iface", topo.Responder.Interface, "--engine", "xdp", "--poll", "busy"}, 2, []string{"the program does not wait"}},
		{false, []string{"--iface", "xdpless", "--engine", "xdp"}, 2, []string{"xdpless refuses XDP in driver mode", "--engine xdp-generic"}},
		{true, []string{"--iface", topo.Responder.Interface, "--engine", "xdp"}, 2, []string{"CAP_BPF and CAP_NET_ADMIN"}},
	} {
		code, out := respond(c.user, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q\n%s", c.args, w, out)
			}
		}
		if xdpAttached(t, topo) {
			t.Fatalf("%v: left a program attached", c.args)
		}
	}
	// Replies come from one fixed address: an interface with two is
	// refused for multicast requests, and --listen picks one.
	if out, err := exec.Command("ip", "-n", topo.Netns(netlab.Responder), "addr", "add", "10.9.8.8/24", "dev", topo.Responder.Interface).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v\n%s", err, out)
	}
	if code, out := respond(false, "--iface", topo.Responder.Interface, "--engine", "tc"); code != 2 || !strings.Contains(out, "has 2 IPv4 addresses") || !strings.Contains(out, "--listen") {
		t.Errorf("two addresses: exit %d\n%s", code, out)
	}
	if code, out := respond(false, "--iface", topo.Responder.Interface, "--engine", "tc", "--listen", "10.9.8.8:9000", "--max-duration", "1ms"); !strings.Contains(out, "ready on") {
		t.Errorf("--listen with two addresses: exit %d\n%s", code, out)
	}
}

// TestReflectorTC: rig respond --engine tc answers every request at tc
// ingress, sending the reply out of the same interface: no NAPI settings
// needed on a veth, nothing reaches the stack's UDP.
func TestReflectorTC(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	const n = 300
	j, log, in := captureRound(t, topo, n, "--engine", "tc")
	c := j.Counters[samples.RoleResponder]
	if s := j.Headers[samples.RoleResponder].Settings; c.Received != n || c.Sent != n || s["engine"] != "tc" || s["attach"] != "tc" || in != 0 {
		t.Errorf("counters %+v, settings %v, %d datagrams reached the stack\n%s", c, s, in, log)
	}
	d := captureTurnarounds(t, j, 0, n)
	t.Logf("capture turnaround of the tc reflector (software stamps, %d requests): median %v p99 %v", n, d[n/2], d[n*99/100])
}

// TestRunFloorKilled: the pass program rig run attaches to the emulated
// responder's switch port for a floor arm is rig run's: killed with
// SIGKILL in the middle of that arm's round, it leaves no program on the
// port (the lab itself is then stale, for rig restore or the next run).
func TestRunFloorKilled(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "floor.yaml")
	os.WriteFile(scen, []byte(`name: floorkill
emulate: netns
traffic: {group: 239.44.0.9:7409, interval: 1ms, count: 60000}
timestamps: software
rounds: 1
arms:
  - name: floor
    responder: {engine: xdp}
`), 0o644)
	cmd := exec.Command(testbin.Rig(t), "run", "-v", "--results", filepath.Join(dir, "results"), scen)
	cmd.Env = append(os.Environ(), journal.EnvDir+"="+filepath.Join(dir, "state"))
	log := &lockedBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var port, ns string
	for deadline := time.Now().Add(60 * time.Second); port == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rig run never readied the switch port:\n%s", log)
		}
		_, line, ok := strings.Cut(log.String(), "arm floor: XDP pass program on ")
		if f := strings.Fields(line); ok && len(f) > 2 {
			port, ns = f[0], f[2]
		}
	}
	t.Cleanup(func() { netlab.Down(strings.TrimSuffix(ns, "-sw")) })
	xdpOnPort := func() bool {
		out, err := exec.Command("ip", "-n", ns, "link", "show", "dev", port).CombinedOutput()
		if err != nil {
			t.Fatalf("ip link: %v\n%s", err, out)
		}
		return strings.Contains(string(out), "prog/xdp")
	}
	if !xdpOnPort() {
		t.Fatalf("%s in %s has no XDP program while the floor arm runs", port, ns)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if xdpOnPort() {
		t.Errorf("%s in %s still has an XDP program after rig run was killed", port, ns)
	}
}
