package main

import (
	"context"

	"github.com/rig-project/rig/internal/envsnap"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/nicctl"
)

// Wiring between packages that must not import each other: the
// environment snapshot records the NIC facts nicctl reads.
func init() {
	envsnap.NICFacts = func(ctx context.Context, fs hostfs.FS, iface string) (any, error) {
		env := &nicctl.Env{FS: fs, IRQBalance: nicctl.HostIRQBalance{FS: fs}}
		defer env.Close()
		return nicctl.Show(ctx, env, iface)
	}
}
