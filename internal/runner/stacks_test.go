package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

const stackArms = `name: itest-stacks
emulate: netns
traffic:
  group: 239.66.0.3:7620
  interval: 1ms
  count: 200
  warmup: 2
timestamps: software
rounds: 1
order: sequential
baseline: kernel
defaults:
  responder: {cpu: 1, engine: native}
arms:
  - name: kernel
    responder: {stack: kernel}
  - name: xlio
    responder: {stack: xlio, stack-env: [XLIO_HW_TS_CONVERSION=4]}
`

// TestRunStacks runs a scenario's stack arms through the runner on the
// emulated topology: the native engine answers the kernel arm, its sample
// header names the stack, and an arm whose stack this host lacks (XLIO) is
// refused at its round with the stack's install hint.
func TestRunStacks(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(native.EnvDir, testbin.Native(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "stacks.yaml")
	if err := os.WriteFile(path, []byte(stackArms), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := Run(context.Background(), Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
		Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "state"), FS: hostfs.Default(), Log: &log})
	if err == nil || !strings.Contains(err.Error()+log.String(), "install NVIDIA XLIO") {
		t.Fatalf("the xlio arm: %v, want its install hint\n%s", err, log.String())
	}
	t.Logf("the run: %v", err)
	if res == nil {
		t.Fatalf("no run directory: %v\n%s", err, log.String())
	}
	j, jerr := samples.JoinDir(rundir.RoundDir(res.Dir, "kernel", 0), 0)
	if jerr != nil {
		t.Fatalf("kernel arm: %v\n%s", jerr, log.String())
	}
	h := j.Headers[samples.RoleResponder]
	if c := j.Counters[samples.RoleSender]; c.Received != 200 || h.Settings["engine"] != "native" || h.Settings["stack"] != "kernel" {
		t.Errorf("kernel arm: sender %+v, responder settings %v", c, h.Settings)
	}
}
