package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
)

// TestResponderKnobsJSON: responder.sched and responder.poll cross the
// agent protocol and land in the manifest as the text a scenario writes,
// and read back as the same values.
func TestResponderKnobsJSON(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    responder: {cpu: 1, sched: "fifo:50", poll: "busy-poll:50"}
`)
	k := s.Arms[0].Effective
	if *k.Responder.Sched != (cpusched.Sched{Policy: cpusched.FIFO, Priority: 50}) || *k.Responder.Poll != (probe.Poll{Mode: probe.Block, BusyPollUS: 50}) {
		t.Fatalf("%+v %+v", *k.Responder.Sched, *k.Responder.Poll)
	}
	b, err := json.Marshal(k)
	if err != nil || !strings.Contains(string(b), `"sched":"fifo:50","poll":"busy-poll:50"`) {
		t.Fatalf("%s %v", b, err)
	}
	var back Knobs
	if err := json.Unmarshal(b, &back); err != nil || *back.Responder.Sched != *k.Responder.Sched || *back.Responder.Poll != *k.Responder.Poll {
		t.Fatalf("%+v %v", back.Responder, err)
	}
}
