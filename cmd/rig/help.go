package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/rig-project/rig/internal/clidoc"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/version"
)

func mainUsage(w io.Writer) {
	fmt.Fprintln(w, "rig: hardware-timestamped round-trip latency test rig")
	fmt.Fprintln(w, "\nusage: rig COMMAND [SUBCOMMAND] [ARGUMENTS] [flags]\n\ncommands:")
	for _, n := range commandNames() {
		c := commands[n]
		fmt.Fprint(w, clidoc.Wrap(c.summary, fmt.Sprintf("  %-14s ", n), strings.Repeat(" ", 17), 78))
		for _, s := range c.subs {
			fmt.Fprint(w, clidoc.Wrap(s.summary, fmt.Sprintf("  %-14s ", n+" "+s.name), strings.Repeat(" ", 17), 78))
		}
	}
	fmt.Fprintln(w, `
Flags go before, between or after the arguments; "--" ends them. Where a
command's output has several forms, --format chooses one (text, md, csv,
json; --json is short for --format json). rig --version is rig version.
'rig COMMAND -h' (or 'rig help COMMAND') prints the flags of one command.`)
	fmt.Fprintln(w, "\nexit status:")
	writeExitStatus(w, "  ")
}

// writeExitStatus prints the exit status table, one status a line (wrapped
// at 78 columns with the given indent).
func writeExitStatus(w io.Writer, indent string) {
	for _, e := range exitStatus {
		fmt.Fprint(w, clidoc.Wrap(fmt.Sprintf("%d %s", e.code, e.meaning), indent, indent+"  ", 78))
	}
}

// subUsage is the help of a command with subcommands.
func subUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: rig %s %s [flags]\n\n%s\n\n", c.name, strings.Join(c.subNames(), "|"), c.summary)
	for _, s := range c.subs {
		fmt.Fprint(w, clidoc.Wrap(s.summary, fmt.Sprintf("  %-8s ", s.name), strings.Repeat(" ", 11), 78))
	}
	fmt.Fprintf(w, "\n'rig %s SUBCOMMAND -h' prints the flags of one.\n", c.name)
}

// program is rig as clidoc renders it: every command with the flags it
// defines (describe), the exit statuses.
func program() *clidoc.Program {
	p := &clidoc.Program{Name: "rig", Summary: "hardware-timestamped round-trip latency test rig", Version: version.Version,
		Synopsis: "COMMAND [SUBCOMMAND] [ARGUMENTS] [flags]", Description: programDescription}
	for _, e := range exitStatus {
		p.ExitStatus = append(p.ExitStatus, clidoc.ExitStatus{Code: e.code, Meaning: e.meaning})
	}
	p.Environment = []clidoc.Entry{
		{Name: journal.EnvDir, Meaning: "the directory of the change journal and its lock (default " + journal.DefaultDir + "); each host's agent uses its own"},
		{Name: hostfs.EnvRoot, Meaning: "the root below which /proc and /sys are read and changed (default /; --host-root sets it for one command)"},
		{Name: netlab.EnvDir, Meaning: "where the emulated labs are described (default " + netlab.DefaultDir + ")"},
		{Name: power.EnvTunedAdm, Meaning: "the tuned-adm rig runs for tuned knobs and facts (default tuned-adm from PATH)"},
	}
	p.Files = []clidoc.Entry{
		{Name: filepath.Join(journal.DefaultDir, journal.FileName), Meaning: "every host change rig made and has not put back yet, one JSON line each; rig restore undoes them"},
		{Name: netlab.DefaultDir, Meaning: "one NAME.json per emulated lab that rig lab up built (rig lab down and rig restore remove them)"},
	}
	doc := func(path string, c *command) clidoc.Command {
		d := describe(leaf{path, c})
		return clidoc.Command{Name: c.name, Summary: c.summary, Synopsis: d.synopsis(), Description: d.description(), Flags: d.fs}
	}
	for _, n := range commandNames() {
		c := commands[n]
		if c.subs == nil {
			p.Commands = append(p.Commands, doc(n, c))
			continue
		}
		pc := clidoc.Command{Name: n, Summary: c.summary}
		for _, s := range c.subs {
			pc.Subs = append(pc.Subs, doc(n+" "+s.name, s))
		}
		p.Commands = append(p.Commands, pc)
	}
	return p
}

const programDescription = `rig measures the round-trip latency of a request/response exchange between a sender and a responder, each packet timestamped by the NIC, the kernel and the program, optionally on a capture port as well.

Flags go before, between or after the arguments; "--" ends them. Where a command's output has several forms, --format chooses one (text, md, csv, json; --json is short for --format json). rig --version is rig version; rig help COMMAND is rig COMMAND -h.`
