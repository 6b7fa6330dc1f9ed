package noise

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// TestCheckCPU: a CPU that is offline, or online but outside the CPUs
// this process may run on (a cpuset, taskset), is refused naming both
// lists; a CPU of both is taken.
func TestCheckCPU(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu"), 0o755)
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/online"), []byte("0-3\n"), 0o644)
	os.WriteFile(filepath.Join(root, "proc/self/status"), []byte("Name:\trig\nCpus_allowed_list:\t0-1\n"), 0o644)
	fs := hostfs.FS{Root: root}
	if err := CheckCPU(fs, 1); err != nil {
		t.Errorf("CPU 1: %v", err)
	}
	if err := CheckCPU(fs, 2); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "CPU 2 is outside the CPUs this process may run on (0-1") {
		t.Errorf("CPU 2: %v", err)
	}
	if err := CheckCPU(fs, 7); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "CPU 7 does not exist or is offline on this host (online: 0-3)") {
		t.Errorf("CPU 7: %v", err)
	}
	os.Remove(filepath.Join(root, "proc/self/status"))
	if err := CheckCPU(fs, 1); err == nil || !strings.Contains(err.Error(), "cannot tell whether CPU 1 is one this process may use") {
		t.Errorf("no status: %v", err)
	}
}
