package runner

import (
	"errors"
	"strings"
	"testing"

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
// emulated topology: an arm whose stack this host lacks (XLIO) is refused
// before anything runs, at its line and column with the stack's install
// hint (the host's agent reports its stacks); without it, the native
// engine answers the kernel arm and its sample header names the stack.
func TestRunStacks(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(native.EnvDir, testbin.Native(t))
	dir := t.TempDir()
	res, log, err := runYAML(t, dir, "stacks.yaml", stackArms)
	var list scenario.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "stacks.yaml:18:24: stack xlio is not on host responder") || !strings.Contains(err.Error(), "install NVIDIA XLIO") {
		t.Fatalf("the xlio arm: %v, want it refused at its line with the install hint\n%s", err, log)
	}
	if res != nil && res.Dir != "" {
		t.Errorf("a run directory for a refused scenario: %s", res.Dir)
	}
	res, log, err = runYAML(t, dir, "stacks.yaml", stackArms[:strings.Index(stackArms, "  - name: xlio")])
	if err != nil || res == nil {
		t.Fatalf("the kernel arm: %v\n%s", err, log)
	}
	j, jerr := samples.JoinDir(rundir.RoundDir(res.Dir, "kernel", 0), 0)
	if jerr != nil {
		t.Fatalf("kernel arm: %v\n%s", jerr, log)
	}
	h := j.Headers[samples.RoleResponder]
	if c := j.Counters[samples.RoleSender]; c.Received != 200 || h.Settings["engine"] != "native" || h.Settings["stack"] != "kernel" {
		t.Errorf("kernel arm: sender %+v, responder settings %v", c, h.Settings)
	}
}
