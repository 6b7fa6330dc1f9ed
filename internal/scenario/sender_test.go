package scenario

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/probe"
)

// TestSenderKnob: sender.engine and sender.poll are rig send's --engine
// and --poll, merged defaults → arm field by field, in the manifest's
// knobs as the text a scenario writes, and in the dry run per arm.
func TestSenderKnob(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
defaults:
  sender: {engine: native}
  responder: {engine: native}
arms:
  - name: native
  - name: native-busy
    sender: {poll: busy}
  - name: go
    sender: {engine: go, poll: block}
`)
	want := []struct {
		engine probe.Engine
		poll   *probe.PollMode
		json   string
	}{
		{probe.EngineNative, nil, `"sender":{"engine":"native","poll":null,"stack":null}`},
		{probe.EngineNative, ptrTo(probe.Busy), `"sender":{"engine":"native","poll":"busy","stack":null}`},
		{probe.EngineGo, ptrTo(probe.Block), `"sender":{"engine":"go","poll":"block","stack":null}`},
	}
	for i, a := range s.Arms {
		e := a.Effective.Sender
		if e.Engine == nil || *e.Engine != want[i].engine || (e.Poll == nil) != (want[i].poll == nil) || (e.Poll != nil && *e.Poll != *want[i].poll) {
			t.Errorf("arm %s: sender %+v", a.Name, e)
		}
		b, err := json.Marshal(a.Effective)
		if err != nil || !strings.Contains(string(b), want[i].json) {
			t.Errorf("arm %s: knobs JSON %s, %v", a.Name, b, err)
		}
		var back Knobs
		if err := json.Unmarshal(b, &back); err != nil || *back.Sender.Engine != *e.Engine {
			t.Errorf("arm %s: JSON back %+v, %v", a.Name, back.Sender, err)
		}
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"  native (baseline)\n    sender process: engine native  [defaults]\n", "  native-busy\n    sender process: engine native, poll busy\n", "  go\n    sender process: engine go, poll block\n"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("dry run lacks %q:\n%s", l, out.String())
		}
	}
}

// TestSenderKnobRefused: what rig send refuses is refused at the line and
// column where the scenario writes it, with the reason and the fix: a
// responder's engine or poll for the sender, the native sender with more
// than one responder (wherever its engine is written), and sender: where
// it means nothing.
func TestSenderKnobRefused(t *testing.T) {
	const head = "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\n"
	for _, c := range []struct{ src, want, hint string }{
		{head + "arms:\n  - name: a\n    sender: {engine: xdp}\n", "t.yaml:6:22: engine xdp answers requests, it does not send them", "use go or native for the sender"},
		{head + "arms:\n  - name: a\n    sender: {engine: tc}\n", "t.yaml:6:22: engine tc answers requests", "responder: {engine: tc}"},
		{head + "arms:\n  - name: a\n    sender: {engine: c}\n", `t.yaml:6:22: engine "c": want go, native`, "use go or native"},
		{head + "arms:\n  - name: a\n    sender: {engine: native, poll: epoll}\n", `t.yaml:6:36: sender poll "epoll": the sender's one thread waits for replies by block or busy`, "use block"},
		{head + "defaults:\n  sender: {poll: \"busy-poll:50\"}\narms:\n  - name: a\n", `t.yaml:5:18: sender poll "busy-poll:50"`, "responder: {poll: ...}"},
		{head + "arms:\n  - name: a\n    sender: {}\n", "t.yaml:6:5: sender sets nothing", "set engine: native"},
		{head + "responders: 2\ndefaults:\n  sender: {engine: native}\narms:\n  - name: a\n  - name: b\n", "t.yaml:6:20: engine native for the sender, and 2 responders answer each request: the native sender files one responder's replies", "use engine: go for the sender of a fan-out"},
		{"name: t\nhosts:\n  a: {via: local, roles: [sender, responder], iface: eth1}\n  b: {via: ssh b, roles: [responder], iface: eth1}\ntraffic: {group: 239.1.1.1:5000}\narms:\n  - name: x\n    sender: {engine: native}\n",
			"t.yaml:8:22: engine native for the sender, and 2 responders", "use engine: go"},
		{head + "responders: 2\narms:\n  - name: x\n    responders: {responder1: {sender: {poll: busy}}}\n", "t.yaml:7:31: sender: under responders: the one sender's engine is not a responder's", "write sender: in the arm or in defaults"},
	} {
		_, err := Parse("t.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error()[strings.Index(err.Error(), c.want):], c.hint) {
			t.Errorf("%s\ngot %v\nwant %q, hint %q", c.src, err, c.want, c.hint)
		}
	}
	// The fan-out refusal is said once for the defaults all arms share.
	_, err := Parse("t.yaml", []byte(head+"responders: 2\ndefaults:\n  sender: {engine: native}\narms:\n  - name: a\n  - name: b\n"))
	if n := strings.Count(err.Error(), "engine native for the sender"); n != 1 {
		t.Errorf("said %d times:\n%v", n, err)
	}
}

