package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestUnicastFlagErrors: --group and --to/--listen exclude each other,
// and a unicast destination must be an IPv4 unicast address:port (of the
// interface, for --listen); each is a usage error (exit 2) saying why.
func TestUnicastFlagErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"send", "--iface", "lo", "--to", "10.0.0.2:9000", "--group", "239.1.1.1:9000"}, []string{"--group and --to exclude each other", "multicast", "unicast"}},
		{[]string{"respond", "--iface", "lo", "--listen", "127.0.0.1:9000", "--group", "239.1.1.1:9000"}, []string{"--group and --listen exclude each other"}},
		{[]string{"capture", "--iface", "lo", "--to", "127.0.0.1:9000", "--group", "239.1.1.1:9000"}, []string{"--group and --to exclude each other"}},
		{[]string{"send", "--iface", "lo", "--to", "239.1.1.1:9000"}, []string{"--to", "is a multicast address", "--group"}},
		{[]string{"send", "--iface", "lo", "--to", "10.0.0.2"}, []string{"--to \"10.0.0.2\"", "address:port such as 10.0.0.2:9000"}},
		{[]string{"respond", "--iface", "lo", "--listen", "0.0.0.0:9000"}, []string{"--listen", "not a host's address"}},
		{[]string{"respond", "--iface", "lo", "--listen", "10.255.0.9:9000", "--run-id", "0123456789abcdef"}, []string{"10.255.0.9 is not an address of lo", "127.0.0.1"}},
		{[]string{"respond", "--iface", "lo", "--to", "127.0.0.1:9000"}, []string{"-to"}},
	} {
		code, stderr := runRig(t, nil, tc.args...)
		if code != 2 {
			t.Errorf("rig %v: exit %d, want 2\n%s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("rig %v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
}

// TestUnicastByHand runs the hand-run commands of docs/aws.md on the
// emulated lab with an AWS-style mirror (rig lab up --mirror vxlan):
// rig respond --listen, rig capture --to --vxlan --vni, rig send --to.
// Every request is answered, the capture pairs every one from the VXLAN
// copies, and the summary and the sample headers say where the requests
// went. A second capture told another mirror session's VNI takes none.
func TestUnicastByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	topo := netlabtest.New(t, netlab.Options{MirrorVXLAN: true})
	if err := topo.Check(); err != nil {
		t.Fatalf("vxlan lab: %v", err)
	}
	rig := testbin.Rig(t)
	dir := t.TempDir()
	to := netip.AddrPortFrom(topo.Responder.Addr, 9400).String()
	const count, runID = 300, "00000000000a11ce"
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
	rsp, rspOut := start(netlab.Responder, "respond", "--iface", topo.Responder.Interface, "--listen", to,
		"--timestamps", "software", "--count", fmt.Sprint(count), "--run-id", runID, "--out", filepath.Join(dir, "responder.samples"))
	capt, capOut := start(netlab.Capture, "capture", "--iface", topo.Capture.Interface, "--to", to, "--vxlan", "--vni", fmt.Sprint(netlab.MirrorVNI),
		"--timestamps", "software", "--duration", "60s", "--run-id", runID, "--out", filepath.Join(dir, "capture.samples"))
	other := filepath.Join(t.TempDir(), "capture.samples")
	capt2, cap2Out := start(netlab.Capture, "capture", "--iface", topo.Capture.Interface, "--to", to, "--vxlan", "--vni", fmt.Sprint(netlab.MirrorVNI+1),
		"--timestamps", "software", "--duration", "60s", "--run-id", runID, "--out", other)
	waitFor(t, rspOut, ": ready")
	waitFor(t, capOut, ": ready")
	waitFor(t, cap2Out, ": ready")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	snd := exec.CommandContext(ctx, "ip", "netns", "exec", topo.Netns(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--to", to, "--count", fmt.Sprint(count), "--timestamps", "software", "--run-id", runID, "--out", filepath.Join(dir, "sender.samples"))
	out, err := snd.CombinedOutput()
	if err != nil {
		t.Fatalf("rig send: %v\n%s", err, out)
	}
	for _, w := range []string{fmt.Sprintf("sent %d  received %d  lost 0", count, count), "requests: unicast to " + to} {
		if !strings.Contains(string(out), w) {
			t.Errorf("rig send output lacks %q:\n%s", w, out)
		}
	}
	if err := rsp.Wait(); err != nil {
		t.Errorf("rig respond: %v\n%s", err, rspOut)
	}
	// Every request's and reply's copy has reached the capture port (it
	// reads what is queued when it stops).
	for n, deadline := 0, time.Now().Add(30*time.Second); n < 2*count; time.Sleep(5 * time.Millisecond) {
		var err error
		if n, err = netlabtest.RxPackets(capt.Process.Pid, topo.Capture.Interface); err != nil || time.Now().After(deadline) {
			t.Fatalf("capture port: %d of %d copies (%v)\n%s", n, 2*count, err, capOut)
		}
	}
	_ = capt.Process.Signal(os.Interrupt) // ip netns exec exec'd rig: this is rig
	if err := capt.Wait(); err != nil {
		t.Errorf("rig capture: %v\n%s", err, capOut)
	}
	_ = capt2.Process.Signal(os.Interrupt)
	if err := capt2.Wait(); err != nil {
		t.Errorf("rig capture --vni %d: %v\n%s", netlab.MirrorVNI+1, err, cap2Out)
	}
	if f, err := samples.ReadFile(other); err != nil || f.Footer == nil || f.Footer.Counters.Received != 0 ||
		!strings.Contains(fmt.Sprint(f.Header.Settings["mirror"]), fmt.Sprintf("VNI %d", netlab.MirrorVNI+1)) {
		t.Errorf("the capture of another VNI: %v %+v", err, f)
	}
	j, err := samples.JoinDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	paired := 0
	for _, r := range j.Records {
		if r.T[samples.CapReqSW] != 0 && r.T[samples.CapRepSW] != 0 {
			paired++
		}
	}
	if paired != count || len(j.Roles) != 3 {
		t.Errorf("capture paired %d of %d requests from the VXLAN copies (roles %v)\n%s", paired, count, j.Roles, capOut)
	}
	if j.Header.Requests() != "unicast to "+to {
		t.Errorf("joined header: requests %q", j.Header.Requests())
	}
	if !strings.Contains(capOut.String(), "ready on "+topo.Capture.Interface+" (VXLAN mirror copies)") {
		t.Errorf("capture output:\n%s", capOut)
	}
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until out holds s (a process's "ready" line).
func waitFor(t *testing.T, out *lockedBuffer, s string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(out.String(), s) {
			return
		}
	}
	t.Fatalf("no %q within 15 s:\n%s", s, out)
}
