package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/envsnap"
)

func init() {
	register(&command{name: "env", summary: "print the environment snapshot (kernel, CPUs, isolation, power, IRQs, cgroup)",
		usage: "[--format text|json] [--iface IF[,IF...]] [--host-root DIR]", flags: envFlags})
}

func envFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "json is the form of env/<host>.json in a run directory", "text", "json")
	ifaces := fs.String("iface", "", "comma-separated interfaces whose NIC facts to include")
	root := addHostRoot(fs)
	return func(ctx context.Context) error {
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
}
