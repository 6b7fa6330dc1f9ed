package main

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestSenderStall: an 800 ms SIGSTOP of `rig send` with a 500 ms reply
// timeout. The requests due during the stall leave late and are answered
// at once, and the replies in flight wait in the socket: none of them is
// lost or late, and lateness keeps every request, so its worst is the
// stall (the reply timeout used to be measured from the due time to the
// program's read, which called hundreds of answered requests lost and
// dropped them from lateness too).
func TestSenderStall(t *testing.T) {
	testbin.Integration(t)
	topo := netlabtest.New(t, netlab.Options{})
	rig := testbin.Rig(t)
	dir := t.TempDir()
	const run, group = "00000000000000c7", "239.8.9.3:9420"
	command := func(argv ...string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) }
	rsp := command(append(topo.Exec(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
		"--group", group, "--run-id", run, "--capacity", "4000", "--out", filepath.Join(dir, "responder.samples"))...)
	rspErr, err := rsp.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := rsp.Start(); err != nil {
		t.Fatal(err)
	}
	defer rsp.Process.Kill()
	lines := bufio.NewScanner(rspErr)
	for lines.Scan() && !strings.Contains(lines.Text(), "ready") {
	}
	go io.Copy(io.Discard, rspErr)

	snd := command(append(topo.Exec(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--group", group, "--run-id", run, "--count", "3000", "--interval", "1ms", "--reply-timeout", "500ms",
		"--progress-lines", "--out", filepath.Join(dir, "sender.samples"))...)
	var out bytes.Buffer
	sndErr := &lockedBuffer{}
	snd.Stdout, snd.Stderr = &out, sndErr
	if err := snd.Start(); err != nil {
		t.Fatal(err)
	}
	defer snd.Process.Kill()
	// Mid-round: its first progress line (a second in, of three) counts
	// replies.
	answered := regexp.MustCompile(`(?m)^progress [0-9]+ [1-9]`)
	for deadline := time.Now().Add(30 * time.Second); !answered.MatchString(sndErr.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rig send: no progress line with replies within 30 s:\n%s", sndErr)
		}
	}
	if err := snd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond) // the stall under test
	if err := snd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := snd.Wait(); err != nil {
		t.Fatalf("rig send: %v\n%s", err, sndErr.String())
	}
	rsp.Process.Signal(syscall.SIGINT)
	if err := rsp.Wait(); err != nil {
		t.Fatalf("rig respond: %v", err)
	}
	if !strings.Contains(sndErr.String(), "run id "+run) {
		t.Errorf("rig send does not print its run id:\n%s", sndErr.String())
	}

	j, err := samples.JoinDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := j.Counters[samples.RoleSender]
	if c.Sent != 3000 || c.Lost != 0 || c.Late != 0 {
		t.Errorf("sender counters %+v: every request was answered within ms of its send; none is lost or late\n%s", c, out.String())
	}
	in := &analysis.Input{Run: "stall", Warmup: 2, Arms: []analysis.InputArm{{Name: "a",
		Rounds: []analysis.InputRound{{K: 0, Load: func() (*samples.Joined, error) { return j, nil }}}}}}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Arm("a")
	ln, rd := a.Metrics[analysis.Lateness].Rounds[0], a.Metrics[analysis.RTTFromDue].Rounds[0]
	if ln.N != 2998 || ln.Lost != 0 || ln.Late != 0 || *ln.WorstNS < int64(750*time.Millisecond) {
		t.Errorf("lateness %+v worst %v: want every request and the ~800 ms stall", ln.Counts, time.Duration(*ln.WorstNS))
	}
	if rd.N != 2998 || *rd.WorstNS < int64(750*time.Millisecond) {
		t.Errorf("rtt_from_due %+v worst %v: want every reply and the stall", rd.Counts, time.Duration(*rd.WorstNS))
	}
	t.Logf("lateness worst %v, rtt_from_due worst %v, rtt worst %v",
		time.Duration(*ln.WorstNS), time.Duration(*rd.WorstNS), time.Duration(*a.Metrics[analysis.RTT].Rounds[0].WorstNS))
}
