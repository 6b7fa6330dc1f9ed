package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/hostctl"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/nicctl"
)

func init() {
	register(&command{name: "restore", summary: "undo host changes left by a crashed or killed rig, remove its labs",
		usage: "[--discard] [--host-root DIR]", flags: restoreFlags})
}

func restoreFlags(fs *flag.FlagSet) func(context.Context) error {
	discard := fs.Bool("discard", false, "drop the pending journal WITHOUT restoring (only when its targets are gone, e.g. after a reboot)")
	root := addHostRoot(fs)
	return func(ctx context.Context) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		dir := journal.Dir()
		// Restoring changes the host: no run, nicctl or other restore may
		// change it meanwhile.
		lock, err := journal.LockHost(dir, journal.Self(""))
		if err != nil {
			return err
		}
		defer lock.Unlock()
		lanes, err := journal.Lanes(dir)
		if err != nil {
			return err
		}
		var errs []error
		if *discard {
			n := 0
			for _, d := range lanes {
				dropped, err := journal.Discard(d)
				for _, e := range dropped {
					fmt.Printf("discarded %s %s (previous value %s was NOT restored)\n", e.Kind, e.Target, e.Previous)
				}
				n += len(dropped)
				errs = append(errs, err)
			}
			if err := errors.Join(errs...); err != nil || n > 0 {
				return err
			}
			fmt.Printf("nothing to discard: no pending journal in %s\n", dir)
			return nil
		}
		env := nicctl.NewEnv(*root)
		defer env.Close()
		n := 0
		for _, d := range lanes {
			restored, err := journal.Restore(context.WithoutCancel(ctx), d, hostctl.Handlers(env))
			printRestored(restored)
			n += len(restored)
			errs = append(errs, err)
		}
		removed, err := removeStale(os.Stdout, "rig restore")
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil || n > 0 || removed > 0 {
			return err
		}
		fmt.Printf("nothing to restore: no pending journal in %s, no lab or agent work directory left by a killed rig\n", dir)
		return nil
	}
}
