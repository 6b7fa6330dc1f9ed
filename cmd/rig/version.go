package main

import (
	"context"
	"fmt"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/internal/wire"
)

func init() {
	register(&command{name: "version", summary: "print rig, wire, sample, run-directory and agent protocol versions", run: func(ctx context.Context, args []string) error {
		fs := newFlagSet("version", "")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if err := noArgs(fs); err != nil {
			return err
		}
		fmt.Println(version.String())
		fmt.Printf("wire format %d, sample format %d, run directory format %d, agent protocol %s %d\n",
			wire.Version, samples.FormatVersion, rundir.FormatVersion, agent.Proto, agent.Version)
		return nil
	}})
}
