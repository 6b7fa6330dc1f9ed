package testbin

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// creators are the calls by which a test builds a network namespace, starts
// stress-ng or checks for root itself.
var creators = []string{
	"netns.NewNamed(", "netlab.Up(", "load.Start(", `Command("stress-ng"`, `, "stress-ng", "--`, `"netns", "add"`, "unshare(", "os.Geteuid() != 0",
}

// gates are the calls that gate a test with Integration.
var gates = []string{"testbin.Integration(", "testbin.StressNG(", "netlabtest.New("}

// notGated are test files that may hold a creator without a gate, and why.
var notGated = map[string]string{
	"internal/testbin/need.go":       "the gate itself",
	"internal/chaos/chaos_test.go":   "runs only with RIG_CHAOS=1 (make chaos) and fails, not skips, without root",
	"internal/chaos/harness_test.go": "helpers of chaos_test.go",
}

// TestGate: every test file that builds a namespace, starts stress-ng or
// asks for root also calls the one gate (Integration, directly or through
// StressNG or netlabtest.New), so `go test -short ./...` starts none of
// them. A file-level check: a file that gates one test and not another is
// caught by .ci/unit-starts-nothing.sh, which runs the short suite and
// watches the host.
func TestGate(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") || notGated[rel] != "" || rel == "internal/testbin/gate_test.go" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		src := string(b)
		for _, c := range creators {
			if !strings.Contains(src, c) {
				continue
			}
			checked++
			gated := false
			for _, g := range gates {
				gated = gated || strings.Contains(src, g)
			}
			if !gated {
				t.Errorf("%s has %s but no gate: call testbin.Integration(t) (or testbin.StressNG, netlabtest.New) in the test", rel, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no test file builds a namespace or starts stress-ng: the walk read nothing")
	}
}
