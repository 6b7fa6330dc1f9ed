package load_test

import (
	"context"
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
	time.Sleep(500 * time.Millisecond)
	if !p.Running() || !load.Alive() {
		t.Fatal("stress-ng not running")
	}
	if err := p.Stop(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if load.Alive() {
		t.Fatal("stress-ng still running after Stop")
	}
	if !strings.Contains(strings.Join(p.Argv, " "), "--taskset 0 --timeout 30s --metrics-brief") {
		t.Errorf("argv %v", p.Argv)
	}
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
