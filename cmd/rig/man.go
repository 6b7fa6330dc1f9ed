package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/rig-project/rig/internal/cli"
)

func init() {
	register(&command{name: "man", summary: "write the man pages rig.1 and rig-COMMAND.1 to a directory",
		usage: manUsage, flags: manFlags})
}

const manUsage = `DIR

Writes rig.1 and one rig-COMMAND.1 per command to DIR (created when
missing), generated from the flags this rig defines. Read one with
'man -l DIR/rig-run.1', or install them: rig man /usr/local/share/man/man1`

func manFlags(fs *flag.FlagSet) func(context.Context) error {
	return func(ctx context.Context) error {
		if fs.NArg() != 1 {
			return cli.Usagef("want the directory to write the pages to, got %q", fs.Args())
		}
		dir := fs.Arg(0)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		pages := program().ManPages()
		for _, name := range slices.Sorted(maps.Keys(pages)) {
			if err := os.WriteFile(filepath.Join(dir, name), pages[name], 0o644); err != nil {
				return err
			}
		}
		fmt.Printf("wrote %d man pages to %s\n", len(pages), dir)
		return nil
	}
}
