package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRunInterrupted: Ctrl-C (SIGINT) during `rig run` stops the current
// round, restores every host change (a cpuidle state disabled by an arm,
// a stress-ng load), keeps the finished rounds, says where the run
// directory is and exits non-zero. On a host without cpuidle it runs on a
// haltpoll guest's cpuidle tree, faked (fakeCPUIdle), rather than skip.
func TestRunInterrupted(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	fs := hostfs.Default()
	wrap := func(*exec.Cmd) {}
	states, err := hostinfo.ReadIdleStates(fs, 1)
	if err != nil || len(states) < 2 {
		t.Logf("CPU 1 has no second cpuidle state to disable (%v): the haltpoll guest's, faked", err)
		var root string
		root, wrap = fakeCPUIdle(t, 0, 1)
		fs = hostfs.FS{Root: root}
		if states, err = hostinfo.ReadIdleStates(fs, 1); err != nil || len(states) < 2 {
			t.Fatalf("the faked cpuidle tree: %v %v", states, err)
		}
	}
	st := states[len(states)-1]
	disablePath := hostinfo.IdleStatePath(1, st.Index) + "/disable"
	before, _ := fs.ReadFile(disablePath)

	dir := t.TempDir()
	scen := filepath.Join(dir, "sig.yaml")
	os.WriteFile(scen, []byte(`name: sig
emulate: netns
traffic: {group: 239.44.0.1:7400, interval: 1ms, count: 800}
timestamps: software
rounds: 6
arms:
  - name: base
    responder: {cpu: 1}
  - name: knobs
    responder: {cpu: 1}
    cstate: {disable: ["`+st.Name+`"]}
    load: {stress-ng: --cpu 1, cpus: 0}
`), 0o644)
	state := filepath.Join(dir, "state")
	results := filepath.Join(dir, "results")
	cmd := exec.Command(testbin.Rig(t), "run", "--results", results, scen)
	cmd.Env = append(os.Environ(), journal.EnvDir+"="+state)
	wrap(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the knobs arm is in force in round 1 (2 arm-rounds done).
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(results, "sig-*", "arms", "*", "round-*", "sender.samples"))
		cur, _ := fs.ReadFile(disablePath)
		if len(m) >= 2 && !bytes.Equal(cur, before) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("run did not reach round 1 of the knobs arm in time:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("rig run after SIGINT: %v, want a non-zero exit", err)
	}
	if !strings.Contains(stderr.String(), "run directory") || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted and where the run directory is:\n%s", stderr.String())
	}
	if after, _ := fs.ReadFile(disablePath); !bytes.Equal(after, before) {
		t.Errorf("%s is %q after the interrupted run, was %q", disablePath, after, before)
	}
	if testbin.StressNGRuns() {
		t.Error("stress-ng still running after the interrupted run")
	}
	if err := journal.CheckPending(state); err != nil {
		t.Errorf("journal entries left open: %v", err)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "sig-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	var man struct {
		Interrupted string `json:"interrupted"`
	}
	b, _ := os.ReadFile(filepath.Join(runs[0], "manifest.json"))
	json.Unmarshal(b, &man)
	if man.Interrupted == "" {
		t.Error("manifest does not record the interruption")
	}
	complete := 0
	rounds, _ := filepath.Glob(filepath.Join(runs[0], "arms", "*", "round-*"))
	for _, r := range rounds {
		n := 0
		for _, f := range []string{"sender.samples", "responder.samples", "capture.samples"} {
			if _, err := os.Stat(filepath.Join(r, f)); err == nil {
				n++
			}
		}
		if n == 3 {
			complete++
		}
	}
	if complete < 2 {
		t.Errorf("%d complete rounds kept, want the 2 finished before the interrupt", complete)
	}
	if _, err := os.Stat(filepath.Join(runs[0], "tables.md")); err != nil {
		t.Errorf("tables of the finished rounds: %v", err)
	}
}
