package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestAgentByeExitsZero: an agent told bye exits 0, every time. The
// signal goroutine used to race main's exit (it saw the context end when
// runAgent returned and called os.Exit(1)), so `rig run -v` logged
// "closing hosts: host sender: agent: exit status 1" on clean runs.
func TestAgentByeExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	rig := testbin.Rig(t)
	tmp := t.TempDir()
	// The agents run side by side, each its own process; a race-built one
	// keeps the race runtime's default second of grace at exit (which
	// testbin.Rig turns off), when the signal goroutine used to strike.
	cmds := make([]*exec.Cmd, 30)
	stderr := make([]bytes.Buffer, len(cmds))
	for i := range cmds {
		cmds[i] = exec.Command(rig, "agent", "--stdio")
		cmds[i].Env = append(os.Environ(), "TMPDIR="+tmp, journal.EnvDir+"="+filepath.Join(tmp, "state"), testbin.EnvRace+"=")
		cmds[i].Stdin = strings.NewReader(`{"id":1,"op":"bye"}` + "\n")
		cmds[i].Stderr = &stderr[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("agent %d after bye: %v\n%s", i, err, stderr[i].String())
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("agents left %d entries in TMPDIR", len(ents))
	}
}

// TestNicctlForRefusesNonPositive: a hold of zero or less is bad input.
func TestNicctlForRefusesNonPositive(t *testing.T) {
	t.Setenv(journal.EnvDir, t.TempDir())
	for _, d := range []string{"-5s", "0s", "0"} {
		if code := run([]string{"nicctl", "set", "lo", "--channels", "1", "--for", d}); code != 2 {
			t.Errorf("nicctl set --for %s: exit %d, want 2", d, code)
		}
	}
	if entries, _ := os.ReadDir(os.Getenv(journal.EnvDir)); len(entries) != 0 {
		t.Errorf("a refused nicctl set touched the state directory: %d entries", len(entries))
	}
}

// TestPrivilegeErrors: without privilege every command that needs it
// exits 2 with one message that names the capability or says to run as
// root.
func TestPrivilegeErrors(t *testing.T) {
	testbin.Integration(t)
	rig := testbin.Rig(t)
	os.Chmod(filepath.Dir(rig), 0o755)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--iface", "lo", "--run-id", "1", "--duration", "1ms"}, "CAP_NET_RAW"},
		{[]string{"lab", "up", "--name", netlab.UniqueName("priv")}, "CAP_NET_ADMIN"},
		{[]string{"nicctl", "set", "lo", "--channels", "1", "--for", "1s"}, "as root"},
		{[]string{"restore"}, "as root"},
		{[]string{"run", "../../scenarios/demo.yaml"}, "as root"},
	} {
		code, stderr := runRig(t, nobody, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code != 2 || !strings.Contains(last, c.want) {
			t.Errorf("rig %s as nobody: exit %d, want 2 with %q:\n%s", strings.Join(c.args, " "), code, c.want, stderr)
		}
	}
}

// nicLabScenario returns a scenario whose hosts are the namespaces of
// topo, reached with `ip netns exec`; its second arm sets 2 channels on
// the responder's veth.
func nicLabScenario(t *testing.T, topo *netlab.Topology) string {
	yaml := fmt.Sprintf(`name: netns
hosts:
  snd: {via: ip netns exec %s, roles: [sender], iface: %s}
  rsp: {via: ip netns exec %s, roles: [responder], iface: %s}
  cap: {via: ip netns exec %s, roles: [capture], iface: %s}
traffic: {group: 239.91.0.1:7910, interval: 1ms, count: 300}
timestamps: software
rounds: 1
arms:
  - name: base
    responder: {cpu: 0}
  - name: ch2
    responder: {cpu: 0}
    nic: {channels: 2}
`, topo.Sender.Netns, topo.Sender.Interface, topo.Responder.Netns, topo.Responder.Interface, topo.Capture.Netns, topo.Capture.Interface)
	path := filepath.Join(t.TempDir(), "netns.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rxChannels reads the RX channel count of a lab's responder veth.
func rxChannels(t *testing.T, rig string, topo *netlab.Topology) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", topo.Responder.Netns, rig, "nicctl", "show", topo.Responder.Interface, "--json").Output()
	var in struct {
		Channels struct{ Rx *int } `json:"channels"`
	}
	if err != nil || json.Unmarshal(out, &in) != nil || in.Channels.Rx == nil {
		t.Fatalf("nicctl show %s: %v\n%s", topo.Responder.Interface, err, out)
	}
	return *in.Channels.Rx
}

// TestRunNetnsHosts: hosts reached with `ip netns exec NS` are validated
// with the facts of their agent, which runs in the namespace: the dry run
// accepts their interfaces, and a real run applies a NIC knob there, puts
// it back and exits cleanly (no "closing hosts" complaint with -v).
func TestRunNetnsHosts(t *testing.T) {
	testbin.Integration(t)
	rig := testbin.Rig(t)
	topo := netlabtest.New(t, netlab.Options{RxQueues: 4})
	path := nicLabScenario(t, topo)
	state := t.TempDir()
	env := append(os.Environ(), journal.EnvDir+"="+state)

	dry := exec.Command(rig, "run", "--dry-run", path)
	dry.Env = env
	out, err := dry.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("ch2")) || bytes.Contains(out, []byte("not checked")) {
		t.Fatalf("dry run of netns hosts: %v\n%s", err, out)
	}

	results := t.TempDir()
	cmd := exec.Command(rig, "run", "-v", "--results", results, path, "--format", "json")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run with netns hosts: %v\n%s", err, stderr.String())
	}
	// --format json: the tables after the run are report.json's form.
	var rep analysis.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Format != "rig-report" || len(rep.Arms) != 2 {
		t.Errorf("rig run --format json: %v, format %q, %d arms\n%.300s", err, rep.Format, len(rep.Arms), stdout.String())
	}
	if strings.Contains(stderr.String(), "closing hosts") {
		t.Errorf("a clean run complained while closing its hosts:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "channels") {
		t.Errorf("the ch2 arm's channels change is not in the log:\n%s", stderr.String())
	}
	runs, _ := filepath.Glob(filepath.Join(results, "netns-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v", runs)
	}
	for _, arm := range []string{"base", "ch2"} {
		j, err := samples.JoinDir(rundir.RoundDir(runs[0], arm, 0), 0)
		if err != nil || j.Counters[samples.RoleResponder].Received != 300 {
			t.Errorf("arm %s: %v", arm, err)
		}
	}
	if c := rxChannels(t, rig, topo); c != 4 {
		t.Errorf("responder veth has %d RX channels after the run, want 4 back", c)
	}
	if err := journal.CheckPending(state); err != nil {
		t.Error(err)
	}
}

