package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/testbin"
)

// runRig runs the rig binary and returns its exit code and stderr.
func runRig(t *testing.T, cred *syscall.Credential, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testbin.Rig(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("rig %v: %v", args, err)
	return 0, ""
}

// TestProbeBadInput: bad input to respond/send/capture gets a clear error
// that says what and how to fix it, and exit code 2.
func TestProbeBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"send", "--iface", "nosuch0", "--count", "10"}, []string{`interface "nosuch0"`, "ip link"}},
		{[]string{"respond", "--iface", "lo", "--group", "10.1.2.3:9000"}, []string{"--group", "multicast group:port such as 239.1.1.1:9000"}},
		{[]string{"respond", "--iface", "lo", "--group", "239.1.1.1"}, []string{"--group", "239.1.1.1:9000"}},
		{[]string{"respond", "--iface", "lo", "--run-id", "1", "--cpu", "4095"}, []string{"CPU 4095 does not exist", "online:"}},
		{[]string{"send", "--iface", "lo", "--size", "20"}, []string{"payload size 20 out of range", "44..1472"}},
		{[]string{"send", "--iface", "lo", "--timestamps", "nic"}, []string{"nic", "hardware, software, auto or off"}},
		{[]string{"capture", "--iface", "lo", "--run-id", "1", "--timestamps", "off"}, []string{"--timestamps off", "use hardware, software or auto"}},
		{[]string{"respond", "--iface", "lo", "--run-id", "1", "--poll", "spin"}, []string{"want block, busy or busy-poll:µs"}},
		{[]string{"respond", "--iface", "lo", "--run-id", "1", "--sched", "fifo:0"}, []string{"1..99"}},
		// Without a run id a stray datagram could take the round.
		{[]string{"respond", "--iface", "lo"}, []string{"respond: --run-id is required", "rig send prints the one it uses"}},
		{[]string{"capture", "--iface", "lo"}, []string{"capture: --run-id is required"}},
		{[]string{"respond", "--iface", "lo", "--run-id", "0"}, []string{"not zero"}},
		{[]string{"send"}, []string{"--iface is required"}},
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

// TestProbeHardwareAndPrivilege: --timestamps hardware on a NIC without it
// prints the capability report (exit 2); a missing privilege names the
// capability (exit 2, like all bad input). Needs root to prove the first and to drop to nobody
// for the second.
func TestProbeHardwareAndPrivilege(t *testing.T) {
	testbin.Integration(t)
	code, stderr := runRig(t, nil, "capture", "--iface", "lo", "--run-id", "1", "--timestamps", "hardware", "--duration", "1ms")
	if code != 2 || !strings.Contains(stderr, "software-transmit") && !strings.Contains(stderr, "SOFTWARE") {
		t.Errorf("hardware on lo: exit %d, want 2 with the capability report:\n%s", code, stderr)
	}
	// The binary must be reachable by nobody.
	os.Chmod(filepath.Dir(testbin.Rig(t)), 0o755)
	code, stderr = runRig(t, &syscall.Credential{Uid: 65534, Gid: 65534}, "capture", "--iface", "lo", "--run-id", "1", "--duration", "1ms")
	if code != 2 || !strings.Contains(stderr, "CAP_NET_RAW") {
		t.Errorf("capture as nobody: exit %d, want 2 naming CAP_NET_RAW:\n%s", code, stderr)
	}
}

// TestSchedPollOneErrorText: a bad --sched or --poll of rig respond and the
// same value as a scenario's responder.sched or responder.poll get the same
// message, from the one parser of each (the scenario's at file:line:col,
// with a hint), and exit 2 both.
func TestSchedPollOneErrorText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	dir := t.TempDir()
	for _, tc := range []struct{ key, value string }{
		{"sched", "fifo:0"}, {"sched", "fifo:120"}, {"sched", "fifo"}, {"sched", "rr:5"},
		{"poll", "spin"}, {"poll", "busy-poll:0"}, {"poll", "busy-poll:x"},
	} {
		var perr error
		if tc.key == "sched" {
			_, perr = cpusched.ParseSched(tc.value)
		} else {
			_, perr = probe.ParsePoll(tc.value)
		}
		if perr == nil {
			t.Fatalf("%s %q parses", tc.key, tc.value)
		}
		want := perr.Error()
		code, stderr := runRig(t, nil, "respond", "--iface", "lo", "--run-id", "1", "--"+tc.key, tc.value)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("rig respond --%s %s: exit %d, want 2 and %q:\n%s", tc.key, tc.value, code, want, stderr)
		}
		file := filepath.Join(dir, tc.key+".yaml")
		src := "name: t\nemulate: netns\ntraffic:\n  group: 239.1.1.1:5000\narms:\n  - name: a\n    responder:\n      " + tc.key + ": " + tc.value + "\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		at := fmt.Sprintf("%s:8:%d: %s", file, 9+len(tc.key), want)
		code, stderr = runRig(t, nil, "run", "--dry-run", file)
		if code != 2 || !strings.Contains(stderr, at) {
			t.Errorf("scenario %s: %s: exit %d, want 2 and %q:\n%s", tc.key, tc.value, code, at, stderr)
		}
	}
}
