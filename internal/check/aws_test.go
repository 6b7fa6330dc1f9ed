package check

import (
	"fmt"
	"strings"
	"testing"
)

// The cstates fix text follows the host's architecture and cpuidle driver:
// intel_idle.max_cstate on x86 with intel_idle, cpuidle.off=1 on arm64.
func TestCStatesPerArch(t *testing.T) {
	psci := copyTree(t, "c8g")
	write(t, psci, "/sys/devices/system/cpu/cpuidle/current_driver", "psci_idle\n")
	for c := 0; c < 8; c++ {
		for k, st := range [][2]string{{"WFI", "1"}, {"cpu-sleep-0", "150"}} {
			d := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state%d/", c, k)
			for f, v := range map[string]string{"name": st[0], "latency": st[1], "residency": st[1], "disable": "0", "usage": "9", "time": "9"} {
				write(t, psci, d+f, v+"\n")
			}
		}
	}
	for _, c := range []struct {
		name     string
		tree     string
		sev      Severity
		observed []string
		fix      []string
	}{
		{"c7i", "c7i", Warn, []string{"(intel_idle): C6 (exit 290 µs"}, []string{"echo 1 > /sys/devices/system/cpu/cpu3/cpuidle/state3/disable", "intel_idle.max_cstate=1"}},
		{"c8g", "c8g", OK, []string{"no cpuidle states (cpuidle driver none)", "WFI", "Graviton"}, nil},
		{"arm64 psci", "", Warn, []string{"(psci_idle): cpu-sleep-0 (exit 150 µs"}, []string{"state1/disable", "cpuidle.off=1", "WFI only"}},
	} {
		h := psci
		if c.tree != "" {
			h = fx(c.tree)
		}
		r := run(t, h, Options{CPU: 3})
		res := r.Get("cstates")
		if res == nil || res.Severity != c.sev {
			t.Errorf("%s: %+v", c.name, res)
			continue
		}
		for _, w := range c.observed {
			if !strings.Contains(res.Observed, w) {
				t.Errorf("%s: observed lacks %q: %s", c.name, w, res.Observed)
			}
		}
		for _, w := range c.fix {
			if !strings.Contains(res.Fix, w) {
				t.Errorf("%s: fix lacks %q: %s", c.name, w, res.Fix)
			}
		}
		if strings.Contains(res.Fix, "intel_idle") != (c.tree == "c7i") {
			t.Errorf("%s: fix %q", c.name, res.Fix)
		}
	}
}

// smt.sibling on a host without SMT says so (c8g) and watches the sibling
// where there is one (c7i: CPU 3 and 7 share a core).
func TestSMTPerHost(t *testing.T) {
	if r := run(t, fx("c8g"), Options{CPU: 3}); len(r.Siblings) != 0 || r.Get("smt.sibling").Observed != "CPU 3 has no SMT sibling" {
		t.Errorf("c8g: %v %+v", r.Siblings, r.Get("smt.sibling"))
	}
	if r := run(t, fx("c7i"), Options{CPU: 3}); len(r.Siblings) != 1 || r.Siblings[0] != 7 {
		t.Errorf("c7i siblings %v", r.Siblings)
	}
}