// TestSenderNativeProgram: an arm's native sender needs rig-send-native
// on the sender host; the host's facts say whether rig send finds it, and
// a host without it refuses the scenario before anything changes, at the
// engine's line with what is missing; a host that does not say warns.
func TestSenderNativeProgram(t *testing.T) {
	const src = `name: t
hosts:
  snd: {via: ssh snd, roles: [sender], iface: eth0}
  rsp: {via: local, roles: [responder], iface: eth0}
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: go
  - name: native
    sender: {engine: native}
`
	missing := "the native program rig-send-native is missing (no executable /opt/rig/rig-send-native): build it with `make build`"
	found := ""
	for _, c := range []struct {
		snd  *string
		err  string
		warn string
	}{
		{&missing, "t.yaml:9:22: engine native for the sender, and on host snd " + missing, ""},
		{nil, "", "t.yaml:9:22: arm native: cannot tell whether rig send --engine native starts on host snd"},
		{&found, "", ""},
	} {
		s := load(t, src)
		snd := smallHost()
		snd.SendNative = c.snd
		err := Validate(s, factsOf(map[string]hostOf{"snd": snd, "rsp": smallHost()}))
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "hint: give host snd the native sender's program as said, or use engine: go for the sender")):
			t.Errorf("sender's facts %v: %v, want %q", c.snd, err, c.err)
		case c.warn == "" && len(s.Warnings) > 0, c.warn != "" && !strings.Contains(s.Warnings.Error(), c.warn):
			t.Errorf("sender's facts %v: warnings %v, want %q", c.snd, s.Warnings, c.warn)
		}
	}
}

// TestResponderNativeProgram: the same for rig-respond-native on a
// responder host, refused at the engine where it is written (here under
// defaults) before any round changed a host.
func TestResponderNativeProgram(t *testing.T) {
	const src = `name: t
hosts:
  snd: {via: local, roles: [sender], iface: eth0}
  rsp: {via: ssh rsp, roles: [responder], iface: eth0}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {engine: native}
arms: [{name: a}, {name: b}]
`
	missing := "the native program rig-respond-native is missing: build it with `make build`"
	for _, c := range []struct {
		why     *string
		unknown bool
		err     string
		warn    string
	}{
		{why: &missing, err: "t.yaml:7:23: engine native for the responder, and on host rsp " + missing},
		{unknown: true, warn: "t.yaml:7:23: arm a: cannot tell whether rig respond --engine native starts on host rsp"},
		{},
	} {
		s := load(t, src)
		rsp := smallHost()
		rsp.RespondNative, rsp.RespondNativeUnknown = c.why, c.unknown
		err := Validate(s, factsOf(map[string]hostOf{"snd": smallHost(), "rsp": rsp}))
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Count(err.Error(), "engine native for the responder") != 1):
			t.Errorf("responder's facts %v: %v, want %q once", c.why, err, c.err)
		case c.warn == "" && len(s.Warnings) > 0, c.warn != "" && !strings.Contains(s.Warnings.Error(), c.warn):
			t.Errorf("responder's facts %v: warnings %v, want %q", c.why, s.Warnings, c.warn)
		}
	}
}

