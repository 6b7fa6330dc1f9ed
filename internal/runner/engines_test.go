package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRunEngines runs scenarios/engines.yaml (one round of 300 requests an
// arm) on the emulated topology: in every arm both ends ran the engine and
// the poll the arm names, as their sample headers say (the Go probes name
// no engine), every request was answered, and the tables' captions give
// each arm's engines.
func TestRunEngines(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(native.EnvDir, testbin.Native(t))
	src, err := os.ReadFile("../../scenarios/engines.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(strings.Replace(string(src), "count: 2000", "count: 300", 1), "rounds: 2", "rounds: 1", 1)
	if !strings.Contains(text, "count: 300") || !strings.Contains(text, "rounds: 1") {
		t.Fatalf("engines.yaml no longer says count: 2000 and rounds: 2:\n%s", src)
	}
	res, log, err := runYAML(t, t.TempDir(), "engines.yaml", text)
	if err != nil || res == nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	arms := []string{"go-block", "native-block", "go-busy", "native-busy"}
	for _, arm := range arms {
		j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0), 0)
		if err != nil {
			t.Fatalf("arm %s: %v\n%s", arm, err, log)
		}
		engine, poll, _ := strings.Cut(arm, "-")
		if engine == "go" {
			engine = ""
		}
		for _, role := range []samples.Role{samples.RoleSender, samples.RoleResponder} {
			s := j.Headers[role].Settings
			if e, _ := s["engine"].(string); e != engine || s["poll"] != poll {
				t.Errorf("arm %s: %s engine %v poll %v", arm, role, s["engine"], s["poll"])
			}
		}
		if c := j.Counters[samples.RoleSender]; c.Sent != 300 || c.Received != 300 {
			t.Errorf("arm %s: sender %+v, want every request answered", arm, c)
		}
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	if want := "Engines (sender/responder): arm go-block: go/go; arm native-block: native/native; arm go-busy: go/go; arm native-busy: native/native."; err != nil || !strings.Contains(string(b), want) {
		t.Errorf("tables.md lacks %q: %v\n%s", want, err, b)
	}
}
