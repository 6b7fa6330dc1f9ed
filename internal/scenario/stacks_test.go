package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/probe"
)

// TestShippedStacks: stacks.yaml's arms are the kernel, exasock and Onload
// under the native engine, Onload asked for its hardware stamps, and what
// each arm sets reaches the manifest's knobs (their JSON).
func TestShippedStacks(t *testing.T) {
	s, err := Load("../../scenarios/stacks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kernel": "kernel", "exasock": "exasock", "onload": "onload"}
	for _, a := range s.Arms {
		r := a.Effective.Responder
		if r.Engine == nil || *r.Engine != probe.EngineNative || r.Stack == nil || r.Stack.String() != want[a.Name] {
			t.Errorf("arm %s: engine %v, stack %v", a.Name, r.Engine, r.Stack)
			continue
		}
		b, err := json.Marshal(a.Effective)
		if err != nil || !strings.Contains(string(b), `"engine":"native","stack":{"name":"`+want[a.Name]+`"`) {
			t.Errorf("arm %s knobs JSON: %s, %v", a.Name, b, err)
		}
		delete(want, a.Name)
	}
	if len(want) != 0 || s.Arms[2].Effective.Responder.Stack.Env != "EF_RX_TIMESTAMPING=3,EF_TX_TIMESTAMPING=3" {
		t.Errorf("arms missing %v, onload %+v", want, s.Arms[2].Effective.Responder.Stack)
	}
}
