package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRealChildPIDNamespaces runs a busy loop pinned to one CPU in a PID
// namespace of its own and rig check in another, as a pod without hostPID
// sees the node: the ranking must still see that CPU busy and choose the
// other, cpu.busy must warn without naming rig itself, and both must say
// that threads outside the namespace are not named.
func TestRealChildPIDNamespaces(t *testing.T) {
	testbin.Integration(t)
	cpus, err := hostinfo.ProcessCPUsAllowed(hostfs.Default(), "self")
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs two CPUs (%v %v)", cpus, err)
	}
	cand := cpus[len(cpus)-2:]
	rig := testbin.Rig(t)
	check := func(t *testing.T, args ...string) *Report {
		t.Helper()
		cmd := exec.Command("unshare", append([]string{"-p", "-f", "--mount-proc", "--kill-child", rig, "check", "--format", "json"}, args...)...)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == ExitWarn) {
			t.Fatalf("rig check %v: %v\n%s", args, err, out)
		}
		var r Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return &r
	}
	for i, busy := range cand {
		free := cand[1-i]
		t.Run(fmt.Sprintf("busy-%d", busy), func(t *testing.T) {
			testbin.Spin(t, busy, true, testbin.Burner)
			r := check(t, "--rank-cpus="+strconv.Itoa(cand[0])+","+strconv.Itoa(cand[1]), "--window", "1s")
			rk := r.Ranking
			t.Logf("%s; other threads: %s", rk.Summary(), rk.RunSource)
			testbin.BusyElsewhere(t, rk, free)
			loud := rk.Get(busy)
			if rk.Chosen != free || loud.Rank != 2 || loud.RunUS < 500_000 {
				t.Fatalf("busy loop on CPU %d in another PID namespace: chose %d; that CPU: %+v", busy, rk.Chosen, loud)
			}
			if !strings.Contains(strings.Join(rk.Notes, "\n"), "only this PID namespace") {
				t.Errorf("notes do not say the names are partial: %q", rk.Notes)
			}
			b := check(t, "--cpu", strconv.Itoa(busy), "--window", "500ms").Get("cpu.busy")
			if b == nil || b.Severity != Warn || strings.Contains(b.Observed, "rig[") || !strings.Contains(b.Observed, "only this PID namespace") {
				t.Fatalf("cpu.busy of CPU %d: %+v", busy, b)
			}
		})
	}
}
