package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/hostinfo"
)

// pod is a container's environment in Kubernetes: the kubelet's
// variables, and the downward API's requests and limits (nil: none).
func pod(res map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := res[k]; ok {
			return v
		}
		return k8s(k)
	}
}

// The requests and limits of the manifests' pods: the pinned one
// (Guaranteed, 2 CPUs), the shared one (Burstable: no CPU limit, so
// limits.cpu is the node's allocatable CPUs).
var (
	guaranteed2 = map[string]string{hostinfo.EnvCPURequest: "2000", hostinfo.EnvCPULimit: "2000", hostinfo.EnvMemRequest: "536870912", hostinfo.EnvMemLimit: "536870912"}
	burstable   = map[string]string{hostinfo.EnvCPURequest: "500", hostinfo.EnvCPULimit: "7910", hostinfo.EnvMemRequest: "268435456", hostinfo.EnvMemLimit: "536870912"}
)

// The fix that lifts a CFS quota names the hierarchy's own file and value
// (cgroup v2 cpu.max takes "max", v1 cpu.cfs_quota_us takes -1) and, in a
// pod, whose cgroup is read-only, the node's path or only the kubelet.
func TestQuotaFixPerHierarchy(t *testing.T) {
	// v2 in a pod with its own cgroup namespace: the node's path is hidden.
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: pod(guaranteed2)})
	if f := r.Get("cgroup.cpu_max").Fix; !strings.Contains(f, "only the kubelet can lift the quota") || strings.Contains(f, "echo") || strings.Contains(f, "cfs_quota_us") {
		t.Errorf("v2 pod fix: %s", f)
	}
	// v1 in a pod (EKS AL2): the node's path, never the pod's read-only one.
	r = run(t, fx("eks-al2-pinned"), Options{CPU: 1, Getenv: pod(guaranteed2)})
	cg := "/kubepods/pod3c2f5e0a-7d41-4b8e-9a51-2f0c6d8e1b77/4f1c9e2ab7d34f1c9e2ab7d34f1c9e2ab7d34f1c9e2ab7d34f1c9e2ab7d30123"
	cm := r.Get("cgroup.cpu_max")
	if cm.Severity != Fail || !strings.Contains(cm.Observed, "CFS quota 200000 100000 (cgroup v1 "+cg+")") ||
		!strings.Contains(cm.Fix, "echo -1 > /sys/fs/cgroup/cpu"+cg+"/cpu.cfs_quota_us, which the kubelet may set again") || strings.Contains(cm.Fix, "cpu.max") {
		t.Errorf("v1 pod cpu_max: %+v", cm)
	}
	if th := r.Get("cgroup.throttled"); th.Severity != Warn || !strings.Contains(th.Observed, "throttled 37 times (912000 µs") || !strings.Contains(th.Fix, "cpu.cfs_quota_us") {
		t.Errorf("v1 throttled: %+v", th)
	}
	// v1 outside Kubernetes, mounted read-write: the file where rig read it.
	h := copyTree(t, "eks-al2-pinned")
	mi, _ := os.ReadFile(h.Path("/proc/self/mountinfo"))
	write(t, h, "/proc/self/mountinfo", strings.ReplaceAll(string(mi), " ro,", " rw,"))
	if f := run(t, h, Options{CPU: 1}).Get("cgroup.cpu_max").Fix; !strings.Contains(f, "elsewhere: echo -1 > /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us") {
		t.Errorf("v1 read-write fix: %s", f)
	}
}

// A cgroup v1 container (EKS Amazon Linux 2: runc mounts the container's
// cgroup directory at /sys/fs/cgroup/<controllers>) shows its quota, its
// throttling and its cpuset; a quota file that cannot be read is "cannot
// tell", and require-check does not pass it.
func TestCgroupV1Container(t *testing.T) {
	r := run(t, fx("eks-al2-pinned"), Options{CPU: 5, Getenv: pod(guaranteed2)})
	expect(t, r, map[string]Severity{"cgroup.cpu_max": Fail, "cgroup.throttled": Warn, "cgroup.cpuset": OK, "cgroup.whole_cores": OK, "cpu.allowed": OK})
	if cs := r.Get("cgroup.cpuset"); !strings.Contains(cs.Observed, "pinned (exclusive): cpuset 1,5 is the pod's 2 CPUs of the node's 0-7") {
		t.Errorf("cpuset: %+v", cs)
	}
	expect(t, run(t, fx("eks-al2-shared"), Options{CPU: 7, Getenv: pod(burstable)}), map[string]Severity{"cgroup.cpu_max": OK, "cgroup.throttled": OK, "cgroup.cpuset": Warn, "cgroup.whole_cores": Skip})
	const d = "/sys/fs/cgroup/cpu,cpuacct"
	for _, c := range []struct{ file, id string }{{"cpu.cfs_quota_us", "cgroup.cpu_max"}, {"cpu.stat", "cgroup.throttled"}} {
		h := copyTree(t, "eks-al2-pinned")
		if err := os.Remove(h.Path(d + "/" + c.file)); err != nil {
			t.Fatal(err)
		}
		r := run(t, h, Options{CPU: 5, Getenv: pod(guaranteed2)})
		g := r.Get(c.id)
		if g.Severity != Warn || !strings.HasPrefix(g.Observed, "cannot read "+d+"/"+c.file) || !strings.Contains(g.Fix, "mountinfo") {
			t.Errorf("%s missing: %+v", c.file, g)
		}
		// An unread quota may hide a FAIL: require-check does not pass it.
		if quota := c.id == "cgroup.cpu_max"; (g.Untold == Fail) != quota || quota && (r.Worst != Warn || r.Passed()) {
			t.Errorf("%s missing: worst %s, passed %v, untold %s", c.file, r.Worst, r.Passed(), g.Untold)
		}
	}
}

