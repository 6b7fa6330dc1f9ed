package round

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// fanoutSpec is a round of one multicast request stream answered by every
// responder of topo, with a capture.
func fanoutSpec(t *testing.T, topo *netlab.Topology, log *bytes.Buffer, group string, count int) Spec {
	s := labSpec(t, topo, agents(t, topo, log), true)
	s.Send.Group, s.Send.Count, s.Send.Interval = netip.MustParseAddrPort(group), count, time.Millisecond
	s.Send.Timestamps, s.Send.Arm = tstamp.Software, "fanout"
	return s
}

// TestFanout: three responders answer one multicast request stream; every
// request has each responder's reply, filed under its id by the sender
// and paired with the request by the capture, and every responder writes
// its own file. The telemetry watches every responder, each unpinned one
// on every CPU it may run on, into a file of its own.
func TestFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const n, count = 3, 300
	topo := netlabtest.New(t, netlab.Options{Responders: n})
	var log bytes.Buffer
	spec := fanoutSpec(t, topo, &log, "239.7.7.12:9105", count)
	spec.Telemetry, spec.TelemetryInterval = true, 10*time.Millisecond
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("round: %v\nlog:\n%s", err, log.String())
	}
	online, err := hostinfo.OnlineCPUs(hostfs.Default())
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint32(n) {
		b, err := os.ReadFile(filepath.Join(res.Dir, rundir.TelemetryFile(id)))
		var tel rundir.TelemetryResult
		if err == nil {
			err = json.Unmarshal(b, &tel)
		}
		if err != nil || !slices.Equal(tel.CPUs, online) || !strings.Contains(tel.Watched, "unpinned") || tel.Samples < 2 {
			t.Errorf("responder %d telemetry: %v: CPUs %v (want every CPU it may run on, %v), watched %q, %d samples\n%.300s", id, err, tel.CPUs, online, tel.Watched, tel.Samples, b)
		}
	}
	if len(res.ResponderFiles) != n {
		t.Fatalf("responder files %v, want %d", res.ResponderFiles, n)
	}
	js := make([]*samples.Joined, n)
	for id := range js {
		if js[id], err = samples.JoinDir(res.Dir, uint32(id)); err != nil {
			t.Fatal(err)
		}
		if js[id].Responders != n {
			t.Fatalf("%d responders, want %d", js[id].Responders, n)
		}
	}
	for id, j := range js {
		if h := j.Headers[samples.RoleResponder]; h.ResponderID != uint32(id) || h.Iface != topo.ResponderHosts()[id].Interface {
			t.Errorf("responder %d's join has the file of responder %d on %s", id, h.ResponderID, h.Iface)
		}
		if c := j.Counters[samples.RoleSender]; c.Sent != count || c.Received != count || c.Lost != 0 {
			t.Errorf("responder %d: sender counters %+v, want all %d answered", id, c, count)
		}
		if c := j.Counters[samples.RoleCapture]; c.Unpaired != 0 {
			t.Errorf("responder %d: capture counters %+v, want every reply paired", id, c)
		}
		for _, r := range j.Records {
			if r.T[samples.RxSW] == 0 || r.T[samples.ReqRxSW] == 0 || r.T[samples.CapReqSW] == 0 || r.T[samples.CapRepSW] == 0 {
				t.Fatalf("responder %d seq %d: stamps missing: %+v", id, r.Seq, r.T)
			}
			if turn, rtt := r.T[samples.CapRepSW]-r.T[samples.CapReqSW], r.T[samples.RxSW]-r.T[samples.TxSW]; turn <= 0 || turn > rtt {
				t.Fatalf("responder %d seq %d: capture turnaround %d ns outside (0, rtt %d ns]", id, r.Seq, turn, rtt)
			}
		}
	}
}

// TestFanoutResponderKilled: a responder killed mid-round is reported for
// that responder alone: the round's error names it, its join lacks its file
// and loses the requests after the kill, and the other responders' joins
// are whole.
func TestFanoutResponderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const count = 2000
	topo := netlabtest.New(t, netlab.Options{Responders: 2})
	var log bytes.Buffer
	spec := fanoutSpec(t, topo, &log, "239.7.7.13:9106", count)
	victim := topo.More[0].Netns
	killed, ended := make(chan error, 1), make(chan struct{})
	go func() {
		// Once the victim has sent 50 replies: the round runs 2 s from
		// then, however late it started.
		pid, err := responderPID(victim)
		for n := 0; err == nil && n < 50; n, err = netlabtest.UDPSent(pid) {
			select {
			case <-ended:
				killed <- fmt.Errorf("the round ended before responder 1 sent 50 replies (%d)", n)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		if err == nil {
			err = syscall.Kill(pid, syscall.SIGKILL)
		}
		killed <- err
	}()
	res, err := Run(context.Background(), spec)
	close(ended)
	if kerr := <-killed; kerr != nil {
		t.Fatalf("%v\nlog:\n%s", kerr, log.String())
	}
	if err == nil || !strings.Contains(err.Error(), "responder 1") || strings.Contains(err.Error(), "responder 0") {
		t.Fatalf("round error %v: want responder 1 named, and only it\nlog:\n%s", err, log.String())
	}
	js := make([]*samples.Joined, 2)
	for id := range js {
		var jerr error
		if js[id], jerr = samples.JoinDir(res.Dir, uint32(id)); jerr != nil || js[id].Responders != 2 {
			t.Fatalf("join %d: %v (%+v)", id, jerr, js[id])
		}
	}
	if c := js[0].Counters[samples.RoleSender]; c.Received != count || len(js[0].Roles) != 3 {
		t.Errorf("responder 0: %+v, roles %v: want whole", c, js[0].Roles)
	}
	c := js[1].Counters[samples.RoleSender]
	if c.Sent != count || c.Received == 0 || c.Lost == 0 || c.Lost+c.Received != count {
		t.Errorf("responder 1: sender counters %+v: want answered until the kill, lost after", c)
	}
	for _, r := range js[1].Roles {
		if r == samples.RoleResponder {
			t.Error("the killed responder's join has a responder file")
		}
	}
}

// responderPID is the pid of the rig respond process in namespace ns (the
// test's own lab: nothing else runs there), once it runs.
func responderPID(ns string) (int, error) {
	for range 200 {
		out, err := exec.Command("ip", "netns", "pids", ns).Output()
		if err != nil {
			return 0, err
		}
		for _, f := range strings.Fields(string(out)) {
			pid, _ := strconv.Atoi(f)
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if bytes.Contains(cmd, []byte("\x00respond\x00")) {
				return pid, nil
			}
		}
		time.Sleep(50 * time.Millisecond) // polling for the process to appear
	}
	return 0, fmt.Errorf("no rig respond in netns %s within 10 s", ns)
}
