package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/probe"
)

func TestQuietestForms(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: quietest}
arms:
  - name: all
  - name: list
    responder: {cpu: {quietest: "2-5", window: 2s}}
  - name: allowed
    responder: {cpu: {quietest: allowed, window: 500ms}}
  - name: fixed
    responder: {cpu: 3}
`)
	want := []struct {
		cpu  *int
		q    *Quietest
		text string
	}{
		{nil, &Quietest{}, "the quietest of every CPU rig may use there (ranked over 1s on the host before each round)"},
		{nil, &Quietest{CPUs: []int{2, 3, 4, 5}, Window: 2 * time.Second}, "the quietest of 2-5 (ranked over 2s on the host before each round)"},
		{nil, &Quietest{Window: 500 * time.Millisecond}, "the quietest of every CPU rig may use there (ranked over 500ms"},
		{new(3), nil, ""},
	}
	for i, a := range s.Arms {
		r := a.Effective.Responder
		if fmt.Sprint(r.CPU != nil) != fmt.Sprint(want[i].cpu != nil) || (r.CPU != nil && *r.CPU != *want[i].cpu) {
			t.Errorf("arm %s: cpu %v", a.Name, r.CPU)
		}
		if (r.Quietest == nil) != (want[i].q == nil) || r.Quietest != nil && (fmt.Sprint(r.Quietest.CPUs) != fmt.Sprint(want[i].q.CPUs) || r.Quietest.Window != want[i].q.Window) {
			t.Errorf("arm %s: quietest %+v, want %+v", a.Name, r.Quietest, want[i].q)
		}
		if r.Quietest != nil && !strings.Contains(r.Quietest.String(), want[i].text) {
			t.Errorf("arm %s: %q", a.Name, r.Quietest.String())
		}
	}
	// The knobs cross the agent protocol and land in the manifest as JSON.
	b, err := json.Marshal(s.Arms[1].Effective)
	if err != nil || !strings.Contains(string(b), `"quietest":{"cpus":[2,3,4,5],"window_ns":2000000000}`) {
		t.Fatalf("%s %v", b, err)
	}
	var back Knobs
	if err := json.Unmarshal(b, &back); err != nil || back.Responder.Quietest == nil || back.Responder.Quietest.Window != 2*time.Second {
		t.Fatalf("%+v %v", back.Responder, err)
	}
	if err := Validate(s, factsFor(s, bigHost())); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"responder process: CPU the quietest of every CPU rig may use there (ranked over 1s on the host before each round)  [defaults]",
		"responder process: CPU the quietest of 2-5 (ranked over 2s"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("dry run lacks %q:\n%s", w, out.String())
		}
	}
}

// What is about the responder CPU holds for every candidate: an arm whose
// candidates are not all isolated is skipped, naming them; its C-state
// names are checked on each; its SMT-sibling load needs a sibling on each.
func TestQuietestCandidatesChecked(t *testing.T) {
	s := load(t, `name: t
hosts:
  h: {via: local, roles: [sender, responder], iface: eth0}
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: base
    responder: {cpu: {quietest: "1-3"}}
    requires: [isolated]
  - name: wide
    responder: {cpu: {quietest: "1-4"}}
    requires: [isolated]
  - name: sib
    responder: {cpu: {quietest: "1-3"}}
    smt-sibling: {load: --cpu 1}
    cstate: {disable: [C6]}
`)
	if err := Validate(s, factsFor(s, bigHost())); err != nil {
		t.Fatal(err)
	}
	if s.Arms[0].Skip != "" || s.Arms[2].Skip != "" || s.Arms[1].Skip != "CPU 4 is not isolated (isolated: 1-3)" {
		t.Fatalf("skips: %q %q %q", s.Arms[0].Skip, s.Arms[1].Skip, s.Arms[2].Skip)
	}
	f := bigHost()
	f.Idle = []string{"POLL", "C1"}
	f.Siblings = map[int][]int{2: {2, 15}}
	err := Validate(s, factsFor(s, f))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || !strings.Contains(list[0].Error(), "idle state C6 does not exist on CPU 1") {
		t.Fatalf("one error for the cstate name, reported once: %v", err)
	}
	f.Idle = []string{"POLL", "C1", "C6"}
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Arms[2].Skip, "CPU 1 has no SMT sibling") || !strings.Contains(s.Arms[2].Skip, "CPU 3 has no SMT sibling") || strings.Contains(s.Arms[2].Skip, "CPU 2 ") {
		t.Fatalf("sib skip: %q", s.Arms[2].Skip)
	}
}

// responder.cpu is one field: an arm's number replaces a default quietest,
// and the other way round.
func TestQuietestMerge(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: 1, poll: busy}
arms:
  - name: q
    responder: {cpu: quietest}
`)
	r := s.Arms[0].Effective.Responder
	if r.CPU != nil || r.Quietest == nil || r.Poll == nil || r.Poll.Mode != probe.Busy {
		t.Fatalf("%+v", r)
	}
}

// Power knobs on the responder CPU's policy need a CPU known before the
// run: with quietest they must name their CPUs.
func TestQuietestPowerNeedsCPUs(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    responder: {cpu: quietest}
    power: {governor: performance}
`))
	var list ErrorList
	if !errors.As(err, &list) || !strings.Contains(list[0].Error(), "quietest picks that CPU only when the round starts") || !strings.Contains(list[0].Error(), "power.cpus") {
		t.Fatalf("%v", err)
	}
}
