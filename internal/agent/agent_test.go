package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

func TestHandshakeRefusesOtherVersion(t *testing.T) {
	for _, hello := range []string{
		`{"proto":"rig-agent","version":99,"rig":"rig 9.9"}`,
		`{"proto":"something-else","version":1}`,
		`not json at all`,
	} {
		_, err := Dial(context.Background(), "h1", []string{"sh", "-c", "echo '" + hello + "'; cat >/dev/null"}, nil, nil)
		if err == nil {
			t.Fatalf("hello %s accepted", hello)
		}
		if !strings.Contains(err.Error(), "host h1") {
			t.Errorf("error does not name the host: %v", err)
		}
		if strings.Contains(hello, `"version":99`) && !strings.Contains(err.Error(), fmt.Sprintf("version 99, this rig speaks rig-agent version %d", Version)) {
			t.Errorf("version mismatch not explained: %v", err)
		}
	}
	// An agent that never says hello: the command's stderr reaches the user.
	_, err := Dial(context.Background(), "h2", []string{"sh", "-c", "echo 'ssh: connect to host h2: No route' >&2; exit 255"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "No route") {
		t.Errorf("dead agent: %v", err)
	}
}

// serve runs a Server over pipes and returns a line-oriented client end.
func serve(t *testing.T, s *Server) (send func(Request), recv func() Response, hello Hello) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop when its stdin closed")
		}
	})
	br := bufio.NewReader(outR)
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line, &hello); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(inW)
	send = func(r Request) { enc.Encode(r) }
	recv = func() Response {
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var probe struct{ Event *string }
			if json.Unmarshal(line, &probe) == nil && probe.Event != nil {
				continue
			}
			var r Response
			json.Unmarshal(line, &r)
			return r
		}
	}
	return send, recv, hello
}

func TestServerRunsOnlyRigOperations(t *testing.T) {
	root := t.TempDir()
	for path, v := range map[string]string{
		"sys/devices/system/cpu/online":                             "0-1\n",
		"sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0\n",
		"sys/devices/system/cpu/cpu1/topology/thread_siblings_list": "1\n",
		"sys/class/net/lo/ifindex":                                  "1\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755)
		os.WriteFile(filepath.Join(root, path), []byte(v), 0o644)
	}
	s := &Server{FS: hostfs.FS{Root: root}, StateDir: t.TempDir(), Rig: "/nonexistent/rig", WorkDir: t.TempDir()}
	send, recv, hello := serve(t, s)
	if hello.Proto != Proto || hello.Version != Version {
		t.Fatalf("hello %+v", hello)
	}
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	for i, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Op: OpStart, Args: args(StartArgs{Command: "sh", Args: []string{"-c", "id"}})}, "not a rig probe command"},
		{Request{Op: OpStart, Args: args(StartArgs{Command: "respond", Args: []string{"--out", "/etc/passwd"}})}, "--out is chosen by the agent"},
		{Request{Op: OpStart, Args: args(StartArgs{Command: "capture", Args: []string{"--pcap=/etc/passwd"}})}, "--pcap is chosen by the agent"},
		{Request{Op: OpStart, Args: args(StartArgs{Command: "respond", Pcap: true})}, "a pcap file is the capture's"},
		{Request{Op: "exec", Args: args(map[string]string{"cmd": "rm -rf /"})}, `unknown operation "exec"`},
		{Request{Op: OpWait, Args: args(HandleArgs{Handle: 42})}, "no process 42"},
		{Request{Op: OpApply, Args: json.RawMessage(`{"knobs": 5}`)}, "knobs"},
	} {
		tc.req.ID = uint64(i + 1)
		send(tc.req)
		r := recv()
		if r.ID != tc.req.ID || r.OK || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s: got %+v, want an error containing %q", tc.req.Op, r, tc.want)
		}
	}
	send(Request{ID: 9, Op: OpFacts})
	r := recv()
	var f facts.Facts
	if !r.OK || json.Unmarshal(r.Result, &f) != nil || len(f.Online) != 2 || len(f.Ifaces) != 1 {
		t.Fatalf("facts: %+v", r)
	}
	if !slices.Contains(f.Missing, "isolated") {
		t.Errorf("a host without an isolated file: missing %v, want isolated", f.Missing)
	}
	if sib := f.Siblings[1]; len(sib) != 1 || sib[0] != 1 {
		t.Errorf("siblings of CPU 1: %v", sib)
	}
	// A fake root has no kernel to ask for addresses or timestamping:
	// unknown, not "none", and the reason travels.
	if f.Addrs != nil || len(f.Timestamping) != 0 || f.TimestampingErr[f.Ifaces[0]] != "cannot ask a fake host root" {
		t.Errorf("a fake root: addresses %v, timestamping %v, why %v", f.Addrs, f.Timestamping, f.TimestampingErr)
	}
	send(Request{ID: 10, Op: OpBye})
	if r := recv(); !r.OK || r.ID != 10 {
		t.Fatalf("bye: %+v", r)
	}
}

// FuzzClientLine feeds arbitrary agent output to the controller's line
// dispatcher: it must never panic, and a response reaches only the call
// that waits for its ID.
func FuzzClientLine(f *testing.F) {
	f.Add([]byte(`{"id":1,"ok":true,"result":{"handle":3}}`))
	f.Add([]byte(`{"event":"progress","handle":1,"line":"progress 10 9"}`))
	f.Add([]byte(`{"event":"log","handle":2,"line":"rig respond: ready"}`))
	f.Add([]byte(`{"event":5}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, line []byte) {
		c := &Client{Name: "h", pending: map[uint64]chan Response{}, onLine: map[int]func(string){}, log: io.Discard}
		ch := make(chan Response, 1)
		c.pending[1] = ch
		c.onLine[1] = func(string) {}
		c.handleLine(line)
		select {
		case r := <-ch:
			if r.ID != 1 {
				t.Fatalf("response %d delivered to the call waiting for 1", r.ID)
			}
		default:
		}
	})
}
