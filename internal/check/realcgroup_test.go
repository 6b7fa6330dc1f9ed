package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRealCgroupV1 runs `rig check` inside a real cgroup v1 pair made by
// the test — a cpuset of one exclusive CPU and a CFS quota of 20 % — once
// a busy loop in it was throttled (nr_throttled moved), and checks that cgroup.cpuset,
// cgroup.cpu_max and cgroup.throttled report what was set; then it applies
// the printed fix and checks the quota is gone. The cgroups are removed
// even when the test fails. (cgroup v2 is covered by the k8spod tree.)
func TestRealCgroupV1(t *testing.T) {
	testbin.Integration(t)
	const setRoot, cpuRoot = "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/cpu"
	for _, d := range []string{setRoot + "/cpuset.cpus", cpuRoot + "/cpu.cfs_quota_us"} {
		if _, err := os.Stat(d); err != nil {
			t.Skipf("no cgroup v1 cpuset and cpu controllers here (%v)", err)
		}
	}
	online, err := hostinfo.OnlineCPUs(hostfs.Default())
	if err != nil || len(online) < 2 {
		t.Skipf("needs two online CPUs (%v %v)", online, err)
	}
	cpu, other := online[len(online)-1], online[0]
	rig := testbin.Rig(t)
	name := fmt.Sprintf("rig-check-test-%d", os.Getpid())
	setDir, cpuDir := filepath.Join(setRoot, name), filepath.Join(cpuRoot, name)
	// Registered first: whatever happens below, the cgroups go.
	t.Cleanup(func() {
		for _, c := range []struct{ dir, parent string }{{setDir, setRoot}, {cpuDir, cpuRoot}} {
			if b, err := os.ReadFile(c.dir + "/tasks"); err == nil {
				for _, pid := range strings.Fields(string(b)) {
					_ = os.WriteFile(c.parent+"/tasks", []byte(pid), 0o644)
				}
			}
			if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("removing cgroup %s: %v", c.dir, err)
			}
			if _, err := os.Stat(c.dir); err == nil {
				t.Errorf("cgroup %s still exists", c.dir)
			}
		}
	})
	mkdir := func(d string) {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	set := func(p, v string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatalf("write %s = %s: %v", p, v, err)
		}
	}
	mkdir(setDir)
	mems, err := os.ReadFile(setRoot + "/cpuset.mems")
	if err != nil {
		t.Fatal(err)
	}
	set(setDir+"/cpuset.cpus", fmt.Sprint(cpu))
	set(setDir+"/cpuset.mems", strings.TrimSpace(string(mems)))
	set(setDir+"/cpuset.cpu_exclusive", "1")
	mkdir(cpuDir)
	set(cpuDir+"/cpu.cfs_period_us", "100000")
	set(cpuDir+"/cpu.cfs_quota_us", "20000")

	script := filepath.Join(t.TempDir(), "in-cgroup.sh")
	set(script, `#!/bin/sh
# Join both cgroups, spin under the quota until the kernel throttled it,
# then run rig.
echo $$ > `+setDir+`/tasks || exit 90
echo $$ > `+cpuDir+`/tasks || exit 91
while grep -qx 'nr_throttled 0' `+cpuDir+`/cpu.stat; do :; done
exec "$@"
`)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(cpu int) *Report {
		t.Helper()
		cmd := exec.Command(script, rig, "check", "--cpu", fmt.Sprint(cpu), "--json", "--window", "100ms")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("rig check: %v\n%s", err, stderr.String())
		}
		var r Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("rig check --json: %v (exit %v)\n%s\n%s", err, err, out, stderr.String())
		}
		if cmd.ProcessState.ExitCode() != r.ExitCode() {
			t.Errorf("exit %d, report says %d", cmd.ProcessState.ExitCode(), r.ExitCode())
		}
		return &r
	}
	r := check(cpu)
	cs, cm, th := r.Get("cgroup.cpuset"), r.Get("cgroup.cpu_max"), r.Get("cgroup.throttled")
	if cs == nil || cm == nil || th == nil {
		t.Fatalf("missing cgroup results: %+v", r.Results)
	}
	for _, x := range []*Result{cs, cm, th} {
		t.Logf("%-4s %s: %s", x.Severity, x.ID, x.Observed)
	}
	if cs.Severity != OK || !strings.Contains(cs.Observed, fmt.Sprintf("cpuset %d is narrower than the node", cpu)) {
		t.Errorf("cgroup.cpuset: %+v", cs)
	}
	if a := r.Get("cpu.allowed"); a.Severity != OK || !strings.Contains(a.Observed, fmt.Sprintf("(allowed: %d)", cpu)) {
		t.Errorf("cpu.allowed: %+v", a)
	}
	fix := "echo -1 > " + cpuDir + "/cpu.cfs_quota_us"
	if cm.Severity != Fail || !strings.Contains(cm.Observed, "CFS quota 20000 100000 (cgroup v1 /"+name+")") || !strings.Contains(cm.Fix, fix) || strings.Contains(cm.Fix, "cpu.max") {
		t.Errorf("cgroup.cpu_max: %+v", cm)
	}
	if th.Severity != Warn || !strings.HasPrefix(th.Observed, "throttled ") || strings.HasPrefix(th.Observed, "throttled 0 ") {
		t.Errorf("cgroup.throttled after a busy loop under a 20 %% quota: %+v", th)
	}
	if r.ExitCode() != ExitFail {
		t.Errorf("exit %d, want %d (a quota is a FAIL)", r.ExitCode(), ExitFail)
	}
	// A CPU outside the cpuset fails twice over.
	r = check(other)
	if r.Get("cgroup.cpuset").Severity != Fail || r.Get("cpu.allowed").Severity != Fail {
		t.Errorf("CPU %d outside the cpuset: %+v %+v", other, r.Get("cgroup.cpuset"), r.Get("cpu.allowed"))
	}
	// The printed fix works: no quota afterwards.
	if out, err := exec.Command("sh", "-c", fix).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", fix, err, out)
	}
	if cm := check(cpu).Get("cgroup.cpu_max"); cm.Severity != OK || !strings.Contains(cm.Observed, "no CFS quota") {
		t.Errorf("after the fix: %+v", cm)
	}
}

// TestRealPIDNamespace runs `rig check --iface lo` on this host and in a
// PID namespace of its own (unshare -p -f --mount-proc: a process in a
// container without the host's PID namespace). There ptp4l and chronyd
// cannot be looked for: nic.ptp4l says it cannot tell and names the fix,
// where on the host it names the owners it found or none.
func TestRealPIDNamespace(t *testing.T) {
	testbin.Integration(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare:", err)
	}
	rig := testbin.Rig(t)
	check := func(argv ...string) *Result {
		t.Helper()
		cmd := exec.Command(argv[0], append(argv[1:], "check", "--iface", "lo", "--json", "--window", "10ms")...)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", argv, err)
		}
		var r Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		if g := r.Get("nic.ptp4l"); g != nil {
			return g
		}
		t.Fatalf("%v: no nic.ptp4l in %+v", argv, r.Results)
		return nil
	}
	if g := check(rig); strings.HasPrefix(g.Observed, "cannot") {
		t.Errorf("on the host: %+v", g)
	}
	g := check(unshare, "-p", "-f", "--mount-proc", rig)
	if g.Severity != Warn || !strings.HasPrefix(g.Observed, "cannot tell whether ptp4l or chronyd owns lo's") ||
		!strings.Contains(g.Observed, "kthreadd") || !strings.Contains(g.Fix, "hostPID: true") {
		t.Errorf("in a PID namespace of its own: %+v", g)
	}
}
