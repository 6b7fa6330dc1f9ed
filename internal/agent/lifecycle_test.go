package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/owner"
)

// helloOf serves s on pipes and returns its Hello and Serve's result once
// the agent stops (it does at once when it cannot serve).
func helloOf(t *testing.T, s *Server, keep bool) (Hello, func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	var h Hello
	if err := json.NewDecoder(outR).Decode(&h); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, outR)
	stop := func() error {
		inW.Close()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("agent did not stop")
			return nil
		}
	}
	if !keep {
		return h, stop
	}
	t.Cleanup(func() { stop() })
	return h, stop
}

// TestRunAgentsShareTheHostLock: agents of one run share the machine's
// host lock; an agent of another run says in its Hello who holds it, and
// stops.
func TestRunAgentsShareTheHostLock(t *testing.T) {
	base := t.TempDir()
	srv := func(run, lane string) *Server {
		return &Server{FS: hostfs.Default(), StateDir: journal.LaneDir(base, lane), LockDir: base, RunID: run, Rig: "/nonexistent/rig", WorkDir: t.TempDir()}
	}
	for _, lane := range []string{"snd", "rsp", "cap"} {
		if h, _ := helloOf(t, srv("run1", lane), true); h.Error != "" {
			t.Fatalf("agent %s of run1: %s", lane, h.Error)
		}
	}
	h, stop := helloOf(t, srv("run2", "rsp"), false)
	if !strings.Contains(h.Error, "run run1") || !strings.Contains(h.Error, "host lock") {
		t.Errorf("agent of run2 while run1 holds: hello error %q, want it to name run1", h.Error)
	}
	if err := stop(); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("Serve of the refused agent: %v", err)
	}
}

// TestLoneAgentLocksWhileArmApplied: an agent outside a run takes the host
// lock alone for an arm and is refused, naming the holder, while another
// process holds it.
func TestLoneAgentLocksWhileArmApplied(t *testing.T) {
	dir := t.TempDir()
	s := &Server{FS: hostfs.Default(), StateDir: dir, Rig: "/nonexistent/rig", WorkDir: t.TempDir()}
	send, recv, _ := serve(t, s)
	other, err := journal.LockHost(dir, journal.Self(""))
	if err != nil {
		t.Fatal(err)
	}
	send(Request{ID: 1, Op: OpApply, Args: json.RawMessage(`{"arm":"a","knobs":{}}`)})
	if r := recv(); r.OK || !strings.Contains(r.Error, "host lock") {
		t.Errorf("apply while another process holds the host: %+v", r)
	}
	other.Unlock()
	send(Request{ID: 2, Op: OpApply, Args: json.RawMessage(`{"arm":"a","knobs":{}}`)})
	if r := recv(); !r.OK {
		t.Fatalf("apply: %+v", r)
	}
	if _, err := journal.LockHost(dir, journal.Self("")); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("host lock while the arm is applied: %v", err)
	}
	send(Request{ID: 3, Op: OpUndo})
	if r := recv(); !r.OK {
		t.Fatalf("undo: %+v", r)
	}
	l, err := journal.LockHost(dir, journal.Self(""))
	if err != nil {
		t.Fatalf("host lock after the undo: %v", err)
	}
	l.Unlock()
}

func TestDialReportsHelloError(t *testing.T) {
	hello := fmt.Sprintf(`{"proto":%q,"version":%d,"error":"another rig process is changing this host: pid 7"}`, Proto, Version)
	_, err := Dial(context.Background(), "h1", []string{"sh", "-c", "echo '" + hello + "'; cat >/dev/null"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "host h1: another rig process is changing this host: pid 7") {
		t.Errorf("Dial of an agent that cannot serve: %v", err)
	}
}

// TestRemoveStaleWorkDirs: work directories of agents that no longer run
// go; a live agent's and one without an owner record stay.
func TestRemoveStaleWorkDirs(t *testing.T) {
	tmp := t.TempDir()
	self := owner.Self()
	dead := self
	dead.Start++
	mk := func(name string, o *owner.Process) string {
		d := filepath.Join(tmp, name)
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, "1-respond.samples"), []byte("x"), 0o600)
		if o != nil {
			b, _ := json.Marshal(o)
			os.WriteFile(filepath.Join(d, ownerFile), b, 0o600)
		}
		return d
	}
	live, gone, unknown := mk("rig-agent-1", &self), mk("rig-agent-2", &dead), mk("rig-agent-3", nil)
	other := mk("not-rig-4", &dead)
	removed, err := RemoveStaleWorkDirs(tmp)
	if err != nil || len(removed) != 1 || removed[0].Path != gone {
		t.Fatalf("removed %+v, %v; want only %s", removed, err, gone)
	}
	for _, d := range []string{live, unknown, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
