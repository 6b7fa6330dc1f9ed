// Package netlabtest builds throw-away netlab topologies for tests of other
// packages (sender, responder, capture, nicctl, the runner).
package netlabtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/testbin"
)

// New builds a lab with a unique name and returns its topology. It gates
// the test with testbin.Integration (skipped under -short or when not
// root), fails it when the lab cannot be built,
// and registers a cleanup (which runs after failures and panics too) that
// removes the lab and fails the test if any of its namespaces survive.
func New(t testing.TB, opts netlab.Options) *netlab.Topology {
	t.Helper()
	testbin.Integration(t)
	name := netlab.UniqueName("t")
	// Registered before Up so that a half-built lab is removed as well.
	t.Cleanup(func() {
		if err := netlab.Down(name); err != nil {
			t.Errorf("netlabtest: removing lab %s: %v", name, err)
		}
		for _, ns := range netlab.Namespaces(name) {
			if _, err := os.Lstat(filepath.Join("/run/netns", ns)); err == nil {
				t.Errorf("netlabtest: netns %s still exists after Down", ns)
			}
		}
		if _, err := os.Lstat(netlab.Path(name)); err == nil {
			t.Errorf("netlabtest: %s still exists after Down", netlab.Path(name))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if opts.Owner == nil {
		// A test killed before its cleanup leaves a stale lab that
		// `rig restore` removes.
		self := owner.Self()
		opts.Owner = &self
	}
	topo, err := netlab.Up(ctx, name, opts)
	if err != nil {
		t.Fatalf("netlabtest: building lab %s: %v", name, err)
	}
	return topo
}
