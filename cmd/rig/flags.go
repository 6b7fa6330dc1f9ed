package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/clidoc"
	"github.com/rig-project/rig/internal/hostfs"
)

// newFlagSet returns the FlagSet of `rig NAME`; usage is what follows
// "rig NAME" in the synopsis (its lines up to the first blank one),
// then optionally a description. The flag package prints nothing itself: parseFlags prints
// the help on -h (stdout) and returns parse errors as usage errors, which
// rig prints once.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("rig "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rig %s %s\n\nflags:\n", name, strings.TrimRight(usage, "\n"))
		clidoc.PrintFlags(fs.Output(), fs)
	}
	return fs
}

// parseFlags parses args and maps errors to usage errors (exit 2). Flags
// may come before, between and after the positional arguments (`rig
// samples DIR --csv`), which fs.Args() then holds in order; "--" ends the
// flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := cli.Parse(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(os.Stdout)
				fs.Usage()
				return err
			}
			// The flag package names flags with one dash; rig writes two.
			msg := flagDash.Replace(err.Error())
			return cli.Usage(fmt.Errorf("%s ('%s -h' lists the flags)", msg, fs.Name()))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Leave exactly the positional arguments in fs.Args().
	return fs.Parse(append([]string{"--"}, pos...))
}

var flagDash = strings.NewReplacer("for flag -", "for flag --", "not defined: -", "not defined: --", "argument: -", "argument: --")

func isHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }

// noArgs refuses positional arguments for a command that takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q: it takes none", fs.Args())
	}
	return nil
}

// addHostRoot defines --host-root, the one flag for the directory that
// stands for / when rig reads or changes /proc and /sys, on the commands
// that touch them directly (env, check, nicctl, restore).
func addHostRoot(fs *flag.FlagSet) *hostfs.FS {
	r := &hostRoot{fs: hostfs.Default()}
	fs.Var(r, "host-root", "`DIR` that stands for / where rig reads or changes /proc and /sys: a fake host tree "+
		"for tests, or files copied from another machine (default $"+hostfs.EnvRoot+", else /); "+
		"rig restore must be given the root the change was made under")
	return &r.fs
}

type hostRoot struct{ fs hostfs.FS }

func (r *hostRoot) String() string {
	if r == nil {
		return ""
	}
	return r.fs.Root
}

func (r *hostRoot) Set(s string) error {
	if st, err := os.Stat(s); err != nil || !st.IsDir() {
		return fmt.Errorf("%q is not a directory", s)
	}
	r.fs = hostfs.FS{Root: s}
	return nil
}

// formatFlag is --format: which of its output forms a command prints —
// text (aligned plain text), md (Markdown), csv or json. The first form
// a command offers is its default. --json is short for --format json
// wherever json is a form (samples' --csv stays too).
type formatFlag struct {
	forms []string
	value string
	by    string // the flag that chose value; "" while it is the default
}

// addFormat defines --format on fs with the given forms, the first the
// default; note, when set, says what the forms are.
func addFormat(fs *flag.FlagSet, note string, forms ...string) *formatFlag {
	f := &formatFlag{forms: forms, value: forms[0]}
	usage := "output `FORMAT`: " + orList(forms)
	if note != "" {
		usage += " (" + note + ")"
	}
	fs.Var(f, "format", usage)
	if slices.Contains(forms, "json") {
		f.alias(fs, "json")
	}
	return f
}

// alias defines --NAME as short for --format FORM.
func (f *formatFlag) alias(fs *flag.FlagSet, form string) {
	fs.BoolFunc(form, "short for --format "+form, func(s string) error {
		if b, err := strconv.ParseBool(s); err != nil || !b {
			return err
		}
		return f.choose("--"+form, form)
	})
}

func (f *formatFlag) String() string     { return f.value }
func (f *formatFlag) Choices() []string  { return f.forms } // completion offers them
func (f *formatFlag) Set(s string) error { return f.choose("--format "+s, s) }

func (f *formatFlag) choose(by, form string) error {
	if !slices.Contains(f.forms, form) {
		return fmt.Errorf("want %s", orList(f.forms))
	}
	if f.by != "" && f.value != form {
		return fmt.Errorf("%s and %s exclude each other", f.by, by)
	}
	f.value, f.by = form, by
	return nil
}

// orList renders "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// flagDoc is a command's flag set as help, completion and man pages read
// it, with its usage.
type flagDoc struct {
	fs    *flag.FlagSet
	usage string
}

// synopsis is the usage up to its first blank line, on one line;
// description is the rest.
func (d flagDoc) synopsis() string {
	s, _, _ := strings.Cut(d.usage, "\n\n")
	return strings.Join(strings.Fields(s), " ")
}

func (d flagDoc) description() string {
	_, rest, _ := strings.Cut(d.usage, "\n\n")
	return strings.TrimSpace(rest)
}

// describe returns the flags of the runnable command l, defined on a
// FlagSet as rig defines them before it parses (flags), without running it.
func describe(l leaf) flagDoc {
	fs := newFlagSet(l.path, l.c.usage)
	l.c.flags(fs)
	return flagDoc{fs: fs, usage: l.c.usage}
}