// TestSenderStack: sender.stack and stack-env are rig send's --stack and
// --stack-env, read by the responder's parser and merged defaults → arm,
// in the manifest's knobs and the dry run; refused where they mean
// nothing (the Go engine, custom, stack-env without a stack to read it),
// and checked against the sender host's facts, not the responder's.
func TestSenderStack(t *testing.T) {
	const src = `name: t
hosts:
  snd: {via: ssh snd, roles: [sender], iface: eth0}
  rsp: {via: local, roles: [responder], iface: eth0}
traffic: {group: "239.1.1.1:5000"}
defaults:
  sender: {engine: native, stack: onload, stack-env: [EF_POLL_USEC=100000]}
arms:
  - name: onload
  - name: kernel
    sender: {stack: kernel}
`
	s := load(t, src)
	for i, want := range []string{`"stack":{"name":"onload","env":"EF_POLL_USEC=100000"}`, `"stack":{"name":"kernel"}`} {
		b, _ := json.Marshal(s.Arms[i].Effective.Sender)
		if !strings.Contains(string(b), want) {
			t.Errorf("arm %s: sender %s, want %s", s.Arms[i].Name, b, want)
		}
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"sender process: engine native, stack onload (launcher onload EF_POLL_USEC=100000; refused before the run where the sender host lacks it)  [defaults]\n",
		"sender process: engine native, stack kernel\n"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("dry run lacks %q:\n%s", l, out.String())
		}
	}
	// The sender host's facts decide: smallHost has no onload.
	for _, c := range []struct {
		snd, rsp *StaticFacts
		err      string
		warn     string
	}{
		{smallHost(), &StaticFacts{Online: []int{0, 1}, Ifaces: []string{"eth0"}, Stacks: map[probe.StackName]string{"onload": ""}},
			"t.yaml:7:35: stack onload is not on host snd: its launcher onload is not on PATH", ""},
		{&StaticFacts{Online: []int{0, 1}, Ifaces: []string{"eth0"}}, smallHost(), "", "t.yaml:7:35: arm onload: cannot tell whether host snd has stack onload"},
		{&StaticFacts{Online: []int{0, 1}, Ifaces: []string{"eth0"}, Stacks: map[probe.StackName]string{"onload": ""}}, smallHost(), "", ""},
	} {
		s := load(t, src)
		c.snd.SendNative = new("")
		err := Validate(s, factsOf(map[string]hostOf{"snd": c.snd, "rsp": c.rsp}))
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "install OpenOnload") || strings.Count(err.Error(), "stack onload is not") != 1):
			t.Errorf("sender's stacks %v: %v, want %q once", c.snd.Stacks, err, c.err)
		case c.warn == "" && len(s.Warnings) > 0, c.warn != "" && (len(s.Warnings) == 0 || !strings.Contains(s.Warnings.Error(), c.warn) || !strings.Contains(s.Warnings.Error(), "rig send refuses the round")):
			t.Errorf("sender's stacks %v: warnings %v, want %q", c.snd.Stacks, s.Warnings, c.warn)
		}
	}
	const head = "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\n"
	for _, c := range []struct{ src, want, hint string }{
		{head + "arms:\n  - name: a\n    sender: {stack: vma}\n", "t.yaml:6:21: stack vma needs engine: native: the Go engine makes its socket calls as raw system calls", "add engine: native to sender"},
		{head + "defaults:\n  sender: {engine: go, stack: xlio}\narms:\n  - name: a\n  - name: b\n", "t.yaml:5:31: stack xlio needs engine: native", "add engine: native to sender"},
		{head + "arms:\n  - name: a\n    sender: {engine: native, stack: custom}\n", "t.yaml:6:37: stack custom is not a scenario's", "rig respond and rig send --stack custom"},
		{head + "arms:\n  - name: a\n    sender: {engine: native, stack-env: [A=1]}\n", "t.yaml:6:30: stack-env without stack", "add stack: onload"},
		{head + "arms:\n  - name: a\n    sender: {engine: native, stack: kernel, stack-env: [A=1]}\n", "t.yaml:6:45: stack-env with stack kernel", "name the stack it is for"},
		{head + "arms:\n  - name: a\n    sender: {engine: native, stack: vma, stack-env: [A]}\n", `t.yaml:6:54: "A" is not NAME=VALUE`, "one per item"},
	} {
		_, err := Parse("t.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error()[strings.Index(err.Error(), c.want):], c.hint) {
			t.Errorf("%s\ngot %v\nwant %q, hint %q", c.src, err, c.want, c.hint)
		}
		if err != nil && strings.Count(err.Error(), "needs engine") > 1 {
			t.Errorf("said more than once:\n%v", err)
		}
	}
}
