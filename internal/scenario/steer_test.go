package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestSteerKnobsAgainstHost checks irq.away and smt.fence against a host's
// facts: a CPU without sibling skips the fence arm, a sibling that is
// CPU 0 is refused where it is written, away needs a CPU to spare, and
// away composes with irq.cpus (the NIC queues where cpus says).
func TestSteerKnobsAgainstHost(t *testing.T) {
	src := func(cpu, arm string) []byte {
		top := "emulate: netns"
		if strings.Contains(arm, "cpus") {
			top = "hosts:\n  snd: {via: local, roles: [sender], iface: eth1}\n  rsp: {via: local, roles: [responder], iface: ens1f0}"
		}
		return []byte("name: t\n" + top + "\ntraffic:\n  group: 239.1.1.1:5000\ndefaults:\n  responder: {cpu: " + cpu + "}\narms:\n  - name: base\n  - name: a\n" + arm)
	}
	for _, tc := range []struct {
		name, cpu, arm string
		host           *StaticFacts
		err, skip      string
	}{
		{"fence on a core of two", "1", "    smt: {fence: true}\n    irq: {away: true}\n", bigHost(), "", ""},
		{"fence without SMT skips", "1", "    smt: {fence: true}\n", smallHost(), "", "CPU 1 has no SMT sibling (thread_siblings_list 1: one thread per core) to fence"},
		{"fence of CPU 0 refused", "13", "    smt: {fence: true}\n", bigHost(), "t.yaml:10:18: the SMT sibling of CPU 13 on host responder is CPU 0", ""},
		{"away with irq.cpus on the measured CPU", "1", "    irq: {away: true, cpus: 1}\n", bigHost(), "", ""},
		{"away with nothing to spare", "0", "    irq: {away: true}\n", &StaticFacts{Online: []int{0}}, "t.yaml:10:17: irq away on host responder leaves no CPU for the IRQs: online 0, measured CPU 0", ""},
		{"away and fence leave nothing", "0", "    irq: {away: true}\n    smt: {fence: true}\n", &StaticFacts{Online: []int{0, 1}, Siblings: map[int][]int{0: {0, 1}, 1: {0, 1}}}, "t.yaml:10:17: irq away on host responder leaves no CPU for the IRQs: online 0-1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("t.yaml", src(tc.cpu, tc.arm))
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(s, factsFor(s, tc.host))
			var list ErrorList
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (!errors.As(err, &list) || !strings.HasPrefix(list[0].Error(), tc.err)):
				t.Fatalf("want %q, got %v", tc.err, err)
			case tc.err == "" && s.Arms[1].Skip != tc.skip:
				t.Errorf("skip %q, want %q", s.Arms[1].Skip, tc.skip)
			}
			if plan := strings.Join(describe(s.Arms[1], "ens1f0", nil), "\n"); tc.err == "" && tc.skip == "" {
				for knob, want := range map[string]string{"smt": "smt fence: the responder CPU's SMT siblings offline", "away": "of the host off the responder CPU"} {
					if strings.Contains(tc.arm, knob) && !strings.Contains(plan, want) {
						t.Errorf("plan lacks %q:\n%s", want, plan)
					}
				}
			}
		})
	}
}
