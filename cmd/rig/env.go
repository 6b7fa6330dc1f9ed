package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/envsnap"
	"github.com/rig-project/rig/internal/hostfs"
)

func init() {
	register(&command{name: "env", summary: "print the environment snapshot (kernel, CPUs, isolation, power, IRQs, cgroup)", run: runEnv})
}

func runEnv(ctx context.Context, args []string) error {
	fs := newFlagSet("env", "[--json] [--iface IF[,IF...]] [--host-root DIR]")
	asJSON := fs.Bool("json", false, "print JSON (the format of env/<host>.json in a run directory)")
	ifaces := fs.String("iface", "", "comma-separated interfaces whose NIC facts to include")
	root := fs.String("host-root", hostfs.Default().Root, "read /proc and /sys below this directory (a fake tree for tests; $"+hostfs.EnvRoot+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("env takes no arguments, got %q", fs.Args())
	}
	var opts envsnap.Options
	if *ifaces != "" {
		opts.Ifaces = strings.Split(*ifaces, ",")
	}
	s := envsnap.Take(ctx, hostfs.FS{Root: *root}, opts)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return s.WriteText(os.Stdout)
}
