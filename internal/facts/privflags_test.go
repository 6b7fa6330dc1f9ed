package facts

import (
	"testing"

	"github.com/rig-project/rig/internal/nicfake"
)

// TestPrivFlags reads a driver's private flags byte for byte (ExaNIC's,
// through its profile), none for a driver without them, and the host's
// for lo.
func TestPrivFlags(t *testing.T) {
	n := nicfake.New(nicfake.ExaNIC(), "exa0")
	env := &NIC{TS: n}
	f, err := env.PrivFlags("exa0")
	if err != nil || len(f) != 4 || f[PrivBypassOnly] {
		t.Fatalf("exanic: %v %v", f, err)
	}
	n.SetPrivFlag("mirror_rx", true)
	n.SetPrivFlag(PrivBypassOnly, true)
	if f, err = env.PrivFlags("exa0"); err != nil || !f[PrivBypassOnly] || !f["mirror_rx"] || f["bridging"] {
		t.Fatalf("exanic, bypass_only and mirror_rx set: %v %v", f, err)
	}
	if f, err := (&NIC{TS: nicfake.New(nicfake.MLX5(), "eth9")}).PrivFlags("eth9"); err != nil || len(f) != 0 {
		t.Fatalf("a driver without private flags: %v %v", f, err)
	}
	if f, err := (&NIC{}).PrivFlags("lo"); err != nil || f == nil {
		t.Fatalf("the host's lo: %v %v", f, err)
	}
}
