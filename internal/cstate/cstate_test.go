package cstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

func fakeCPU(t *testing.T) hostfs.FS {
	root := t.TempDir()
	for i, n := range []string{"POLL", "C1", "C1E", "C6"} {
		d := filepath.Join(root, "sys/devices/system/cpu/cpu1/cpuidle", "state"+string(rune('0'+i)))
		os.MkdirAll(d, 0o755)
		for f, v := range map[string]string{"name": n, "latency": "10", "usage": "5", "time": "7", "disable": "0"} {
			os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644)
		}
	}
	return hostfs.FS{Root: root}
}

func TestDisableAndUndo(t *testing.T) {
	fs := fakeCPU(t)
	ch, err := DisableChanges(fs, 1, []string{"c1e", "C6"}, false)
	if err != nil || len(ch) != 2 {
		t.Fatalf("changes %v %v", ch, err)
	}
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Handlers{journal.KindSysfs: journal.SysfsUndo(fs, fs.Root)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), j, ch); err != nil {
		t.Fatal(err)
	}
	read := func(k string) string {
		s, _ := fs.ReadString("/sys/devices/system/cpu/cpu1/cpuidle/state" + k + "/disable")
		return s
	}
	if read("2") != "1" || read("3") != "1" || read("1") != "0" {
		t.Fatal("states not disabled as asked")
	}
	if _, err := j.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if read("2") != "0" || read("3") != "0" {
		t.Fatal("undo did not restore")
	}
	all, _ := DisableChanges(fs, 1, nil, true)
	if len(all) != 3 {
		t.Fatalf("all but POLL: %d changes", len(all))
	}
	if _, err := DisableChanges(fs, 1, []string{"C3"}, false); err == nil || !strings.Contains(err.Error(), "POLL, C1, C1E, C6") {
		t.Fatalf("unknown state: %v", err)
	}
	if _, err := DisableChanges(fs, 0, []string{"C1"}, false); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("no cpuidle: %v", err)
	}
}

func TestHoldMaxLatencyFake(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	os.WriteFile(filepath.Join(root, "dev/cpu_dma_latency"), nil, 0o600)
	h, err := HoldMaxLatency(hostfs.FS{Root: root}, 7)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	b, _ := os.ReadFile(filepath.Join(root, "dev/cpu_dma_latency"))
	if len(b) != 4 || b[0] != 7 {
		t.Fatalf("wrote %x", b)
	}
}
