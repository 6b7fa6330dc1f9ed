package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

const nativeSendArms = `name: itest-nsend
emulate: netns
traffic:
  group: 239.66.0.4:7630
  interval: 1ms
  count: 200
  warmup: 2
  reply-timeout: 2s
timestamps: software
rounds: 1
order: sequential
baseline: go
defaults:
  responder: {cpu: 1, engine: native}
arms:
  - name: go
  - name: native
    sender: {engine: native, poll: busy}
`

// TestRunNativeSender runs a scenario whose arm puts the native engine on
// both ends through the runner on the emulated topology: the sender's
// sample header says engine native and the poll the arm set, every request
// is answered, and the manifest, the report's Arms table and the tables'
// captions say which engine each end ran. A sender host without
// rig-send-native refuses the scenario at the engine's line before
// anything runs.
func TestRunNativeSender(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(native.EnvDir, t.TempDir())
	dir := t.TempDir()
	res, log, err := runYAML(t, dir, "nsend.yaml", nativeSendArms)
	var list scenario.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "nsend.yaml:18:22: engine native for the sender, and on host sender the native program rig-send-native is missing") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("no rig-send-native: %v, want the scenario refused at the engine with the build hint\n%s", err, log)
	}
	if res != nil && res.Dir != "" {
		t.Errorf("a run directory for a refused scenario: %s", res.Dir)
	}
	t.Setenv(native.EnvDir, testbin.Native(t))
	res, log, err = runYAML(t, dir, "nsend.yaml", nativeSendArms)
	if err != nil || res == nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	for arm, want := range map[string]string{"go": "", "native": "native"} {
		j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0), 0)
		if err != nil {
			t.Fatalf("arm %s: %v\n%s", arm, err, log)
		}
		snd, rsp := j.Headers[samples.RoleSender].Settings, j.Headers[samples.RoleResponder].Settings
		if e, _ := snd["engine"].(string); e != want || rsp["engine"] != "native" {
			t.Errorf("arm %s: sender engine %v, responder engine %v", arm, snd["engine"], rsp["engine"])
		}
		if arm == "native" && snd["poll"] != "busy" {
			t.Errorf("arm native: sender poll %v, want busy", snd["poll"])
		}
		if c := j.Counters[samples.RoleSender]; c.Sent != 200 || c.Received != 200 {
			t.Errorf("arm %s: sender %+v, want every request answered", arm, c)
		}
	}
	m, err := rundir.ReadManifest(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Arms[1].Knobs["sender"].(map[string]any); s["engine"] != "native" || s["poll"] != "busy" {
		t.Errorf("manifest knobs of arm native: %v", m.Arms[1].Knobs)
	}
	for file, want := range map[string]string{
		"report.md": "| native | 1 of 1 | 1 | native, block, other | native, busy, not pinned |",
		"tables.md": "Engines (sender/responder): arm go: go/native; arm native: native/native.",
	} {
		b, err := os.ReadFile(filepath.Join(res.Dir, file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q: %v\n%s", file, want, err, b)
		}
	}
}
