package nicctl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestPrivFlags reads a driver's private flags byte for byte (ExaNIC's,
// through its profile) and none for a driver without them.
func TestPrivFlags(t *testing.T) {
	n := nicfake.New(nicfake.ExaNIC(), "exa0")
	env := &Env{TS: n}
	f, err := env.PrivFlags("exa0")
	if err != nil || len(f) != 4 || f[PrivBypassOnly] {
		t.Fatalf("exanic: %v %v", f, err)
	}
	n.SetPrivFlag("mirror_rx", true)
	n.SetPrivFlag(PrivBypassOnly, true)
	if f, err = env.PrivFlags("exa0"); err != nil || !f[PrivBypassOnly] || !f["mirror_rx"] || f["bridging"] {
		t.Fatalf("exanic, bypass_only and mirror_rx set: %v %v", f, err)
	}
	if f, err := (&Env{TS: nicfake.New(nicfake.MLX5(), "eth9")}).PrivFlags("eth9"); err != nil || len(f) != 0 {
		t.Fatalf("a driver without private flags: %v %v", f, err)
	}
}

// TestRealPrivFlagsLo asks the host's kernel for lo's private flags (none:
// an empty set, not an error). qemu-user does not translate the ethtool
// ioctl, so test-arm64 skips it with the other TestReal tests.
func TestRealPrivFlagsLo(t *testing.T) {
	if f, err := (&Env{}).PrivFlags("lo"); err != nil || f == nil {
		t.Fatalf("the host's lo: %v %v", f, err)
	}
}

// TestBypassOnlyRefused: an ExaNIC port in bypass-only mode gets no kernel
// traffic at all, so preparing it — in any mode — fails at once, naming
// the flag and the fix, and writes nothing.
func TestBypassOnlyRefused(t *testing.T) {
	for _, mode := range []tstamp.Mode{tstamp.Auto, tstamp.Software} {
		n := nicfake.New(nicfake.ExaNIC(), "exa0")
		n.SetPrivFlag(PrivBypassOnly, true)
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		env.TS = n
		j, _ := openJournal(t, env)
		_, err := PrepareTimestamping(context.Background(), env, j, "exa0", TSRequest{Mode: mode, Need: tstamp.NeedProbe})
		if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "bypass-only mode") ||
			!strings.Contains(err.Error(), "ethtool --set-priv-flags exa0 bypass_only off") || len(n.Sets()) != 0 {
			t.Fatalf("%s: %v (sets %v)", mode, err, n.Sets())
		}
	}
}
