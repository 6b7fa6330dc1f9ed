package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/probe"
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

// TestNativePollInScenario: responder.poll takes every backend of rig
// respond --engine native, as the probe package's Poll, and refuses them
// with the Go engine at the line and column where poll is written.
func TestNativePollInScenario(t *testing.T) {
	const src = `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth0}}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {engine: %s}
arms:
  - name: a
    responder: {poll: "%s"}
`
	for _, p := range []string{"prefer-busy-poll:50", "prefer-busy-poll:50:16", "epoll", "io-uring", "io-uring-sqpoll"} {
		s, err := Parse("t.yaml", []byte(fmt.Sprintf(src, "native", p)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want, _ := probe.ParseEnginePoll(p, probe.EngineNative)
		if got := s.Arms[0].Effective.Responder.Poll; got == nil || *got != want || got.String() != p {
			t.Errorf("%s: poll %v", p, got)
		}
		_, err = Parse("t.yaml", []byte(fmt.Sprintf(src, "go", p)))
		if err == nil || !strings.Contains(err.Error(), "t.yaml:8:17: poll "+p+" needs engine: native") {
			t.Errorf("%s with engine go: %v", p, err)
		}
	}
}

// TestPreferBusyPollNAPI: prefer-busy-poll on a host whose NIC does not
// defer its interrupts, and an arm that does not set them, is a warning at
// the poll's position (the arm still runs); the arm's nic knobs or the host's own silence it,
// and a host that did not report its knobs cannot tell.
func TestPreferBusyPollNAPI(t *testing.T) {
	const src = `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth1}}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {engine: native, poll: "prefer-busy-poll:50"}
arms:
  - name: off
  - name: on
    nic: {napi-defer-hard-irqs: 2, gro-flush-timeout: 200000}
`
	u32, u64 := func(v uint32) *uint32 { return &v }, func(v uint64) *uint64 { return &v }
	for _, c := range []struct {
		napi map[string]facts.NAPIKnobs
		want string
	}{
		{map[string]facts.NAPIKnobs{"eth1": {DeferHardIRQs: u32(0), GROFlushTimeout: u64(0)}}, "eth1 has napi_defer_hard_irqs 0 and gro_flush_timeout 0 ns, and the arm sets no nic napi-defer-hard-irqs"},
		{map[string]facts.NAPIKnobs{"eth1": {DeferHardIRQs: u32(2), GROFlushTimeout: u64(200000)}}, ""},
		{nil, "cannot tell whether eth1 on host h holds its interrupts off"},
	} {
		s := load(t, src)
		f := bigHost()
		f.NAPI = c.napi
		if err := Validate(s, factsFor(s, f)); err != nil {
			t.Fatal(err)
		}
		// One warning, for arm off, at the poll it inherits (5:37).
		w := s.Warnings.Error()
		if (c.want == "") != (len(s.Warnings) == 0) || strings.Contains(w, "arm on:") || !strings.Contains(w, c.want) ||
			(c.want != "" && (len(s.Warnings) != 1 || !strings.Contains(w, ":5:37: ") || !strings.Contains(w, "arm off:"))) {
			t.Errorf("host %v: warnings %q; want %q", c.napi, w, c.want)
		}
	}
}

// TestNativeCannotTell: a host whose agent reports neither its native
// program, its stacks nor io_uring gives a warning at the arm's
// responder.engine, responder.stack and responder.poll, not a refusal
// and not silence.
func TestNativeCannotTell(t *testing.T) {
	s := load(t, `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth1}}
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    responder: {engine: native, stack: onload, poll: io-uring}
`)
	f := bigHost()
	f.Stacks, f.IOUring, f.RespondNativeUnknown = nil, nil, true
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatal(err)
	}
	w := s.Warnings.Error()
	for _, want := range []string{"t.yaml:6:25: arm a: cannot tell whether rig respond --engine native starts on host h", "t.yaml:6:40: arm a: cannot tell whether host h has stack onload", "t.yaml:6:54: arm a: cannot tell whether io_uring works on host h"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if len(s.Warnings) != 3 || len(s.Arms[0].Notes) != 0 {
		t.Errorf("%d warnings, notes %q:\n%s", len(s.Warnings), s.Arms[0].Notes, w)
	}
}
