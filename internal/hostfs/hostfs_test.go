package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFakeRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc/irq/5"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/irq/5/smp_affinity_list"), []byte("0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := FS{Root: root}
	if f.IsReal() {
		t.Fatal("fake root reported as real")
	}
	s, err := f.ReadString("/proc/irq/5/smp_affinity_list")
	if err != nil || s != "0-1" {
		t.Fatalf("ReadString = %q, %v", s, err)
	}
	if err := f.WriteFile("/proc/irq/5/smp_affinity_list", "1"); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.ReadString("/proc/irq/5/smp_affinity_list"); s != "1" {
		t.Fatalf("after write: %q", s)
	}
	m, err := f.Glob("/proc/irq/*/smp_affinity_list")
	if err != nil || len(m) != 1 || m[0] != "/proc/irq/5/smp_affinity_list" {
		t.Fatalf("Glob = %v, %v", m, err)
	}
	if _, err := f.ReadFile("/proc/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := f.WriteFile("/proc/nope", "1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("write must not create: %v", err)
	}
	t.Setenv(EnvRoot, root)
	if Default().Root != root {
		t.Fatal("env root ignored")
	}
}
