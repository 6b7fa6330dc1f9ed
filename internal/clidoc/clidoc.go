// Package clidoc renders what a command-line program's flag definitions
// say — the flag list of its help, bash and zsh completion scripts, man
// pages — so that all of them come from one place and cannot disagree.
//
// A Program describes the commands; each runnable one carries the
// *flag.FlagSet it parses. A flag's usage may name its value's
// placeholder in backquotes, as the flag package reads it (flag.UnquoteUsage):
// "`DIR` to read" shows as "--root DIR  DIR to read". A flag.Value with a
// fixed set of values implements Chooser, and completion offers them.
package clidoc

import (
	"encoding"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Program is a command-line program with commands.
type Program struct {
	Name    string // "rig"
	Summary string
	Version string
	// Synopsis is what follows the name on the top page ("COMMAND [flags]").
	Synopsis string
	// Description is the top page's text: paragraphs separated by blank
	// lines; indented lines are kept as they are.
	Description string
	Commands    []Command // in the order help lists them
	ExitStatus  []ExitStatus
	// Environment and Files are the top page's ENVIRONMENT and FILES.
	Environment, Files []Entry
}

// Entry is a variable or a file and what it is.
type Entry struct{ Name, Meaning string }

// Command is a command: runnable (Flags set) or with subcommands (Subs).
type Command struct {
	Name    string
	Summary string // one line, lower case, no final period
	// Synopsis is what follows "PROGRAM NAME" in a usage line.
	Synopsis    string
	Description string
	Flags       *flag.FlagSet
	Subs        []Command
}

// ExitStatus is one row of the exit status table.
type ExitStatus struct {
	Code    int
	Meaning string
}

// Chooser is a flag.Value that takes one of a fixed set of values.
type Chooser interface{ Choices() []string }

// leaf is a runnable command and its path ("lab up").
type leaf struct {
	path string
	c    *Command
}

// leaves returns the runnable commands in order.
func (p *Program) leaves() []leaf {
	var l []leaf
	for i := range p.Commands {
		c := &p.Commands[i]
		if c.Subs == nil {
			l = append(l, leaf{c.Name, c})
		}
		for j := range c.Subs {
			l = append(l, leaf{c.Name + " " + c.Subs[j].Name, &c.Subs[j]})
		}
	}
	return l
}

func (p *Program) names() []string {
	var n []string
	for _, c := range p.Commands {
		n = append(n, c.Name)
	}
	return n
}

// Flag returns a flag as help shows it: -N for a one-letter name, else
// --NAME (Go's flag package takes either; one dash is the convention for
// one letter), the placeholder of its
// value (the word in backquotes in its usage, else the value's type; none
// for a switch), the usage without the backquotes, and the default worth
// saying ("" for the zero value, or when the usage says the default).
func Flag(f *flag.Flag) (name, placeholder, usage, def string) {
	placeholder, usage = flag.UnquoteUsage(f)
	if g, ok := f.Value.(flag.Getter); ok && placeholder == "value" {
		if _, text := g.Get().(encoding.TextUnmarshaler); text {
			placeholder = "string" // a typed value (flag.TextVar) is written as text
		}
	}
	return dashed(f.Name), placeholder, usage, flagDefault(f)
}

// dashed is a flag's name as rig writes it: -N, --NAME.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func flagDefault(f *flag.Flag) string {
	if strings.Contains(f.Usage, "default") || (IsBool(f) && f.DefValue == "false") {
		return ""
	}
	t := reflect.TypeOf(f.Value)
	if t.Kind() == reflect.Pointer {
		if zero, ok := reflect.New(t.Elem()).Interface().(flag.Value); ok && zero.String() == f.DefValue {
			return ""
		}
	}
	return f.DefValue
}

// IsBool reports whether f is a switch (takes no value).
func IsBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// PrintFlags prints fs's flags, sorted, as help shows them: "--name
// PLACEHOLDER" on a line, the usage wrapped below it.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, ph, usage, def := Flag(f)
		if ph != "" {
			name += " " + ph
		}
		if def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "  %s\n%s", name, Wrap(usage, "      ", "      ", 78))
	})
}

// Wrap breaks s into lines of at most width columns (words longer than a
// line stay whole), the first indented by first, the others by rest.
func Wrap(s, first, rest string, width int) string {
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
