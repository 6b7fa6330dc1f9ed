package native

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cpulist"
)

// allowed reads every thread's Cpus_allowed_list of this process.
func allowed(t *testing.T) map[string][]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %v %v", tasks, err)
	}
	out := map[string][]int{}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				cpus, err := cpulist.Parse(strings.TrimSpace(v))
				if err != nil {
					t.Fatalf("%s: %q: %v", f, v, err)
				}
				out[f] = cpus
			}
		}
	}
	return out
}

// TestKeepOff: while a native program's loop runs on a CPU, rig's own
// threads run elsewhere, and get their CPUs back at Close; a process that
// may run on that CPU only says so instead of pretending.
func TestKeepOff(t *testing.T) {
	var cpus []int
	for _, c := range allowed(t) {
		cpus = c
		break
	}
	if len(cpus) != 2 {
		t.Skipf("needs a process allowed exactly 2 CPUs (this one: %v)", cpus)
	}
	a, b := cpus[0], cpus[1]
	var p, q Proc
	if got, shared := p.KeepOff(a); got != "off CPU "+strconv.Itoa(a) || shared {
		t.Fatalf("KeepOff(%d) = %q, %v", a, got, shared)
	}
	for f, c := range allowed(t) {
		if len(c) != 1 || c[0] != b {
			t.Errorf("%s: allowed %v while the loop has CPU %d, want [%d]", f, c, a, b)
		}
	}
	// Now confined to b, as under taskset: KeepOff(b) cannot move them.
	if got, shared := q.KeepOff(b); !shared || !strings.HasPrefix(got, "may share CPU "+strconv.Itoa(b)+" with the loop (moving them: thread ") ||
		!strings.Contains(got, "allow rig a CPU besides "+strconv.Itoa(b)) {
		t.Errorf("KeepOff(%d) confined to it = %q, %v; want that rig's threads may share it, and the fix", b, got, shared)
	}
	q.back()
	p.back()
	for f, c := range allowed(t) {
		if len(c) != 2 {
			t.Errorf("%s: allowed %v after the restore, want %v", f, c, cpus)
		}
	}
	if got, shared := p.KeepOff(-1); got != "" || shared {
		t.Errorf("KeepOff(-1) = %q, %v; want nothing said for an unpinned loop", got, shared)
	}
}
