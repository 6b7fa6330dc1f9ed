package facts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

func write(t testing.TB, root, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(full, mode)
}

// TestIRQBalanceBanned: the banned CPUs come from the environment (the
// list over the deprecated mask), else from irqbalance's default, and an
// environment that does not parse is said, never taken for a list.
func TestIRQBalanceBanned(t *testing.T) {
	iso, nohz := []int{3, 1}, []int{2, 3}
	for _, c := range []struct {
		name, environ string
		want          []int
		from          string
	}{
		{"list over mask", "IRQBALANCE_BANNED_CPUS=00000001\x00IRQBALANCE_BANNED_CPULIST=5-6\x00", []int{5, 6}, "IRQBALANCE_BANNED_CPULIST"},
		{"mask", "PATH=/bin\x00IRQBALANCE_BANNED_CPUS=0000000c\x00", []int{2, 3}, "IRQBALANCE_BANNED_CPUS"},
		{"default", "PATH=/bin\x00", []int{1, 2, 3}, DefaultBanned},
		{"bad list", "IRQBALANCE_BANNED_CPULIST=x\x00", []int{1, 2, 3}, DefaultBanned + "; its environment: IRQBALANCE_BANNED_CPULIST: cpu list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := hostfs.FS{Root: t.TempDir()}
			write(t, fs.Root, "/proc/77/comm", "irqbalance\n", 0o444)
			write(t, fs.Root, "/proc/77/environ", c.environ, 0o444)
			st, err := ReadIRQBalance(fs)
			if err != nil || !st.Running || st.PID != 77 || st.Systemd {
				t.Fatalf("state %+v, %v", st, err)
			}
			got, from := st.Banned(iso, nohz)
			if !slices.Equal(got, c.want) || !strings.HasPrefix(from, c.from) {
				t.Fatalf("banned %v from %q, want %v from %q", got, from, c.want, c.from)
			}
		})
	}
	st, err := ReadIRQBalance(hostfs.FS{Root: t.TempDir()})
	if err == nil || st.Running {
		t.Fatalf("no /proc: %+v, %v (want an error)", st, err)
	}
}
