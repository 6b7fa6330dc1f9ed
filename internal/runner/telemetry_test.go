package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
)

// TestTelemetrySeesStressOnResponderCPU runs a round with the responder
// spinning alone on CPU 1 and one with stress-ng on CPU 1 too, on the
// emulated topology, and checks that the telemetry shows the load:
// stress-ng seen on the CPU, and the spinning responder thread preempted
// (involuntary context switches) more than when it was alone. (A blocking
// responder is not preempted: it wakes ahead of the load and sleeps.)
func TestTelemetrySeesStressOnResponderCPU(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	res, log, err := runYAML(t, t.TempDir(), "tel.yaml", `name: tel
emulate: netns
traffic: {group: 239.66.0.2:7601, interval: 1ms, count: 1500}
timestamps: software
rounds: 1
arms:
  - name: alone
    responder: {cpu: 1, poll: busy}
  - name: stressed
    responder: {cpu: 1, poll: busy}
    load: {stress-ng: --cpu 1 --cpu-method fft, cpus: 1}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	read := func(arm string) *rundir.TelemetryResult {
		b, err := os.ReadFile(filepath.Join(rundir.RoundDir(res.Dir, arm, 0), rundir.Telemetry))
		if err != nil {
			t.Fatal(err)
		}
		var r rundir.TelemetryResult
		if err := json.Unmarshal(b, &r); err != nil || r.Samples == 0 {
			t.Fatalf("%s telemetry: %v\n%.300s", arm, err, b)
		}
		return &r
	}
	alone, stressed := read("alone"), read("stressed")
	seen := false
	for _, th := range stressed.Threads {
		if strings.HasPrefix(th.Comm, "stress-ng") && th.CPU == 1 {
			seen = true
		}
	}
	if !seen {
		t.Errorf("stress-ng not among the threads seen on CPU 1: %+v", stressed.Threads)
	}
	if alone.Thread == nil || stressed.Thread == nil {
		t.Fatalf("responder thread not watched: %+v %+v", alone.Thread, stressed.Thread)
	}
	for _, th := range alone.Threads {
		if strings.HasPrefix(th.Comm, "stress-ng") {
			t.Errorf("stress-ng seen in the arm without load: %+v", th)
		}
	}
	t.Logf("responder context switches: alone %+v, stressed %+v", *alone.Thread, *stressed.Thread)
	if stressed.Thread.Involuntary == 0 {
		t.Errorf("a spinning responder sharing CPU 1 with stress-ng was never preempted: %+v", *stressed.Thread)
	}
	// On a quiet machine the lone spinner is rarely preempted; on a busy one
	// (other tests, other tenants) it may be as often as under our load, so
	// the comparison is made only when the baseline is quiet.
	if alone.Thread.Involuntary < 100 && stressed.Thread.Involuntary <= 2*alone.Thread.Involuntary {
		t.Errorf("involuntary context switches: alone %d, stressed %d; want clearly more under load",
			alone.Thread.Involuntary, stressed.Thread.Involuntary)
	}
	// The host's RAPL energy rides along: measured per zone, or cannot
	// tell with the reason (this VM has no powercap), never a silent 0.
	if e := alone.Energy; e == nil || (e.CannotTell == "") == (len(e.Zones) == 0) {
		t.Errorf("energy %+v", e)
	} else {
		t.Logf("energy: %+v", *e)
	}
	if stressed.PinCPU == 1 || alone.PinCPU == 1 {
		t.Errorf("sampler ran on the measured CPU")
	}
}
