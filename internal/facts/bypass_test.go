package facts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/probe"
)

// TestReadIOUring: a fake root whose sysctl disables io_uring says so for
// both setups; one that does not cannot say; this machine's answer is
// what io_uring_setup does here.
func TestReadIOUring(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, IOUringDisabled)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    string
		want bool
	}{{"2\n", true}, {"0\n", false}} {
		if err := os.WriteFile(p, []byte(c.v), 0o644); err != nil {
			t.Fatal(err)
		}
		u := readIOUring(hostfs.FS{Root: root})
		if got := u != nil; got != c.want || (u != nil && (!strings.Contains(u.Refused, "io_uring_disabled = 2") || u.SQPollRefused != u.Refused)) {
			t.Errorf("io_uring_disabled %q: %+v", c.v, u)
		}
	}
	u := readIOUring(hostfs.FS{Root: "/"})
	if u == nil {
		t.Fatal("this machine: not known")
	}
	t.Logf("this machine: %+v", *u)
}

// TestReadStacks: every stack rig knows is looked for as rig respond
// starts it, and one this machine lacks says what is missing.
func TestReadStacks(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", t.TempDir())
	m := readStacks()
	if why, ok := m["xlio"]; !ok || len(m) != len(probe.StackTable) || !strings.Contains(why, "library libxlio.so is not in LD_LIBRARY_PATH") {
		t.Fatalf("stacks %v", m)
	}
	if err := os.WriteFile(filepath.Join(os.Getenv("LD_LIBRARY_PATH"), "libxlio.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if m := readStacks(); m["xlio"] != "" || !strings.Contains(m["onload"], "its launcher onload is not on PATH") {
		t.Errorf("libxlio.so in LD_LIBRARY_PATH: %q", m)
	}
}
