package main

import (
	"context"
	"flag"
	"os"

	"github.com/rig-project/rig/internal/cli"
)

func init() {
	register(&command{name: "completion", summary: "print the bash, zsh or fish completion script",
		usage: completionUsage, flags: completionFlags})
}

const completionUsage = `bash|zsh|fish

Prints a completion script for rig's commands, subcommands, flags and the
values of --format, generated from the flags this rig defines. Load it in
the running shell:
    source <(rig completion bash)        # or zsh
    rig completion fish | source
or install it:
    rig completion bash > /etc/bash_completion.d/rig
    rig completion zsh > "${fpath[1]}/_rig"   # then restart zsh
    rig completion fish > ~/.config/fish/completions/rig.fish`

func completionFlags(fs *flag.FlagSet) func(context.Context) error {
	return func(ctx context.Context) error {
		if fs.NArg() != 1 {
			return cli.Usagef("want the shell, bash, zsh or fish, got %q", fs.Args())
		}
		switch fs.Arg(0) {
		case "bash":
			return program().Bash(os.Stdout)
		case "zsh":
			return program().Zsh(os.Stdout)
		case "fish":
			return program().Fish(os.Stdout)
		}
		return cli.Usagef("shell %q: want bash, zsh or fish", fs.Arg(0))
	}
}