// In a pod the cpuset says "pinned" only when the pod's requests and
// limits (the downward API) make it Guaranteed with whole CPUs and the
// cpuset holds exactly that many: the shared pool is narrower than the
// node too once any pod owns CPUs. Without the variables it cannot tell.
func TestPinnedOrSharedPool(t *testing.T) {
	for _, c := range []struct {
		tree     string
		cpu      int
		env      map[string]string
		cpuset   Severity
		untold   bool
		whole    Severity
		contains string
	}{
		{"k8spod-shared", 2, burstable, Warn, false, Skip, "shared pool (narrower than the node because other pods own CPUs): cpuset 0,2-4,6-7 of 0-7"},
		{"k8spod-shared", 2, nil, Warn, true, Warn, "cannot tell pinned from the shared pool: cpuset 0,2-4,6-7 of the node's 0-7"},
		{"k8spod-shared", 2, guaranteed2, Warn, false, Skip, "not pinned: a Guaranteed pod with 2 whole CPUs, but its cpuset 0,2-4,6-7 has 6"},
		{"k8spod-shared", 2, map[string]string{hostinfo.EnvCPURequest: "1500", hostinfo.EnvCPULimit: "1500", hostinfo.EnvMemRequest: "1", hostinfo.EnvMemLimit: "1"}, Warn, false, Skip, "shared pool"},
		{"k8spod-shared", 2, map[string]string{hostinfo.EnvCPURequest: "2000", hostinfo.EnvCPULimit: "2000"}, Warn, true, Warn, `RIG_MEM_REQUEST=""`},
		{"k8spod", 2, guaranteed2, OK, false, Warn, "pinned (exclusive): cpuset 2-3 is the pod's 2 CPUs"},
		{"k8spod", 2, nil, Warn, true, Warn, "cannot tell pinned from the shared pool"},
		{"eks-al2-shared", 2, burstable, Warn, false, Skip, "shared pool"},
		{"eks-al2-pinned", 1, guaranteed2, OK, false, OK, "pinned (exclusive)"},
		{"eks-al2-pinned", 1, burstable, Warn, false, Skip, "shared pool"},
	} {
		r := run(t, fx(c.tree), Options{CPU: c.cpu, Getenv: pod(c.env)})
		cs, wc := r.Get("cgroup.cpuset"), r.Get("cgroup.whole_cores")
		if cs.Severity != c.cpuset || (cs.Untold != Skip) != c.untold || !strings.Contains(cs.Observed, c.contains) || wc.Severity != c.whole {
			t.Errorf("%s %v: cpuset %+v, whole cores %+v", c.tree, c.env, cs, wc)
		}
		if c.untold && !strings.Contains(cs.Fix, "downward API") {
			t.Errorf("%s %v: fix %q", c.tree, c.env, cs.Fix)
		}
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
	if _, err := Run(context.Background(), h, Options{CPU: -1, Rank: &cpurank.Options{CPUs: []int{7}, NoPin: true}, Getenv: func(string) string { return "" }}); !errors.Is(err, cli.ErrUsage) {
		t.Fatalf("candidate 7: %v", err)
	}
}

// A report survives JSON (the agent protocol carries it to rig run).
func TestReportJSONRoundTrip(t *testing.T) {
	r := run(t, fx("k8spod"), Options{CPU: 2, Getenv: pod(guaranteed2)})
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

// A pod whose cgroup has no cpuset controller visible (a mount namespace
// without it) cannot tell which CPUs are its own; outside Kubernetes it
// is not in a pinned container.
func TestNoCpusetController(t *testing.T) {
	h := copyTree(t, "eks-al2-pinned")
	b, _ := os.ReadFile(h.Path("/proc/self/cgroup"))
	write(t, h, "/proc/self/cgroup", strings.Replace(string(b), "7:cpuset:", "7:cpuset_gone:", 1))
	r := run(t, h, Options{CPU: 1, Getenv: pod(guaranteed2)})
	for _, id := range []string{"cgroup.cpuset", "cgroup.whole_cores"} {
		if g := r.Get(id); g.Severity != Warn || g.Untold != Warn || !strings.Contains(g.Observed, "no cpuset controller is visible") {
			t.Errorf("%s: %+v", id, g)
		}
	}
	r = run(t, h, Options{CPU: 1})
	for _, id := range []string{"cgroup.cpuset", "cgroup.whole_cores"} {
		if g := r.Get(id); g.Severity != Skip || !strings.Contains(g.Observed, "no cpuset controller") {
			t.Errorf("%s outside Kubernetes: %+v", id, g)
		}
	}
}
