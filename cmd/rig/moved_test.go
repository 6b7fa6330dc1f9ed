package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchMoved: the bench left the product binary. `rig bench ARGS`
// prints the rigbench command that does what ARGS asked with this rig
// (quoted for the shell) and exits 2; rig -h does not list bench, and rig
// links no bench package.
func TestBenchMoved(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"bench --smoke --out it's.md": " --smoke --out 'it'\\''s.md'\n",
		"help bench":                  " -h\n",
	} {
		code, stdout, stderr := rigIn(t, strings.Fields(args)...)
		want = "rig bench moved: build and run rigbench (make bench / make bench-smoke); for this command, from rig's source tree: " +
			"go build -o bin/rigbench ./cmd/rigbench && bin/rigbench --rig " + exe + want
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("rig %s: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, stdout, stderr, want)
		}
	}
	var help bytes.Buffer
	mainUsage(&help)
	if strings.Contains(help.String(), "bench") {
		t.Errorf("rig -h lists bench:\n%s", help.String())
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasSuffix(p, "/bench") {
			t.Errorf("rig links %s: the bench is rigbench's (cmd/rigbench)", p)
		}
	}
}
