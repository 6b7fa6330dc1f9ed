package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/version"
)

func init() {
	register(&command{name: "man", summary: "write the man pages rig.1 and rig-COMMAND.1 to a directory", run: runMan})
}

const manUsage = `DIR

Writes rig.1 and one rig-COMMAND.1 per command to DIR (created when
missing), generated from the flags this rig defines. Read one with
'man -l DIR/rig-run.1', or install them: rig man /usr/local/share/man/man1`

func runMan(ctx context.Context, args []string) error {
	fs := newFlagSet("man", manUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the directory to write the pages to, got %q", fs.Args())
	}
	dir := fs.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pages := manPages()
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		if err := os.WriteFile(filepath.Join(dir, name), pages[name], 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d man pages to %s\n", len(pages), dir)
	return nil
}

// manPages renders every page: file name → troff.
func manPages() map[string][]byte {
	pages := map[string][]byte{"rig.1": manRig()}
	for _, n := range commandNames() {
		pages["rig-"+n+".1"] = manCommand(commands[n])
	}
	return pages
}

// manPage is a page under construction.
type manPage struct{ bytes.Buffer }

// header writes .TH and NAME. The date is left out so the same rig writes
// the same pages.
func (p *manPage) header(name, summary string) {
	fmt.Fprintf(p, ".TH %s 1 \"\" \"rig %s\" \"rig manual\"\n", roffText(strings.ToUpper(name)), roffText(version.Version))
	fmt.Fprintf(p, ".SH NAME\n%s \\- %s\n", roffText(name), roffText(summary))
}

func (p *manPage) section(title string) { fmt.Fprintf(p, ".SH %s\n", roffQuote(title)) }

// text writes paragraphs (blank-line separated) as filled text; lines
// indented in the source stay as they are.
func (p *manPage) text(s string) {
	for i, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if i > 0 {
			p.WriteString(".PP\n")
		}
		lines := strings.Split(para, "\n")
		verbatim := false
		for _, l := range lines {
			if strings.HasPrefix(l, " ") != verbatim {
				verbatim = !verbatim
				p.WriteString(map[bool]string{true: ".nf\n", false: ".fi\n"}[verbatim])
			}
			p.WriteString(roffLine(l) + "\n")
		}
		if verbatim {
			p.WriteString(".fi\n")
		}
	}
}

// sentence is a summary as the first sentence of a paragraph.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// synopsis writes "rig PATH usage".
func (p *manPage) synopsis(path, usage string) {
	fmt.Fprintf(p, ".B rig %s\n", roffText(path))
	p.WriteString(roffLine(strings.Join(strings.Fields(usage), " ")) + "\n")
}

// options writes a flag set as a tagged list.
func (p *manPage) options(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, placeholder, usage, def := flagHelp(f)
		p.WriteString(".TP\n")
		fmt.Fprintf(p, "\\fB%s\\fR", roffText(name))
		if placeholder != "" {
			fmt.Fprintf(p, " \\fI%s\\fR", roffText(placeholder))
		}
		p.WriteString("\n" + roffLine(usage))
		if def != "" {
			p.WriteString(" (default " + roffText(def) + ")")
		}
		p.WriteString("\n")
	})
}

func manRig() []byte {
	var p manPage
	p.header("rig", "hardware-timestamped round-trip latency test rig")
	p.section("SYNOPSIS")
	p.synopsis("", "COMMAND [SUBCOMMAND] [ARGUMENTS] [flags]")
	p.section("DESCRIPTION")
	p.text(`rig measures the round-trip latency of a request/response exchange between a sender and a responder, each packet timestamped by the NIC, the kernel and the program, optionally on a capture port as well.

Flags go before, between or after the arguments; "--" ends them. Where a command's output has several forms, --format chooses one (text, md, csv, json; --json is short for --format json). rig --version is rig version; rig help COMMAND is rig COMMAND -h.`)
	p.section("COMMANDS")
	for _, n := range commandNames() {
		c := commands[n]
		fmt.Fprintf(&p, ".TP\n.BR rig\\-%s (1)\n%s\n", roffText(n), roffLine(c.summary))
	}
	p.section("EXIT STATUS")
	for _, e := range exitStatus {
		fmt.Fprintf(&p, ".TP\n.B %d\n%s\n", e.code, roffLine(e.meaning))
	}
	p.section("SEE ALSO")
	var see []string
	for _, n := range commandNames() {
		see = append(see, ".BR rig\\-"+roffText(n)+" (1)")
	}
	p.WriteString(strings.Join(see, " ,\n") + "\n")
	return p.Bytes()
}

func manCommand(c *command) []byte {
	var p manPage
	p.header("rig-"+c.name, c.summary)
	p.section("SYNOPSIS")
	var subs []flagDoc
	if c.subs == nil {
		d := mustDescribe(leaf{c.name, c})
		p.synopsis(c.name, d.synopsis())
		subs = append(subs, d)
	}
	for _, s := range c.subs {
		d := mustDescribe(leaf{c.name + " " + s.name, s})
		p.synopsis(c.name+" "+s.name, d.synopsis())
		p.WriteString(".br\n")
		subs = append(subs, d)
	}
	p.section("DESCRIPTION")
	p.text(sentence(c.summary))
	if c.subs == nil {
		if desc := subs[0].description(); desc != "" {
			p.WriteString(".PP\n")
			p.text(desc)
		}
		p.section("OPTIONS")
		p.options(subs[0].fs)
	}
	for i, s := range c.subs {
		p.section("rig " + c.name + " " + s.name)
		p.text(sentence(s.summary))
		if desc := subs[i].description(); desc != "" {
			p.WriteString(".PP\n")
			p.text(desc)
		}
		p.WriteString(".PP\nOptions:\n")
		p.options(subs[i].fs)
	}
	p.section("EXIT STATUS")
	p.text("See rig(1).")
	p.section("SEE ALSO")
	p.WriteString(".BR rig (1)\n")
	return p.Bytes()
}

// roffText escapes s for troff: backslashes, hyphens (so that flags
// copied from the page are ASCII) and non-ASCII characters as \[uXXXX],
// which groff and mandoc render whatever the input encoding.
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 127:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffLine is roffText for a text line: one that starts with a control
// character (. or ') is protected with \&.
func roffLine(s string) string {
	t := roffText(s)
	if strings.HasPrefix(t, ".") || strings.HasPrefix(t, "'") {
		t = `\&` + t
	}
	return t
}

// roffQuote quotes a macro argument.
func roffQuote(s string) string { return `"` + strings.ReplaceAll(roffText(s), `"`, `\(dq`) + `"` }
