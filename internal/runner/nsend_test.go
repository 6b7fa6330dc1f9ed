package runner

import (
	"errors"
	"fmt"
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

// TestRunNativeSenderStack runs an arm whose native sender is on a stack
// through the runner on the emulated topology, with the counting
// interposer standing in for VMA's libvma.so (found, as the loader finds
// it, in LD_PRELOAD and LD_LIBRARY_PATH): the sender's sample header names
// the stack and the library mapped in rig-send-native, the library saw
// every request's sendmsg, every request is answered, and the manifest and
// the tables' captions name the sender's stack. A stack the sender host
// lacks (XLIO) refuses the scenario at its line before anything runs.
// (stack custom, the interposer under its own name, is the command line's.)
func TestRunNativeSenderStack(t *testing.T) {
	testbin.Integration(t)
	bin := testbin.Native(t)
	t.Setenv(native.EnvDir, bin)
	libs := t.TempDir()
	b, err := os.ReadFile(filepath.Join(bin, "librig-interpose.so"))
	if err != nil || os.WriteFile(filepath.Join(libs, "libvma.so"), b, 0o755) != nil {
		t.Fatalf("the interposer as libvma.so: %v", err)
	}
	t.Setenv("LD_LIBRARY_PATH", libs)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	src := fmt.Sprintf(`name: itest-nsend-stack
emulate: netns
traffic:
  group: 239.66.0.5:7640
  interval: 1ms
  count: 200
  warmup: 2
  reply-timeout: 2s
timestamps: software
rounds: 1
order: sequential
defaults:
  responder: {cpu: 1, engine: native}
  sender: {engine: native}
arms:
  - name: kernel
    sender: {stack: kernel}
  - name: vma
    sender: {stack: vma, stack-env: [RIG_INTERPOSE_OUT=%s]}
`, calls)
	res, log, err := runYAML(t, dir, "nsend-stack.yaml", src+"  - name: xlio\n    sender: {stack: xlio}\n")
	var list scenario.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "nsend-stack.yaml:21:21: stack xlio is not on host sender") || !strings.Contains(err.Error(), "install NVIDIA XLIO") {
		t.Fatalf("the xlio arm: %v, want it refused at its line with the install hint\n%s", err, log)
	}
	if res != nil && res.Dir != "" {
		t.Errorf("a run directory for a refused scenario: %s", res.Dir)
	}
	if res, log, err = runYAML(t, dir, "nsend-stack.yaml", src); err != nil || res == nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	for arm, lib := range map[string]any{"kernel": nil, "vma": filepath.Join(libs, "libvma.so")} {
		j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0), 0)
		if err != nil {
			t.Fatalf("arm %s: %v\n%s", arm, err, log)
		}
		snd := j.Headers[samples.RoleSender].Settings
		if snd["engine"] != "native" || snd["stack"] != arm || snd["stack_library"] != lib {
			t.Errorf("arm %s: sender settings %v", arm, snd)
		}
		if c := j.Counters[samples.RoleSender]; c.Sent != 200 || c.Received != 200 {
			t.Errorf("arm %s: sender %+v, want every request answered", arm, c)
		}
	}
	b, err = os.ReadFile(calls)
	if err != nil || !strings.Contains(string(b), "loop sendmsg 200\n") {
		t.Errorf("the stack's library saw, in the sender's loop: %s (%v), want sendmsg 200 times", b, err)
	}
	m, err := rundir.ReadManifest(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Arms[1].Knobs["sender"].(map[string]any); fmt.Sprint(s["stack"]) != "map[env:RIG_INTERPOSE_OUT="+calls+" name:vma]" {
		t.Errorf("manifest knobs of arm vma: %v", m.Arms[1].Knobs)
	}
	tables, err := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	if want := "Sender socket stack: arm kernel: kernel; arm vma: vma."; err != nil || !strings.Contains(string(tables), want) {
		t.Errorf("tables.md lacks %q: %v\n%s", want, err, tables)
	}
}
