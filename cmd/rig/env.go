package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/envsnap"
)

func init() {
	register(&command{name: "env", summary: "print the environment snapshot (kernel, CPUs, isolation, power, IRQs, cgroup)", run: runEnv})
}

func runEnv(ctx context.Context, args []string) error {
	fs := newFlagSet("env", "[--format text|json] [--iface IF[,IF...]] [--host-root DIR]")
	format := addFormat(fs, "json is the form of env/<host>.json in a run directory", "text", "json")
	ifaces := fs.String("iface", "", "comma-separated interfaces whose NIC facts to include")
	root := addHostRoot(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	var opts envsnap.Options
	if *ifaces != "" {
		opts.Ifaces = strings.Split(*ifaces, ",")
	}
	s := envsnap.Take(ctx, *root, opts)
	if format.value == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return s.WriteText(os.Stdout)
}
