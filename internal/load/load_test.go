package load

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("stress-ng not installed (make deps installs it)")
	}
	if Alive() {
		t.Skip("another stress-ng runs on this host; cannot prove ours stops")
	}
	p, err := Start(Spec{Args: "--cpu 1 --cpu-method fft", CPUs: []int{0}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if !p.Running() || !Alive() {
		t.Fatal("stress-ng not running")
	}
	if err := p.Stop(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive() {
		t.Fatal("stress-ng still running after Stop")
	}
	if !strings.Contains(strings.Join(p.Argv, " "), "--taskset 0 --timeout 30s --metrics-brief") {
		t.Errorf("argv %v", p.Argv)
	}
}

func TestRejects(t *testing.T) {
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("stress-ng not installed")
	}
	if _, err := Start(Spec{Args: "--cpu 1 --taskset 3", CPUs: []int{0}}); err == nil || !strings.Contains(err.Error(), "set by rig") {
		t.Errorf("--taskset in args: %v", err)
	}
	if _, err := Start(Spec{Args: "--no-such-stressor 1", CPUs: []int{0}}); err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Errorf("bad args: %v", err)
	}
	if _, err := Start(Spec{Args: "--cpu 1"}); err == nil {
		t.Error("no CPUs accepted")
	}
}
