package facts

import (
	"testing"

	"github.com/rig-project/rig/internal/nicfake"
)

// TestPrivFlags reads a driver's private flags byte for byte (ExaNIC's,
// through its profile) and none for a driver without them.
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
	if f, err := (&NIC{TS: nicfake.New(nicfake.Veth(), "eth9")}).PrivFlags("eth9"); err != nil || len(f) != 0 {
		t.Fatalf("a driver without private flags: %v %v", f, err)
	}
}

// TestRealPrivFlagsLo asks the host's kernel for lo's private flags (none:
// an empty set, not an error). qemu-user does not translate the ethtool
// ioctl, so test-arm64 skips it with the other TestReal tests.
func TestRealPrivFlagsLo(t *testing.T) {
	if f, err := (&NIC{}).PrivFlags("lo"); err != nil || f == nil {
		t.Fatalf("the host's lo: %v %v", f, err)
	}
}
