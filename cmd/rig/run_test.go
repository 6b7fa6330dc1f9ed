package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
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
	for _, want := range []string{"1: cpu0 → cpu1", "2: cpu1 → cpu0", "responder process: CPU 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
}
