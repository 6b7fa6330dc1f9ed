package main

import (
	"fmt"
	"io"
	"strings"
)

func mainUsage(w io.Writer) {
	fmt.Fprintln(w, "rig: hardware-timestamped round-trip latency test rig")
	fmt.Fprintln(w, "\nusage: rig COMMAND [SUBCOMMAND] [ARGUMENTS] [flags]\n\ncommands:")
	for _, n := range commandNames() {
		c := commands[n]
		fmt.Fprintf(w, "  %-14s %s\n", n, c.summary)
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-14s %s\n", n+" "+s.name, s.summary)
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
		fmt.Fprint(w, wrap(fmt.Sprintf("%d %s", e.code, e.meaning), indent, indent+"  ", 78))
	}
}

// subUsage is the help of a command with subcommands.
func subUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: rig %s %s [flags]\n\n%s\n\n", c.name, strings.Join(c.subNames(), "|"), c.summary)
	for _, s := range c.subs {
		fmt.Fprintf(w, "  %-8s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "\n'rig %s SUBCOMMAND -h' prints the flags of one.\n", c.name)
}

// wrap breaks s into lines of at most width columns (words longer than a
// line stay whole), the first indented by first, the others by rest.
func wrap(s, first, rest string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
