package scenario

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestNAPIKnobs: nic takes napi-defer-hard-irqs, gro-flush-timeout and
// irq-suspend-timeout as `rig nicctl set` does: merged field by field from
// defaults, printed by the dry run, carried to the agent in facts'
// NAPIKnobs, and a bad value refused at its line and column.
func TestNAPIKnobs(t *testing.T) {
	const src = `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth0}}
traffic: {group: "239.1.1.1:5000"}
defaults:
  nic: {napi-defer-hard-irqs: 2, gro-flush-timeout: 200000}
arms:
  - name: a
  - name: b
    nic: {gro-flush-timeout: %g, irq-suspend-timeout: %s}
`
	fill := func(g, s string) string {
		return strings.Replace(strings.Replace(src, "%g", g, 1), "%s", s, 1)
	}
	s := load(t, fill("100000", "20000000"))
	a, b := s.Arms[0].Effective.NIC.NAPI, s.Arms[1].Effective.NIC.NAPI
	if *a.DeferHardIRQs != 2 || *a.GROFlushTimeout != 200000 || a.IRQSuspendTimeout != nil ||
		*b.DeferHardIRQs != 2 || *b.GROFlushTimeout != 100000 || *b.IRQSuspendTimeout != 20000000 {
		t.Fatalf("a %+v b %+v", a, b)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil ||
		!strings.Contains(out.String(), "NAPI of eth0: napi_defer_hard_irqs 2, gro_flush_timeout 100000 ns, irq_suspend_timeout (netdev netlink, each NAPI instance) 20000000 ns") {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	if j, err := json.Marshal(s.Arms[1].Effective); err != nil || !strings.Contains(string(j), `"napi":{"napi_defer_hard_irqs":2,"gro_flush_timeout_ns":100000,"irq_suspend_timeout_ns":20000000}`) {
		t.Fatalf("knobs JSON: %s %v", j, err)
	}
	for _, c := range []struct{ g, s, want string }{
		{"-1", "0", "t.yaml:9:30: gro-flush-timeout -1 is negative"},
		{"0", "-5", "t.yaml:9:54: irq-suspend-timeout -5 is negative"},
	} {
		if _, err := Parse("t.yaml", []byte(fill(c.g, c.s))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: %v, want %q", c.g, c.s, err, c.want)
		}
	}
	big := strings.Replace(fill("0", "0"), "napi-defer-hard-irqs: 2", "napi-defer-hard-irqs: 2147483648", 1)
	if _, err := Parse("t.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "t.yaml:5:31: napi-defer-hard-irqs 2147483648 is out of range") {
		t.Errorf("defer out of range: %v", err)
	}
}

// TestNativePollInScenario: a native engine backend in responder.poll is
// refused at its line and column, saying where it runs instead.
func TestNativePollInScenario(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth0}}
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    responder: {poll: "prefer-busy-poll:50"}
`))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:6:23:") || !strings.Contains(err.Error(), "rig respond --engine native --poll prefer-busy-poll:50") {
		t.Fatalf("%v", err)
	}
}
