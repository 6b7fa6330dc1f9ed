package load_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/testbin"
)

// An external test package: testbin (the gate) imports load.

func TestStartStop(t *testing.T) {
	testbin.StressNG(t)
	p, err := load.Start(load.Spec{Args: "--cpu 1 --cpu-method fft", CPUs: []int{0}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Its worker runs (a member of its group besides it): Stop must end both.
	for deadline := time.Now().Add(30 * time.Second); !worker(p.Pid()); time.Sleep(10 * time.Millisecond) {
		if !p.Running() || time.Now().After(deadline) {
			t.Fatalf("stress-ng (running %v) started no worker:\n%s", p.Running(), p.Output())
		}
	}
	if !testbin.StressNGRuns() {
		t.Fatal("stress-ng not seen running")
	}
	if err := p.Stop(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if testbin.StressNGRuns() {
		t.Fatal("stress-ng still running after Stop")
	}
	if !strings.Contains(strings.Join(p.Argv, " "), "--taskset 0 --timeout 30s --metrics-brief") {
		t.Errorf("argv %v", p.Argv)
	}
}

// worker reports whether a process other than pgid runs in process group
// pgid (/proc/PID/stat's fifth field).
func worker(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(b), ')'); err == nil && i > 0 && e.Name() != strconv.Itoa(pgid) {
			if f := strings.Fields(string(b[i+1:])); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
				return true
			}
		}
	}
	return false
}

func TestRejects(t *testing.T) {
	testbin.StressNG(t) // a bad argument list may still start stress-ng for a moment
	if _, err := load.Start(load.Spec{Args: "--cpu 1 --taskset 3", CPUs: []int{0}}); err == nil || !strings.Contains(err.Error(), "set by rig") {
		t.Errorf("--taskset in args: %v", err)
	}
	if _, err := load.Start(load.Spec{Args: "--no-such-stressor 1", CPUs: []int{0}}); err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Errorf("bad args: %v", err)
	}
	if _, err := load.Start(load.Spec{Args: "--cpu 1"}); err == nil {
		t.Error("no CPUs accepted")
	}
}
