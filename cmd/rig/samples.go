package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
)

func init() {
	register(&command{
		name:    "samples",
		summary: "print the joined per-request stamps of a round (CSV)",
		usage:   "ROUND_DIR|FILE [--responder ID] [--format csv]",
		flags:   samplesFlags,
	})
}

func samplesFlags(fs *flag.FlagSet) func(context.Context) error {
	// One form today; --format is there so that scripts and the grammar
	// are the same as every other command's.
	format := addFormat(fs, "one row per sequence: every stamp in ns (empty when missing) and its source", "csv")
	format.alias(fs, "csv")
	id := fs.Uint("responder", 0, "with several responders (fan-out): whose replies to join (its --id)")
	return func(ctx context.Context) error {
		if fs.NArg() != 1 {
			return cli.Usagef("want one round directory or sample file, got %d arguments (e.g. rig samples results/demo-*/arms/block/round-0)", fs.NArg())
		}
		if *id > probe.MaxResponderID {
			return cli.Usagef("--responder %d: want 0..%d", *id, probe.MaxResponderID)
		}
		j, err := samples.JoinDir(fs.Arg(0), uint32(*id))
		if err != nil {
			return err
		}
		for _, p := range j.Problems {
			fmt.Fprintln(os.Stderr, "rig samples: warning:", p)
		}
		return j.WriteCSV(os.Stdout)
	}
}
