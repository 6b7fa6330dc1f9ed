package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

// TestSendFormatJSON runs rig respond and rig send --format json on the
// emulated lab: stdout is one JSON object a script decodes (the log lines
// stay on stderr), every request answered, rtt over count − warm-up.
func TestSendFormatJSON(t *testing.T) {
	testbin.Integration(t)
	topo := netlabtest.New(t, netlab.Options{})
	rig := testbin.Rig(t)
	dir := t.TempDir()
	to := netip.AddrPortFrom(topo.Responder.Addr, 9410).String()
	const count, warmup, runID = 200, 3, "00000000000a150d"
	rsp := exec.Command("ip", "netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
		"--listen", to, "--timestamps", "software", "--count", fmt.Sprint(count), "--run-id", runID, "--out", filepath.Join(dir, "responder.samples"))
	rspOut := &lockedBuffer{}
	rsp.Stdout, rsp.Stderr = rspOut, rspOut
	if err := rsp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rsp.Process.Kill(); _ = rsp.Wait() })
	waitFor(t, rspOut, ": ready")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	snd := exec.CommandContext(ctx, "ip", "netns", "exec", topo.Netns(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--to", to, "--count", fmt.Sprint(count), "--warmup", fmt.Sprint(warmup), "--timestamps", "software", "--run-id", runID,
		"--format", "json")
	var stdout, stderr bytes.Buffer
	snd.Stdout, snd.Stderr = &stdout, &stderr
	if err := snd.Run(); err != nil {
		t.Fatalf("rig send: %v\n%s", err, stderr.String())
	}
	s := decodeSendSummary(t, stdout.Bytes())
	if s.Counters.Sent != count || s.Counters.Received != count || s.Counters.Lost != 0 || s.Count != count || s.Warmup != warmup ||
		s.Requests != "unicast to "+to || s.RunID != runID || s.Iface != topo.Sender.Interface {
		t.Errorf("summary %+v\nstderr:\n%s", s, stderr.String())
	}
	rtt := s.Metrics[0]
	if rtt.Name != analysis.RTT || !rtt.Available || rtt.RoundStats == nil || rtt.N != count-warmup || rtt.MedianNS == nil || *rtt.MedianNS <= 0 {
		t.Errorf("rtt %+v", rtt)
	}
	if err := rsp.Wait(); err != nil {
		t.Errorf("rig respond: %v\n%s", err, rspOut)
	}
}
