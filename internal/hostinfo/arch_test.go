package hostinfo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

func TestArch(t *testing.T) {
	// c7i and c8g have /proc/sys/kernel/arch; isolated and k8spod only
	// /proc/cpuinfo (x86 keys).
	for tree, want := range map[string]string{"c7i": "x86_64", "c8g": "aarch64", "isolated": "x86_64"} {
		if got, err := Arch(fx(tree)); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", tree, got, err, want)
		}
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	b, _ := os.ReadFile("testdata/c8g/proc/cpuinfo")
	os.WriteFile(filepath.Join(root, "proc/cpuinfo"), b, 0o644)
	if got, err := Arch(hostfs.FS{Root: root}); err != nil || got != "aarch64" {
		t.Errorf("arm64 cpuinfo alone: %q %v", got, err)
	}
	if got, err := Arch(fx("k8spod")); err == nil {
		t.Errorf("k8spod cpuinfo has neither key: got %q", got)
	}
}