// TestRestoreRefusesRecreatedNamespace: a change journaled in a network
// namespace that was then deleted is not written to a device of the same
// name in a newer namespace — one that got the old namespace's inode,
// which the kernel reuses and which is all the journal used to record.
// Restore refuses, says why and how to drop the entry, and leaves it open.
func TestRestoreRefusesRecreatedNamespace(t *testing.T) {
	testbin.Integration(t)
	rig := testbin.Rig(t)
	state := t.TempDir()
	env := append(os.Environ(), journal.EnvDir+"="+state)
	prefix := netlab.UniqueName("ri")
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	// newNS creates a namespace with a 4-queue veth "rigv0" in it.
	newNS := func(name string) uint64 {
		t.Helper()
		ip("netns", "add", name)
		made = append(made, name)
		ip("-n", name, "link", "add", "rigv0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth", "peer", "name", "rigv1", "numtxqueues", "4", "numrxqueues", "4")
		st, err := os.Stat(filepath.Join("/run/netns", name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	rigIn := func(ns string, args ...string) ([]byte, error) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns, rig}, args...)...)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	first := prefix + "-a"
	oldIno := newNS(first)
	if out, err := rigIn(first, "nicctl", "set", "rigv0", "--channels", "2", "--keep"); err != nil {
		t.Fatalf("nicctl set --keep: %v\n%s", err, out)
	}
	ip("netns", "del", first)
	made = made[:0]
	// The kernel frees the inode once the namespace is cleaned up and gives
	// out the lowest free one: new namespaces reach the old number soon.
	var fresh string
	for i := 0; i < 100 && fresh == ""; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if newNS(name) == oldIno {
			fresh = name
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fresh == "" {
		fresh = made[len(made)-1]
		t.Logf("inode %d not reused in 100 namespaces: checking a namespace with another inode", oldIno)
	} else {
		t.Logf("namespace %s got the old namespace's inode %d", fresh, oldIno)
	}
	// The new device is not at its default either: a restore that wrote
	// the old previous value (4) to it would show.
	ip("-n", fresh, "link", "set", "rigv0", "up")
	if out, err := exec.Command("ip", "netns", "exec", fresh, "ethtool", "-L", "rigv0", "rx", "3", "tx", "3").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -L: %v\n%s", err, out)
	}
	out, err := rigIn(fresh, "restore")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !bytes.Contains(out, []byte("rig restore --discard")) ||
		!(bytes.Contains(out, []byte("another network namespace")) || bytes.Contains(out, []byte("not the same device"))) {
		t.Errorf("restore into a newer namespace: %v, want a refusal naming the difference and the fix:\n%s", err, out)
	}
	chOut, _ := exec.Command("ip", "netns", "exec", fresh, "ethtool", "-l", "rigv0").Output()
	if cur := bytes.SplitN(chOut, []byte("Current hardware settings:"), 2); len(cur) != 2 || !bytes.Contains(cur[1], []byte("RX:\t\t3")) {
		t.Errorf("restore wrote to the newer namespace's device:\n%s", chOut)
	}
	if err := journal.CheckPending(state); err == nil {
		t.Error("the refused entry was closed")
	}
	if out, err := rigIn(fresh, "restore", "--discard"); err != nil {
		t.Errorf("restore --discard: %v\n%s", err, out)
	}
}

// TestProbeMaxDuration: a probe nobody stops ends by itself at
// --max-duration, writes its file and says why it stopped (exit 1).
func TestProbeMaxDuration(t *testing.T) {
	testbin.Integration(t)
	out := filepath.Join(t.TempDir(), "r.samples")
	start := time.Now()
	code, stderr := runRig(t, nil, "respond", "--iface", "lo", "--group", "239.92.0.1:7920", "--run-id", "1", "--poll", "busy", "--max-duration", "1s", "--out", out)
	took := time.Since(start)
	if code != 1 || !strings.Contains(stderr, "--max-duration 1s") || took > 10*time.Second {
		t.Errorf("respond --max-duration 1s: exit %d after %v, want 1 within a few seconds:\n%s", code, took, stderr)
	}
	if _, err := samples.ReadFile(out); err != nil {
		t.Errorf("sample file of a probe stopped at --max-duration: %v", err)
	}
	if code, stderr := runRig(t, nil, "send", "--iface", "lo", "--max-duration", "-1s"); code != 2 {
		t.Errorf("--max-duration -1s: exit %d, want 2:\n%s", code, stderr)
	}
}
