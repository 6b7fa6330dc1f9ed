package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRunDryRunExitCodes drives `rig run` through the same entry point as
// the binary: every malformed scenario exits 2, the demo exits 0.
func TestRunDryRunExitCodes(t *testing.T) {
	bad, err := filepath.Glob("../../internal/scenario/testdata/bad/*.yaml")
	if err != nil || len(bad) < 25 {
		t.Fatalf("bad scenarios: %d, %v", len(bad), err)
	}
	for _, f := range bad {
		if strings.HasPrefix(filepath.Base(f), "facts-") {
			continue // those need a fake host; the package tests cover them
		}
		if code := run([]string{"run", "--dry-run", f}); code != 2 {
			t.Errorf("%s: exit %d, want 2", f, code)
		}
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"run", "--dry-run", "../../scenarios/demo.yaml"}, 0},
		{[]string{"run", "--dry-run"}, 2},
		{[]string{"run", "--dry-run", "no/such/file.yaml"}, 2},
	} {
		if code := run(c.args); code != c.want {
			t.Errorf("rig %s: exit %d, want %d", strings.Join(c.args, " "), code, c.want)
		}
	}
}

func TestDryRunPrintsPlan(t *testing.T) {
	var out bytes.Buffer
	if err := dryRun(context.Background(), &out, "../../scenarios/demo.yaml", hostfs.Default()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1: cpu0 → cpu1 → cpu1-unicast", "2: cpu1 → cpu1-unicast → cpu0", "responder process: CPU 1",
		"cpu1-unicast\n    requests: unicast to the responder's address on its iface, port 7700"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDryRunTimestampingOnVeth: real hosts (via: local) whose interfaces
// are veths (in a namespace of the test's own, where the whole rig runs):
// the dry run prints each NIC's timestamping decision — software only,
// nothing changed — and timestamps: hardware is refused with the reason
// and the fix (exit 2).
func TestDryRunTimestampingOnVeth(t *testing.T) {
	testbin.Integration(t)
	ns := fmt.Sprintf("rigdry%d", os.Getpid())
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	sh("ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	sh("ip", "-n", ns, "link", "add", "dsnd", "type", "veth", "peer", "name", "drsp")
	sh("ip", "-n", ns, "link", "add", "dcap", "type", "veth", "peer", "name", "dtap")
	file := filepath.Join(t.TempDir(), "veth.yaml")
	scenario := func(mode string) {
		t.Helper()
		src := `name: veth
hosts:
  snd: {via: local, roles: [sender], iface: dsnd}
  rsp: {via: local, roles: [responder], iface: drsp}
  cap: {via: local, roles: [capture], iface: dcap}
traffic: {group: "239.1.1.1:9000", count: 100}
timestamps: ` + mode + `
arms: [{name: a}]
`
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dry := func() (int, string) {
		cmd := exec.Command("ip", "netns", "exec", ns, testbin.Rig(t), "run", "--dry-run", file)
		cmd.Env = append(os.Environ(), "RIG_STATE_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	scenario("auto")
	code, out := dry()
	if code != 0 {
		t.Fatalf("auto: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"NIC timestamping (once for the run, before the first arm):",
		"snd dsnd (RX ALL + TX ON): software: dsnd cannot give rig's probes RX ALL + TX ON in hardware (RX: no hardware RX stamps; TX: no hardware TX stamps",
		"cap dcap (RX ALL): software: dcap cannot give rig's probes RX ALL in hardware (RX: no hardware RX stamps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("auto dry run lacks %q:\n%s", want, out)
		}
	}
	scenario("hardware")
	code, out = dry()
	if code != 2 || !strings.Contains(out, "timestamps: hardware, and on host rsp (RX ALL + TX ON): drsp cannot give rig's probes RX ALL + TX ON in hardware") ||
		!strings.Contains(out, "hint: use timestamps: auto or software") {
		t.Fatalf("hardware: exit %d\n%s", code, out)
	}
}
