package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/noise"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
)

func init() {
	register(&command{
		name:    "noise",
		summary: "measure what takes a CPU from a loop that only reads its counter",
		usage:   "--cpu N [--for D] [--sched other|fifo:N] [--format md|json] [--out FILE]",
		flags:   noiseFlags,
	})
}

func noiseFlags(fs *flag.FlagSet) func(context.Context) error {
	var n probe.Noise
	n.Register(fs)
	format := addFormat(fs, "json: one object, docs/noise.md", "md", "json")
	out := fs.String("out", "", "write the result as JSON to `FILE` (noise.json; rig run's agent gives it) instead of printing it")
	return func(ctx context.Context) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		if err := n.Parse(fs); err != nil {
			return cli.Usage(err)
		}
		if err := noise.CheckCPU(hostfs.Default(), n.CPU); err != nil {
			return setupError(err)
		}
		prog, err := native.Find(native.NoiseProgram)
		if err != nil {
			return setupError(err)
		}
		r, err := noise.Run(ctx, noise.Config{CPU: n.CPU, Sched: n.Sched, Duration: n.For, Prog: prog, FS: hostfs.Default(), Stderr: os.Stderr})
		if errors.Is(err, journal.ErrCPUBusy) {
			return cli.Usage(err)
		}
		if err != nil {
			return setupError(err)
		}
		if *out != "" {
			return rundir.WriteJSON(*out, r)
		}
		if format.value == "json" {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}
		return r.WriteMarkdown(os.Stdout)
	}
}
