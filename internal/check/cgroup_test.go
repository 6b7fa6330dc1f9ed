package check

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cpurank"
)

// The fix that lifts a CFS quota names the hierarchy's own file and value:
// cgroup v2 cpu.max takes "max", v1 cpu.cfs_quota_us takes -1.
func TestQuotaFixPerHierarchy(t *testing.T) {
	// v2: the k8spod tree (a Guaranteed pod on an old kubelet: quota set).
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: k8s})
	if f := r.Get("cgroup.cpu_max").Fix; !strings.Contains(f, "echo max > /sys/fs/cgroup/cpu.max") || strings.Contains(f, "cfs_quota_us") {
		t.Errorf("v2 fix: %s", f)
	}
	// v1: cpuset and cpu,cpuacct controllers in a pod-like cgroup.
	h := copyTree(t, "k8spod")
	write(t, h, "/proc/self/cgroup", "12:cpuset:/kubepods/pod1/c1\n3:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n")
	write(t, h, "/sys/fs/cgroup/cgroup.controllers", "")
	d := "/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1"
	write(t, h, d+"/cpu.cfs_quota_us", "150000\n")
	write(t, h, d+"/cpu.cfs_period_us", "100000\n")
	write(t, h, d+"/cpu.stat", "nr_periods 40\nnr_throttled 3\nthrottled_time 5000000\n")
	write(t, h, "/sys/fs/cgroup/cpuset/kubepods/pod1/c1/cpuset.effective_cpus", "2\n")
	r = run(t, h, Options{CPU: 2, Getenv: k8s})
	cm := r.Get("cgroup.cpu_max")
	if cm.Severity != Fail || !strings.Contains(cm.Observed, "CFS quota 150000 100000 (cgroup v1 /kubepods/pod1/c1)") ||
		!strings.Contains(cm.Fix, "echo -1 > "+d+"/cpu.cfs_quota_us") || strings.Contains(cm.Fix, "cpu.max") {
		t.Errorf("v1 cpu_max: %+v", cm)
	}
	if th := r.Get("cgroup.throttled"); th.Severity != Warn || !strings.Contains(th.Observed, "throttled 3 times (5000 µs") || !strings.Contains(th.Fix, "cpu.cfs_quota_us") {
		t.Errorf("v1 throttled: %+v", th)
	}
	if cs := r.Get("cgroup.cpuset"); cs.Severity != OK || !strings.Contains(cs.Observed, "cpuset 2 is narrower") {
		t.Errorf("v1 cpuset: %+v", cs)
	}
}

// With Rank the checks run on the CPU the ranking found quietest, and the
// report carries the ranking.
func TestRankPicksTheCPU(t *testing.T) {
	h := copyTree(t, "vm")
	stat := func(user1 int) string {
		return fmt.Sprintf("cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0 0 0\ncpu1 %d 0 0 %d 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime 1\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n", user1, 300-user1)
	}
	write(t, h, "/proc/stat", stat(100))
	rk := &cpurank.Options{NoPin: true, Window: time.Second, Sleep: func(context.Context, time.Duration) error {
		write(t, h, "/proc/stat", stat(200)) // CPU 1 busy, CPU 0 idle
		return nil
	}}
	r := run(t, h, Options{CPU: -1, Rank: rk})
	if r.CPU != 0 || r.Ranking == nil || r.Ranking.Chosen != 0 || !strings.Contains(r.CPUChoice, "quietest of 0-1") {
		t.Fatalf("cpu %d choice %q ranking %+v", r.CPU, r.CPUChoice, r.Ranking)
	}
	if g := r.Get("cpu.online"); !strings.Contains(g.Observed, "CPU 0 is online") {
		t.Errorf("checks did not run on the chosen CPU: %+v", g)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.HasPrefix(out, "quietest CPU 0 of 0-1 over 1s") || !strings.Contains(out, "rig check: responder CPU 0 (the quietest of 0-1, ranked above)") {
		t.Fatal(out)
	}
	// Candidates rig may not use: an error, no report.
	if _, err := Run(context.Background(), h, Options{CPU: -1, Rank: &cpurank.Options{CPUs: []int{7}, NoPin: true}, Getenv: func(string) string { return "" }}); !cpurank.IsInput(err) {
		t.Fatalf("candidate 7: %v", err)
	}
}

// A report survives JSON (the agent protocol carries it to rig run).
func TestReportJSONRoundTrip(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: k8s})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Worst != Fail || back.ExitCode() != ExitFail || back.Get("cgroup.cpu_max").Severity != Fail || back.Get("cgroup.cpuset").Severity != OK {
		t.Fatalf("%+v", back)
	}
	if err := json.Unmarshal([]byte(`{"worst":"bad"}`), &back); err == nil {
		t.Fatal("unknown severity accepted")
	}
}

// A pod whose cgroup has no cpuset controller (a mount namespace without
// it) says so for whole cores too, instead of claiming "none" is whole.
func TestNoCpusetController(t *testing.T) {
	h := copyTree(t, "k8spod")
	write(t, h, "/proc/self/cgroup", "3:cpu,cpuacct:/p\n0::/\n")
	write(t, h, "/sys/fs/cgroup/cgroup.controllers", "")
	write(t, h, "/sys/fs/cgroup/cpu,cpuacct/p/cpu.cfs_quota_us", "-1\n")
	r := run(t, h, Options{CPU: 2, Getenv: k8s})
	for _, id := range []string{"cgroup.cpuset", "cgroup.whole_cores"} {
		if g := r.Get(id); g.Severity != Skip || !strings.Contains(g.Observed, "no cpuset controller") {
			t.Errorf("%s: %+v", id, g)
		}
	}
}
