package main

import (
	"context"
	"flag"
	"os"

	"github.com/rig-project/rig/internal/cli"
)

func init() {
	register(&command{name: "completion", summary: "print the bash or zsh completion script",
		usage: completionUsage, flags: completionFlags})
}

const completionUsage = `bash|zsh

Prints a completion script for rig's commands, subcommands, flags and the
values of --format, generated from the flags this rig defines. Load it in
the running shell:
    source <(rig completion bash)        # or zsh
or install it:
    rig completion bash > /etc/bash_completion.d/rig
    rig completion zsh > "${fpath[1]}/_rig"   # then restart zsh`

func completionFlags(fs *flag.FlagSet) func(context.Context) error {
	return func(ctx context.Context) error {
		if fs.NArg() != 1 {
			return cli.Usagef("want the shell, bash or zsh, got %q", fs.Args())
		}
		switch fs.Arg(0) {
		case "bash":
			return program().Bash(os.Stdout)
		case "zsh":
			return program().Zsh(os.Stdout)
		}
		return cli.Usagef("shell %q: want bash or zsh", fs.Arg(0))
	}
}
