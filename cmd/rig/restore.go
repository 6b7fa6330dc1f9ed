package main

import (
	"context"
	"fmt"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/nicctl"
)

func init() {
	register(&command{name: "restore", summary: "undo host changes left by a crashed or killed rig", run: runRestore})
}

func runRestore(ctx context.Context, args []string) error {
	fs := newFlagSet("restore", "[--discard] [--host-root DIR]")
	discard := fs.Bool("discard", false, "drop the pending journal WITHOUT restoring (only when its targets are gone, e.g. after a reboot)")
	root := fs.String("host-root", "", "restore /proc and /sys below this root (default $RIG_HOST_ROOT or /)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("rig restore takes no arguments, got %q", fs.Args())
	}
	dir := journal.Dir()
	if *discard {
		dropped, err := journal.Discard(dir)
		for _, e := range dropped {
			fmt.Printf("discarded %s %s (previous value %s was NOT restored)\n", e.Kind, e.Target, e.Previous)
		}
		if err == nil && len(dropped) == 0 {
			fmt.Printf("nothing to discard: no pending journal in %s\n", dir)
		}
		return err
	}
	env := nicctlEnv(*root)
	defer env.Close()
	restored, err := journal.Restore(context.WithoutCancel(ctx), dir, nicctl.Handlers(env))
	if err == nil && len(restored) == 0 {
		fmt.Printf("nothing to restore: no pending journal in %s\n", dir)
		return nil
	}
	printRestored(restored)
	return err
}
