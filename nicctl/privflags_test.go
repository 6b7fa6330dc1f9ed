package nicctl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestBypassOnlyRefused: an ExaNIC port in bypass-only mode gets no kernel
// traffic at all, so preparing it — in any mode — fails at once, naming
// the flag and the fix, and writes nothing.
func TestBypassOnlyRefused(t *testing.T) {
	for _, mode := range []tstamp.Mode{tstamp.Auto, tstamp.Software} {
		n := nicfake.New(nicfake.ExaNIC(), "exa0")
		n.SetPrivFlag(facts.PrivBypassOnly, true)
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
